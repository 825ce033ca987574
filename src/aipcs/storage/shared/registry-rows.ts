// Registry rows as both SQL backends store them, and their mapping to the
// port's domain rows: services, claims, identities and receipts. Integers
// arrive as bigint or number depending on the driver; manifests, intents and
// results are lossless JSON text. Pure functions; no driver and no SQL.

import { isJsonObject, losslessJson, type JsonValue } from '../../../common/json.js';
import { validateManifest } from '../../contract/manifest/validate-manifest.js';
import { parseStoredJson } from './record-codec.js';
import {
  TOMBSTONED_FINGERPRINT,
  type BackendName,
  type ClaimKind,
  type ClaimPhase,
  type ClaimRow,
  type DesignState,
  type IdentityRow,
  type IdentityState,
  type OperationalStatus,
  type ReceiptRow,
  type ServiceRow,
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

// ---------------------------------------------------------------------------
// Inspection: rows that decode (operations spec §3.2.5, "decodable rows")

const CLAIM_KINDS: ReadonlySet<string> = new Set<ClaimKind>(['seed', 'design', 'materialise', 'evolve', 'suspend', 'resume', 'archive', 'restore', 'export', 'import', 'purge']);
const SHA256_HEX = /^[0-9a-f]{64}$/;

function storedJson(text: string): JsonValue | undefined {
  try {
    return parseRegistryJson(text);
  } catch {
    return undefined;
  }
}

/**
 * Whether a stored service row decodes as this build writes it: a manifest
 * (when there is one) that is a valid manifest v2 of the row's schema
 * version, and a materialised service with its manifest and its store. The
 * table's own CHECKs hold the rest. A row edited by hand into `{}` would
 * otherwise be served as a service whose schema is empty.
 */
function serviceRecordDecodes(row: ServiceRecord): boolean {
  if ((row.manifest_json === null) !== (row.schema_version === null)) return false;
  if (row.manifest_json !== null) {
    const manifest = storedJson(row.manifest_json);
    if (manifest === undefined) return false;
    const validation = validateManifest(manifest, { sizeBound: false });
    if (!validation.ok || validation.manifest.schema_version !== Number(row.schema_version)) return false;
  }
  if (row.design_state === 'materialised') {
    return row.manifest_json !== null && row.materialised_at !== null && row.storage_backend !== null && row.storage_namespace !== null;
  }
  return row.materialised_at === null && row.storage_backend === null && row.storage_namespace === null;
}

/**
 * Whether a stored claim's own columns decode: a known kind, a fingerprint as
 * this build makes them (a SHA-256, or the mark a purge leaves) and an intent
 * that is a JSON object. Its result, none or an object, is RegistryRowsCheck's.
 */
function claimHeaderDecodes(row: ClaimRecord): boolean {
  if (!CLAIM_KINDS.has(row.operation_kind)) return false;
  if (!SHA256_HEX.test(row.fingerprint) && row.fingerprint !== TOMBSTONED_FINGERPRINT) return false;
  return isJsonObject(storedJson(row.intent_json));
}

/**
 * Decodes a registry's rows in one pass, services first, then claims, and
 * checks across rows what a claim's stored result says of its service
 * (the reference's `test_completion_current_service_cross_row_drift_is_incompatible`):
 * a result that names a service names the claim's own, and the name it
 * gives is the service's domain name, which never changes. Holds one name
 * per service, not the rows.
 */
export class RegistryRowsCheck {
  private readonly domainNames = new Map<string, string>();

  service(row: ServiceRecord): boolean {
    if (!serviceRecordDecodes(row)) return false;
    this.domainNames.set(row.service_id, row.domain_name);
    return true;
  }

  claim(row: ClaimRecord): boolean {
    if (!claimHeaderDecodes(row)) return false;
    if (row.result_json === null) return true;
    const result = storedJson(row.result_json);
    if (!isJsonObject(result)) return false;
    if (row.service_id === null) return true;
    if ('service_id' in result && result['service_id'] !== row.service_id) return false;
    const domainName = this.domainNames.get(row.service_id);
    return !('domain_name' in result) || domainName === undefined || result['domain_name'] === domainName;
  }
}
