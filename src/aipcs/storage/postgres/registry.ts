// The PostgreSQL registry in schema "aipcs_registry": services, the claim
// ledger (idempotency keys and durable lifecycle intent), identity
// reservations and tombstones, transfer receipts, its one-transaction
// migration under an advisory lock, and its inspection. Write units run READ
// COMMITTED and take transaction-scoped advisory locks on the keys they read
// (ops spec §3.3.3) before reading them. Service stores are not touched here.

import {
  StorageFailure,
  TOMBSTONED_FINGERPRINT,
  type IdentityRow,
  type MigrationState,
  type OperatorRegistryPort,
  type OperatorRegistryReader,
  type OperatorRegistryWriter,
  type ReceiptRow,
  type ClaimRow,
  type ServiceRow,
  type StorageLocator,
  type WriteFence,
} from '../../core/ports.js';
import { metaRevisionOf, schemaIsEmpty, schemaPresence, schemaSignature, shapeSignature } from './catalog.js';
import { unavailableState } from '../shared/migration-state.js';
import { REGISTRY_SHAPE } from './catalog-shapes.js';
import { type PgSession, type PostgresConnection } from './connection.js';
import { registryStatements, receiptParams } from '../shared/registry-statements.js';
import { numberedStatements, quoteIdentifier } from '../shared/statements.js';
import { PostgresRefusal } from './failure-reason.js';
import { readFenceRow, schemaOf } from './service-store.js';
import {
  CLAIM_COLUMN_NAMES,
  SERVICE_VALUE_COLUMNS,
  claimParams,
  serviceParams,
  RegistryRowsCheck,
  toClaimRow,
  toIdentityRow,
  toReceiptRow,
  toServiceRow,
  type ClaimRecord,
  type IdentityRecord,
  type ReceiptRecord,
  type ServiceRecord,
} from '../shared/registry-rows.js';

export const REGISTRY_SCHEMA = 'aipcs_registry';
export const REGISTRY_ADAPTER_ID = 'aipcs.postgresql.registry';
export const REGISTRY_REVISION = 1n;
export const REGISTRY_MIGRATION_ID = 'postgresql-registry-0001-foundation';

/** The registry DDL for a schema name (the real one, or the scratch schema of a signature test). */
export function registryDdl(schema: string): string[] {
  const s = quoteIdentifier(schema);
  return [
    `CREATE SCHEMA ${s} AUTHORIZATION CURRENT_USER`,
    `REVOKE ALL ON SCHEMA ${s} FROM PUBLIC`,
    `CREATE TABLE ${s}."aipcs_registry_meta" (
  "singleton" smallint NOT NULL PRIMARY KEY CHECK ("singleton" = 1),
  "adapter_id" text COLLATE "C" NOT NULL,
  "applied_revision" bigint NOT NULL,
  "dirty" boolean NOT NULL
)`,
    `CREATE TABLE ${s}."aipcs_registry_migration" (
  "revision" bigint NOT NULL PRIMARY KEY,
  "migration_id" text COLLATE "C" NOT NULL UNIQUE,
  "applied_at" bigint NOT NULL
)`,
    `CREATE TABLE ${s}."aipcs_registry_service" (
  "service_id" text COLLATE "C" NOT NULL PRIMARY KEY,
  "principal_id" text COLLATE "C" NOT NULL,
  "domain_name" text COLLATE "C" NOT NULL,
  "domain_class" text COLLATE "C" NOT NULL,
  "intent_description" text COLLATE "C" NOT NULL,
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL,
  "last_activity_at" bigint NOT NULL,
  "manifest_json" text COLLATE "C",
  "schema_version" integer CHECK ("schema_version" BETWEEN 1 AND 65),
  "design_state" text COLLATE "C" NOT NULL CHECK ("design_state" IN ('seeded', 'materialised')),
  "operational_status" text COLLATE "C" NOT NULL CHECK ("operational_status" IN ('active', 'suspended', 'archived')),
  "service_revision" bigint NOT NULL CHECK ("service_revision" >= 1),
  "materialised_at" bigint,
  "storage_backend" text COLLATE "C" CHECK ("storage_backend" IN ('sqlite', 'postgresql')),
  "storage_namespace" text COLLATE "C" UNIQUE,
  UNIQUE ("principal_id", "domain_name")
)`,
    `CREATE INDEX "aipcs_registry_service_list" ON ${s}."aipcs_registry_service" ("principal_id", "created_at", "service_id")`,
    `CREATE TABLE ${s}."aipcs_registry_claim" (
  "principal_id" text COLLATE "C" NOT NULL,
  "idempotency_key" text COLLATE "C" NOT NULL,
  "operation_kind" text COLLATE "C" NOT NULL,
  "fingerprint" text COLLATE "C" NOT NULL,
  "service_id" text COLLATE "C",
  "phase" text COLLATE "C" NOT NULL CHECK ("phase" IN ('prepared', 'completed', 'recovery_required')),
  "intent_json" text COLLATE "C" NOT NULL,
  "result_json" text COLLATE "C",
  "created_at" bigint NOT NULL,
  "updated_at" bigint NOT NULL,
  PRIMARY KEY ("principal_id", "idempotency_key")
)`,
    `CREATE UNIQUE INDEX "aipcs_registry_claim_active_service" ON ${s}."aipcs_registry_claim" ("service_id") WHERE "phase" IN ('prepared', 'recovery_required')`,
    // Purge strips every claim of a service.
    `CREATE INDEX "aipcs_registry_claim_service" ON ${s}."aipcs_registry_claim" ("principal_id", "service_id")`,
    // A service id that is not a live service: reserved by an import in
    // progress, or purged for good. A live identity is the service row itself.
    `CREATE TABLE ${s}."aipcs_registry_identity" (
  "service_id" text COLLATE "C" NOT NULL PRIMARY KEY,
  "principal_id" text COLLATE "C" NOT NULL,
  "identity_state" text COLLATE "C" NOT NULL CHECK ("identity_state" IN ('import_prepared', 'tombstoned')),
  "domain_name" text COLLATE "C",
  "idempotency_key" text COLLATE "C" NOT NULL,
  "lifecycle_at" bigint NOT NULL,
  CHECK (("identity_state" = 'import_prepared') = ("domain_name" IS NOT NULL))
)`,
    `CREATE UNIQUE INDEX "aipcs_registry_identity_domain" ON ${s}."aipcs_registry_identity" ("principal_id", "domain_name") WHERE "identity_state" = 'import_prepared'`,
    `CREATE TABLE ${s}."aipcs_registry_receipt" (
  "receipt_id" text COLLATE "C" NOT NULL PRIMARY KEY,
  "principal_id" text COLLATE "C" NOT NULL,
  "idempotency_key" text COLLATE "C" NOT NULL,
  "service_id" text COLLATE "C" NOT NULL,
  "receipt_kind" text COLLATE "C" NOT NULL CHECK ("receipt_kind" IN ('export', 'import')),
  "bundle_root_sha256" text COLLATE "C" NOT NULL,
  "export_format_version" integer NOT NULL CHECK ("export_format_version" = 1),
  "storage_backend" text COLLATE "C" NOT NULL CHECK ("storage_backend" IN ('sqlite', 'postgresql')),
  "service_revision" bigint NOT NULL CHECK ("service_revision" >= 1),
  "operational_status" text COLLATE "C" NOT NULL CHECK ("operational_status" IN ('active', 'suspended', 'archived')),
  "verification" text COLLATE "C" NOT NULL CHECK ("verification" IN ('unverified', 'verified')),
  "created_at" bigint NOT NULL
)`,
    `CREATE INDEX "aipcs_registry_receipt_service" ON ${s}."aipcs_registry_receipt" ("principal_id", "service_id")`,
    `REVOKE ALL ON ALL TABLES IN SCHEMA ${s} FROM PUBLIC`,
    `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${s} FROM PUBLIC`,
  ];
}

const R = quoteIdentifier(REGISTRY_SCHEMA);

export type RegistryStatus = 'uninitialised' | 'ready' | 'dirty' | 'incompatible';

export interface RegistryClassification {
  readonly status: RegistryStatus;
  /** The revision found (0 when there is nothing yet), when it is one we know. */
  readonly appliedRevision: bigint | null;
}

/** Classifies the registry schema against the DDL this build would create. */
export async function classifyRegistry(session: PgSession, expected: string): Promise<RegistryClassification> {
  const unknown = (status: RegistryStatus): RegistryClassification => ({ status, appliedRevision: null });
  const presence = await schemaPresence(session, REGISTRY_SCHEMA);
  if (presence === 'missing') return { status: 'uninitialised', appliedRevision: 0n };
  if (presence === 'untrusted') return unknown('incompatible');
  // An empty schema of that name was made by someone else (ours is created
  // with its tables in one transaction): never adopted, as in the reference.
  if (await schemaIsEmpty(session, REGISTRY_SCHEMA)) return { status: 'incompatible', appliedRevision: 0n };
  if ((await schemaSignature(session, REGISTRY_SCHEMA)) !== expected) {
    return { status: 'incompatible', appliedRevision: await metaRevisionOf(session, REGISTRY_SCHEMA, 'aipcs_registry_meta', REGISTRY_ADAPTER_ID, [REGISTRY_REVISION]) };
  }
  const meta = await session.first<{ adapter_id: string; applied_revision: bigint; dirty: boolean }>(
    `SELECT "adapter_id", "applied_revision", "dirty" FROM ${R}."aipcs_registry_meta" WHERE "singleton" = 1`,
  );
  if (!meta || meta.adapter_id !== REGISTRY_ADAPTER_ID) return unknown('incompatible');
  if (meta.dirty) return { status: 'dirty', appliedRevision: meta.applied_revision };
  const history = await session.rows<{ revision: bigint; migration_id: string }>(`SELECT "revision", "migration_id" FROM ${R}."aipcs_registry_migration" ORDER BY "revision"`);
  const exactHistory = history.length === 1 && history[0]?.revision === REGISTRY_REVISION && history[0].migration_id === REGISTRY_MIGRATION_ID;
  if (meta.applied_revision !== REGISTRY_REVISION) return unknown('incompatible');
  if (!exactHistory) return { status: 'incompatible', appliedRevision: REGISTRY_REVISION };
  if (!(await rowsDecode(session))) return { status: 'incompatible', appliedRevision: REGISTRY_REVISION };
  return { status: 'ready', appliedRevision: REGISTRY_REVISION };
}

/** Rows per page while inspection decodes the registry. */
const DECODE_PAGE = 500;

/** Every service and claim row decodes (operations spec §3.2.5: inspection fails closed on a row that does not), read in keyset pages. */
async function rowsDecode(session: PgSession): Promise<boolean> {
  const check = new RegistryRowsCheck();
  for (let after: string | null = null; ; ) {
    const rows: ServiceRecord[] = await session.rows<ServiceRecord>(
      `SELECT ${SERVICE_COLUMNS} FROM ${R}."aipcs_registry_service"${after === null ? '' : ' WHERE "service_id" > $1'} ORDER BY "service_id" LIMIT ${DECODE_PAGE}`,
      after === null ? [] : [after],
    );
    if (!rows.every((row) => check.service(row))) return false;
    if (rows.length < DECODE_PAGE) break;
    after = rows[rows.length - 1]?.service_id ?? null;
  }
  for (let after: [string, string] | null = null; ; ) {
    const rows: ClaimRecord[] = await session.rows<ClaimRecord>(
      `SELECT ${CLAIM_COLUMNS} FROM ${R}."aipcs_registry_claim"${after === null ? '' : ' WHERE ("principal_id", "idempotency_key") > ($1, $2)'} ORDER BY "principal_id", "idempotency_key" LIMIT ${DECODE_PAGE}`,
      after ?? [],
    );
    if (!rows.every((row) => check.claim(row))) return false;
    if (rows.length < DECODE_PAGE) break;
    const last = rows[rows.length - 1];
    after = last === undefined ? null : [last.principal_id, last.idempotency_key];
  }
  return true;
}

/** The signature of the schema registryDdl builds. */
export const EXPECTED_REGISTRY_SIGNATURE = shapeSignature(REGISTRY_SHAPE);

/**
 * Brings the registry to the current revision and returns it: a fresh
 * database gets the whole schema in one transaction; concurrent starters
 * serialise on the migration lock and the later ones find it ready. Anything
 * else (foreign, dirty, half-built) stays untouched and is unavailable.
 */
export async function migratePostgresRegistry(connection: PostgresConnection, nowMicros: () => bigint): Promise<PostgresRegistry> {
  const expected = EXPECTED_REGISTRY_SIGNATURE;
  await connection.transaction('write', async (session) => {
    await session.run(`SELECT pg_advisory_xact_lock(hashtext('aipcs.registry'), hashtext('migration'))`);
    const { status } = await classifyRegistry(session, expected);
    if (status === 'ready') return;
    if (status !== 'uninitialised') throw new StorageFailure('unavailable', { cause: new PostgresRefusal(`the registry schema is ${status}: serve neither adopts nor repairs it (aipcs status shows it)`) });
    for (const ddl of registryDdl(REGISTRY_SCHEMA)) await session.run(ddl);
    await session.run(`INSERT INTO ${R}."aipcs_registry_meta" ("singleton", "adapter_id", "applied_revision", "dirty") VALUES (1, $1, $2, false)`, [REGISTRY_ADAPTER_ID, REGISTRY_REVISION]);
    await session.run(`INSERT INTO ${R}."aipcs_registry_migration" ("revision", "migration_id", "applied_at") VALUES ($1, $2, $3)`, [REGISTRY_REVISION, REGISTRY_MIGRATION_ID, nowMicros()]);
    if ((await classifyRegistry(session, expected)).status !== 'ready') throw new StorageFailure('unavailable');
  });
  return new PostgresRegistry(connection);
}

/**
 * The admin commands' view: classifies without creating or migrating
 * anything and returns the registry open only when it is ready.
 */
export async function inspectPostgresRegistry(connection: PostgresConnection): Promise<{ state: MigrationState; registry: PostgresRegistry | null }> {
  try {
    const { status, appliedRevision } = await connection.transaction('read', (session) => classifyRegistry(session, EXPECTED_REGISTRY_SIGNATURE));
    const state: MigrationState = { status, appliedRevision, targetRevision: REGISTRY_REVISION, reason: null };
    return { state, registry: status === 'ready' ? new PostgresRegistry(connection) : null };
  } catch (error) {
    return { state: unavailableState(error), registry: null };
  }
}

const SERVICE_COLUMNS = ['service_id', ...SERVICE_VALUE_COLUMNS].map(quoteIdentifier).join(', ');
const CLAIM_COLUMNS = CLAIM_COLUMN_NAMES.map(quoteIdentifier).join(', ');
/** The shared registry statements in this database's registry schema, numbered; and the key lock only PostgreSQL takes. */
const SQL = {
  ...numberedStatements(registryStatements((table) => `${R}.${quoteIdentifier(table)}`)),
  lock: `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`,
};

/**
 * Lock scopes of ops spec §3.3.3. A writer takes the lock of a key before it
 * first reads it, so that a concurrent writer of the same key waits and then
 * sees the committed outcome. Core reads claim, then identity, then service;
 * an operator flow that meets a cycle anyway gets a deadlock, which is busy.
 * `identity` is keyed by (principal, domain) or ('service', service id).
 */
type LockScope = 'claim' | 'identity' | 'service';

class PostgresRegistryTx implements OperatorRegistryWriter {
  private readonly held = new Set<string>();

  constructor(
    private readonly session: PgSession,
    private readonly writer: boolean,
  ) {}

  private async lock(scope: LockScope, a: string, b: string): Promise<void> {
    if (!this.writer) return;
    const key = `${scope}\u001f${a}\u001f${b}`;
    if (this.held.has(key)) return;
    await this.session.run(SQL.lock, [`aipcs.registry.${scope}.${a}`, b]);
    this.held.add(key);
  }

  async getService(principalId: string, serviceId: string): Promise<ServiceRow | undefined> {
    await this.lock('service', principalId, serviceId);
    const row = await this.session.first<ServiceRecord>(SQL.getService, [principalId, serviceId]);
    return row && toServiceRow(row);
  }

  async findServiceByDomain(principalId: string, domainName: string): Promise<ServiceRow | undefined> {
    await this.lock('identity', principalId, domainName);
    const row = await this.session.first<ServiceRecord>(SQL.findByDomain, [principalId, domainName]);
    return row && toServiceRow(row);
  }

  async listServices(principalId: string, limit: number): Promise<ServiceRow[]> {
    return (await this.session.rows<ServiceRecord>(SQL.list, [principalId, limit])).map(toServiceRow);
  }

  async getClaim(principalId: string, idempotencyKey: string): Promise<ClaimRow | undefined> {
    await this.lock('claim', principalId, idempotencyKey);
    const row = await this.session.first<ClaimRecord>(SQL.getClaim, [principalId, idempotencyKey]);
    return row && toClaimRow(row);
  }

  async getActiveClaim(principalId: string, serviceId: string): Promise<ClaimRow | undefined> {
    await this.lock('service', principalId, serviceId);
    const row = await this.session.first<ClaimRecord>(SQL.activeClaim, [serviceId, principalId]);
    return row && toClaimRow(row);
  }

  async insertService(row: ServiceRow): Promise<void> {
    await this.lock('identity', row.principalId, row.domainName);
    await this.lock('service', row.principalId, row.serviceId);
    await this.session.run(SQL.insertService, [row.serviceId, ...serviceParams(row)]);
  }

  async updateService(row: ServiceRow, expectedRevision: bigint): Promise<boolean> {
    await this.lock('service', row.principalId, row.serviceId);
    return (await this.session.run(SQL.updateService, [...serviceParams(row), row.serviceId, expectedRevision])) === 1;
  }

  async insertClaim(row: ClaimRow): Promise<void> {
    await this.lock('claim', row.principalId, row.idempotencyKey);
    await this.session.run(SQL.insertClaim, claimParams(row));
  }

  async updateClaim(row: ClaimRow): Promise<void> {
    await this.lock('claim', row.principalId, row.idempotencyKey);
    await this.session.run(SQL.updateClaim, [...claimParams(row).slice(2), row.principalId, row.idempotencyKey]);
  }

  // -------------------------------------------------------------------------
  // Operator administration

  async getIdentity(serviceId: string): Promise<IdentityRow | undefined> {
    await this.lock('identity', 'service', serviceId);
    const row = await this.session.first<IdentityRecord>(SQL.getIdentity, [serviceId]);
    return row && toIdentityRow(row);
  }

  async serviceIdInUse(serviceId: string): Promise<boolean> {
    await this.lock('identity', 'service', serviceId);
    return (await this.session.first(SQL.serviceIdInUse, [serviceId])) !== undefined;
  }

  async domainReservation(principalId: string, domainName: string): Promise<'pending' | 'frozen' | undefined> {
    await this.lock('identity', principalId, domainName);
    const row = await this.session.first<{ phase: string | null }>(SQL.domainReservation, [principalId, domainName]);
    return row === undefined ? undefined : row.phase === 'recovery_required' ? 'frozen' : 'pending';
  }

  async getReceipt(receiptId: string): Promise<ReceiptRow | undefined> {
    const row = await this.session.first<ReceiptRecord>(SQL.getReceipt, [receiptId]);
    return row && toReceiptRow(row);
  }

  async putIdentity(row: IdentityRow): Promise<void> {
    await this.lock('identity', 'service', row.serviceId);
    if (row.domainName !== null) await this.lock('identity', row.principalId, row.domainName);
    await this.session.run(SQL.putIdentity, [row.serviceId, row.principalId, row.state, row.domainName, row.idempotencyKey, row.lifecycleAt]);
  }

  async deleteIdentity(serviceId: string): Promise<void> {
    await this.lock('identity', 'service', serviceId);
    await this.session.run(SQL.deleteIdentity, [serviceId]);
  }

  async insertReceipt(row: ReceiptRow): Promise<void> {
    await this.session.run(SQL.insertReceipt, receiptParams(row));
  }

  async deleteReceipts(principalId: string, serviceId: string): Promise<void> {
    await this.lock('service', principalId, serviceId);
    await this.session.run(SQL.deleteReceipts, [principalId, serviceId]);
  }

  async deleteService(principalId: string, serviceId: string): Promise<boolean> {
    await this.lock('service', principalId, serviceId);
    return (await this.session.run(SQL.deleteService, [principalId, serviceId])) === 1;
  }

  async tombstoneClaims(principalId: string, serviceId: string, keepKey: string, now: bigint): Promise<void> {
    await this.lock('service', principalId, serviceId);
    await this.session.run(SQL.tombstoneClaims, [TOMBSTONED_FINGERPRINT, now, principalId, serviceId, keepKey]);
  }

  async deleteClaim(principalId: string, idempotencyKey: string): Promise<void> {
    await this.lock('claim', principalId, idempotencyKey);
    await this.session.run(SQL.deleteClaim, [principalId, idempotencyKey]);
  }
}

export class PostgresRegistry implements OperatorRegistryPort {
  constructor(private readonly connection: PostgresConnection) {}

  read<T>(work: (tx: OperatorRegistryReader) => Promise<T>): Promise<T> {
    return this.connection.transaction('read', (session) => work(new PostgresRegistryTx(session, false)));
  }

  /** The stores' schemas are in the registry's database: their fences are in the unit's snapshot. */
  readWithFence<T>(work: (tx: OperatorRegistryReader, fenceOf: (locator: StorageLocator) => Promise<WriteFence>) => Promise<T>): Promise<T> {
    return this.connection.transaction('read', (session) => work(new PostgresRegistryTx(session, false), (locator) => readFenceRow(session, schemaOf(locator), false)));
  }

  write<T>(work: (tx: OperatorRegistryWriter) => Promise<T>): Promise<T> {
    return this.connection.transaction('write', (session) => work(new PostgresRegistryTx(session, true)));
  }

  /** The pool is shared with the service stores; closing it is the storage's job. */
  async close(): Promise<void> {}
}
