// The registry's statements, written once for both backends in the form of
// shared/statements.ts (`?` placeholders, quoted identifiers, each table named
// by the adapter; PostgreSQL numbers the placeholders). The parameter order
// of each statement is documented beside it and is the same on both. What
// only one backend has (PostgreSQL's advisory key locks, SQLite's schema
// bootstrap) stays in its adapter. Pure: no driver, no I/O.

import type { ReceiptRow } from '../../core/ports.js';
import { CLAIM_COLUMN_NAMES, SERVICE_VALUE_COLUMNS } from './registry-rows.js';
import { quoteIdentifier, type TableName } from './statements.js';

const RECEIPT_COLUMN_NAMES = [
  'receipt_id',
  'principal_id',
  'idempotency_key',
  'service_id',
  'receipt_kind',
  'bundle_root_sha256',
  'export_format_version',
  'storage_backend',
  'service_revision',
  'operational_status',
  'verification',
  'created_at',
] as const;
const IDENTITY_COLUMN_NAMES = ['service_id', 'principal_id', 'identity_state', 'domain_name', 'idempotency_key', 'lifecycle_at'] as const;

const list = (names: readonly string[]): string => names.map(quoteIdentifier).join(', ');
const marks = (count: number): string => new Array<string>(count).fill('?').join(', ');
const assignments = (names: readonly string[]): string => names.map((name) => `${quoteIdentifier(name)} = ?`).join(', ');

/** A receipt's parameters in the order of the receipt columns (insertReceipt). */
export function receiptParams(row: ReceiptRow): unknown[] {
  return [
    row.receiptId,
    row.principalId,
    row.idempotencyKey,
    row.serviceId,
    row.kind,
    row.bundleRootSha256,
    BigInt(row.exportFormatVersion),
    row.backend,
    row.serviceRevision,
    row.operationalStatus,
    row.verification,
    row.createdAt,
  ];
}

/** The registry statements over the tables `table` names. */
export function registryStatements(table: TableName) {
  const services = table('aipcs_registry_service');
  const claims = table('aipcs_registry_claim');
  const identities = table('aipcs_registry_identity');
  const receipts = table('aipcs_registry_receipt');
  const serviceColumns = list(['service_id', ...SERVICE_VALUE_COLUMNS]);
  const claimColumns = list(CLAIM_COLUMN_NAMES);
  const receiptColumns = list(RECEIPT_COLUMN_NAMES);
  return {
    /** principal, service id */
    getService: `SELECT ${serviceColumns} FROM ${services} WHERE "principal_id" = ? AND "service_id" = ?`,
    /** principal, domain name */
    findByDomain: `SELECT ${serviceColumns} FROM ${services} WHERE "principal_id" = ? AND "domain_name" = ?`,
    /** principal, limit */
    list: `SELECT ${serviceColumns} FROM ${services} WHERE "principal_id" = ? ORDER BY "created_at", "service_id" LIMIT ?`,
    /** principal, idempotency key */
    getClaim: `SELECT ${claimColumns} FROM ${claims} WHERE "principal_id" = ? AND "idempotency_key" = ?`,
    /** service id, principal */
    activeClaim: `SELECT ${claimColumns} FROM ${claims} WHERE "service_id" = ? AND "principal_id" = ? AND "phase" IN ('prepared', 'recovery_required')`,
    /** service id, then serviceParams */
    insertService: `INSERT INTO ${services} (${serviceColumns}) VALUES (${marks(1 + SERVICE_VALUE_COLUMNS.length)})`,
    /** serviceParams, then service id and the expected revision */
    updateService: `UPDATE ${services} SET ${assignments(SERVICE_VALUE_COLUMNS)} WHERE "service_id" = ? AND "service_revision" = ?`,
    /** claimParams */
    insertClaim: `INSERT INTO ${claims} (${claimColumns}) VALUES (${marks(CLAIM_COLUMN_NAMES.length)})`,
    /** claimParams after its principal and key, then principal, idempotency key */
    updateClaim: `UPDATE ${claims} SET ${assignments(CLAIM_COLUMN_NAMES.slice(2))} WHERE "principal_id" = ? AND "idempotency_key" = ?`,
    /** service id */
    getIdentity: `SELECT ${list(IDENTITY_COLUMN_NAMES)} FROM ${identities} WHERE "service_id" = ?`,
    /** service id */
    serviceIdInUse: `SELECT 1 FROM ${services} WHERE "service_id" = ?`,
    /** principal, domain name */
    domainReservation: `SELECT c."phase" FROM ${identities} AS i
      LEFT JOIN ${claims} AS c ON c."principal_id" = i."principal_id" AND c."idempotency_key" = i."idempotency_key"
      WHERE i."principal_id" = ? AND i."domain_name" = ? AND i."identity_state" = 'import_prepared'`,
    /** receipt id */
    getReceipt: `SELECT ${receiptColumns} FROM ${receipts} WHERE "receipt_id" = ?`,
    /** service id, principal, state, domain name, idempotency key, lifecycle time */
    putIdentity: `INSERT INTO ${identities} (${list(IDENTITY_COLUMN_NAMES)}) VALUES (${marks(IDENTITY_COLUMN_NAMES.length)})
      ON CONFLICT ("service_id") DO UPDATE SET ${IDENTITY_COLUMN_NAMES.slice(1).map((name) => `${quoteIdentifier(name)} = excluded.${quoteIdentifier(name)}`).join(', ')}`,
    /** service id */
    deleteIdentity: `DELETE FROM ${identities} WHERE "service_id" = ?`,
    /** receiptParams */
    insertReceipt: `INSERT INTO ${receipts} (${receiptColumns}) VALUES (${marks(RECEIPT_COLUMN_NAMES.length)})`,
    /** principal, service id */
    deleteReceipts: `DELETE FROM ${receipts} WHERE "principal_id" = ? AND "service_id" = ?`,
    /** principal, service id */
    deleteService: `DELETE FROM ${services} WHERE "principal_id" = ? AND "service_id" = ?`,
    /** tombstone fingerprint, time, principal, service id, the claim key to keep */
    tombstoneClaims: `UPDATE ${claims} SET "phase" = 'completed', "fingerprint" = ?, "intent_json" = '{}', "result_json" = NULL, "updated_at" = ?
      WHERE "principal_id" = ? AND "service_id" = ? AND "idempotency_key" <> ?`,
    /** principal, idempotency key */
    deleteClaim: `DELETE FROM ${claims} WHERE "principal_id" = ? AND "idempotency_key" = ?`,
  };
}
