// Registry rows as both SQL backends store them, and their mapping to the
// port's domain rows: services, claims, identities and receipts. Integers
// arrive as bigint or number depending on the driver; manifests, intents and
// results are lossless JSON text. Pure functions; no driver and no SQL.

import { losslessJson, type JsonValue } from '../../../common/json.js';
import { parseStoredJson } from './record-codec.js';
import type {
  BackendName,
  ClaimKind,
  ClaimPhase,
  ClaimRow,
  DesignState,
  IdentityRow,
  IdentityState,
  OperationalStatus,
  ReceiptRow,
  ServiceRow,
} from '../../core/ports.js';

type DbInteger = bigint | number;

export interface ServiceRecord {
  service_id: string;
  principal_id: string;
  domain_name: string;
  domain_class: string;
  intent_description: string;
  created_at: bigint;
  updated_at: bigint;
  last_activity_at: bigint;
  manifest_json: string | null;
  schema_version: DbInteger | null;
  design_state: string;
  operational_status: string;
  service_revision: bigint;
  materialised_at: bigint | null;
  storage_backend: string | null;
  storage_namespace: string | null;
}

export interface ClaimRecord {
  principal_id: string;
  idempotency_key: string;
  operation_kind: string;
  fingerprint: string;
  service_id: string | null;
  phase: string;
  intent_json: string;
  result_json: string | null;
  created_at: bigint;
  updated_at: bigint;
}

export interface IdentityRecord {
  service_id: string;
  principal_id: string;
  identity_state: string;
  domain_name: string | null;
  idempotency_key: string;
  lifecycle_at: bigint;
}

export interface ReceiptRecord {
  receipt_id: string;
  principal_id: string;
  idempotency_key: string;
  service_id: string;
  receipt_kind: string;
  bundle_root_sha256: string;
  export_format_version: DbInteger;
  storage_backend: string;
  service_revision: bigint;
  operational_status: string;
  verification: string;
  created_at: bigint;
}

/** Column order of the service parameters below (after service_id). */
export const SERVICE_VALUE_COLUMNS = [
  'principal_id',
  'domain_name',
  'domain_class',
  'intent_description',
  'created_at',
  'updated_at',
  'last_activity_at',
  'manifest_json',
  'schema_version',
  'design_state',
  'operational_status',
  'service_revision',
  'materialised_at',
  'storage_backend',
  'storage_namespace',
] as const;

export const CLAIM_COLUMN_NAMES = ['principal_id', 'idempotency_key', 'operation_kind', 'fingerprint', 'service_id', 'phase', 'intent_json', 'result_json', 'created_at', 'updated_at'] as const;

const STORED_JSON_LIMITS = { maxBytes: 16 * 1024 * 1024, maxDepth: 256 };

/** Manifests, intents and result snapshots are larger than record field sets. */
const parseRegistryJson = (text: string): JsonValue => parseStoredJson(text, STORED_JSON_LIMITS);

export function toServiceRow(row: ServiceRecord): ServiceRow {
  return {
    serviceId: row.service_id,
    principalId: row.principal_id,
    domainName: row.domain_name,
    domainClass: row.domain_class,
    intentDescription: row.intent_description,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastActivityAt: row.last_activity_at,
    manifest: row.manifest_json === null ? null : parseRegistryJson(row.manifest_json),
    schemaVersion: row.schema_version === null ? null : Number(row.schema_version),
    designState: row.design_state as DesignState,
    operationalStatus: row.operational_status as OperationalStatus,
    serviceRevision: row.service_revision,
    materialisedAt: row.materialised_at,
    storage:
      row.storage_backend === null || row.storage_namespace === null
        ? null
        : { backend: row.storage_backend as BackendName, namespace: row.storage_namespace },
  };
}

/** Parameters in SERVICE_VALUE_COLUMNS order. */
export function serviceParams(row: ServiceRow): unknown[] {
  return [
    row.principalId,
    row.domainName,
    row.domainClass,
    row.intentDescription,
    row.createdAt,
    row.updatedAt,
    row.lastActivityAt,
    row.manifest === null ? null : losslessJson(row.manifest),
    row.schemaVersion === null ? null : BigInt(row.schemaVersion),
    row.designState,
    row.operationalStatus,
    row.serviceRevision,
    row.materialisedAt,
    row.storage?.backend ?? null,
    row.storage?.namespace ?? null,
  ];
}

export function toClaimRow(row: ClaimRecord): ClaimRow {
  return {
    principalId: row.principal_id,
    idempotencyKey: row.idempotency_key,
    kind: row.operation_kind as ClaimKind,
    fingerprint: row.fingerprint,
    serviceId: row.service_id,
    phase: row.phase as ClaimPhase,
    intent: parseRegistryJson(row.intent_json),
    result: row.result_json === null ? null : parseRegistryJson(row.result_json),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Parameters in CLAIM_COLUMN_NAMES order. */
export function claimParams(row: ClaimRow): unknown[] {
  return [
    row.principalId,
    row.idempotencyKey,
    row.kind,
    row.fingerprint,
    row.serviceId,
    row.phase,
    losslessJson(row.intent),
    row.result === null ? null : losslessJson(row.result),
    row.createdAt,
    row.updatedAt,
  ];
}

export function toIdentityRow(row: IdentityRecord): IdentityRow {
  return {
    serviceId: row.service_id,
    principalId: row.principal_id,
    state: row.identity_state as IdentityState,
    domainName: row.domain_name,
    idempotencyKey: row.idempotency_key,
    lifecycleAt: row.lifecycle_at,
  };
}

export function toReceiptRow(row: ReceiptRecord): ReceiptRow {
  return {
    receiptId: row.receipt_id,
    principalId: row.principal_id,
    idempotencyKey: row.idempotency_key,
    serviceId: row.service_id,
    kind: row.receipt_kind as ReceiptRow['kind'],
    bundleRootSha256: row.bundle_root_sha256,
    exportFormatVersion: Number(row.export_format_version) as ReceiptRow['exportFormatVersion'],
    backend: row.storage_backend as BackendName,
    serviceRevision: row.service_revision,
    operationalStatus: row.operational_status as OperationalStatus,
    verification: row.verification as ReceiptRow['verification'],
    createdAt: row.created_at,
  };
}
