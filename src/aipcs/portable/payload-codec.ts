// Payloads of the six line kinds (operations spec §5.4): logical content to
// wire objects for the writer, and wire objects back to logical content for
// the reader, with closed key sets, canonical UUIDs, Timestamp27 times and
// each field's domain. Cross-line rules live in content-rules.ts.

import { isJsonObject, type JsonObject, type JsonValue } from '../../common/json.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import { IDENTIFIER } from '../contract/manifest/types.js';
import { manifestToJson, validateManifest } from '../contract/manifest/validate-manifest.js';
import { isCanonicalUuid, trimContractString } from '../contract/schema-check.js';
import type {
  BranchRole,
  BranchStatus,
  BundleBranch,
  BundleHeader,
  BundleHistoryEvent,
  BundleMembership,
  BundleRecord,
  BundleService,
  DesignState,
  FieldSet,
  HistoryKind,
  Micros,
  OperationalStatus,
  SourceBackend,
} from './content.js';
import { encodeCanonical } from './canonical-json.js';
import { BundleInvalidError, type BundleDefect } from './errors.js';
import { decodeFieldSet, type EntityFieldRules } from './field-rules.js';
import { CANONICALIZATION_PROFILE, EXPORT_FORMAT_VERSION, INT64_MAX, LIMIT_PROFILE, PRODUCER_PACKAGE } from './format.js';
import { formatTimestamp27, parseTimestamp27 } from './timestamp27.js';
import { codePointLength } from '../../common/code-points.js';

const VERSION_TEXT = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;
const SLUG = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
const BRANCH_TYPE = /^[a-z][a-z0-9_-]{0,79}$/;
const MAX_SCHEMA_VERSION = 65n;

const HISTORY_KINDS: ReadonlySet<string> = new Set<HistoryKind>([
  'create',
  'update',
  'delete',
  'primary_assign',
  'primary_move',
  'primary_unassign',
  'related_assign',
  'related_unassign',
]);
const BRANCH_STATUSES: ReadonlySet<string> = new Set<BranchStatus>(['active', 'archived', 'superseded']);
const BRANCH_ROLES: ReadonlySet<string> = new Set<BranchRole>(['primary', 'related']);
const OPERATIONAL_STATUSES: ReadonlySet<string> = new Set<OperationalStatus>(['active', 'suspended', 'archived']);

// ---------------------------------------------------------------------------
// Key sets (sorted, as canonical JSON writes them)

export const HEADER_KEYS = [
  'canonicalization',
  'created_at',
  'export_format_version',
  'limit_profile',
  'producer_mcp_contract',
  'producer_package',
  'producer_package_version',
  'source_backend',
] as const;
export const SERVICE_KEYS = [
  'created_at',
  'design_state',
  'domain_class',
  'domain_name',
  'export_fence_generation',
  'export_fence_state',
  'intent_description',
  'last_activity_at',
  'manifest',
  'materialised_at',
  'operational_status',
  'schema_version',
  'service_id',
  'service_revision',
  'updated_at',
] as const;
export const RECORD_KEYS = ['created_at', 'created_via', 'entity_name', 'fields', 'record_id', 'record_version', 'updated_at'] as const;
export const HISTORY_KEYS = ['after', 'before', 'entity_name', 'kind', 'occurred_at', 'record_id', 'record_version'] as const;
export const BRANCH_KEYS = [
  'branch_id',
  'branch_revision',
  'branch_type',
  'created_at',
  'intent',
  'parent_branch_id',
  'retrieval_summary',
  'slug',
  'status',
  'title',
  'updated_at',
] as const;
export const MEMBERSHIP_KEYS = ['branch_id', 'entity_name', 'record_id', 'role'] as const;

/** Whether the object has exactly these own keys (parsed objects never repeat one). */
export function hasExactKeys(value: JsonObject, keys: readonly string[]): boolean {
  const own = Object.keys(value);
  return own.length === keys.length && keys.every((key) => Object.hasOwn(value, key));
}

// ---------------------------------------------------------------------------
// Encoding (writer)

/** The Timestamp27 text of a time the writer encodes; unrepresentable_value outside it. */
export function encodeTime(micros: Micros): string {
  const text = typeof micros === 'bigint' ? formatTimestamp27(micros) : undefined;
  if (text === undefined) throw new BundleInvalidError('unrepresentable_value');
  return text;
}

const time = encodeTime;

function fieldsJson(fields: FieldSet): JsonObject {
  const out: JsonObject = {};
  for (const name of Object.keys(fields)) {
    const raw = fields[name] ?? null;
    const value: JsonValue = Array.isArray(raw) ? [...(raw as string[])] : (raw as JsonValue);
    // A plain assignment to `__proto__` would set the prototype instead.
    if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
    else out[name] = value;
  }
  return out;
}

export function encodeHeader(header: BundleHeader): JsonObject {
  return {
    canonicalization: CANONICALIZATION_PROFILE,
    created_at: time(header.createdAt),
    export_format_version: BigInt(EXPORT_FORMAT_VERSION),
    limit_profile: LIMIT_PROFILE,
    producer_mcp_contract: header.producerMcpContract,
    producer_package: PRODUCER_PACKAGE,
    producer_package_version: header.producerPackageVersion,
    source_backend: header.sourceBackend,
  };
}

export function encodeService(service: BundleService): JsonObject {
  return {
    created_at: time(service.createdAt),
    design_state: service.designState,
    domain_class: service.domainClass,
    domain_name: service.domainName,
    export_fence_generation: service.exportFence === null ? null : service.exportFence.generation,
    export_fence_state: service.exportFence === null ? null : service.exportFence.state,
    intent_description: service.intentDescription,
    last_activity_at: time(service.lastActivityAt),
    manifest: service.manifest,
    materialised_at: service.materialisedAt === null ? null : time(service.materialisedAt),
    operational_status: service.operationalStatus,
    schema_version: service.schemaVersion === null ? null : BigInt(service.schemaVersion),
    service_id: service.serviceId,
    service_revision: service.serviceRevision,
    updated_at: time(service.updatedAt),
  };
}

export function encodeRecord(record: BundleRecord): JsonObject {
  return {
    created_at: time(record.createdAt),
    created_via: record.createdVia,
    entity_name: record.entityName,
    fields: fieldsJson(record.fields),
    record_id: record.recordId,
    record_version: record.recordVersion,
    updated_at: time(record.updatedAt),
  };
}

export function encodeHistory(event: BundleHistoryEvent): JsonObject {
  return {
    after: event.after === null ? null : fieldsJson(event.after),
    before: event.before === null ? null : fieldsJson(event.before),
    entity_name: event.entityName,
    kind: event.kind,
    occurred_at: time(event.occurredAt),
    record_id: event.recordId,
    record_version: event.recordVersion,
  };
}

export function encodeBranch(branch: BundleBranch): JsonObject {
  return {
    branch_id: branch.branchId,
    branch_revision: branch.branchRevision,
    branch_type: branch.branchType,
    created_at: time(branch.createdAt),
    intent: branch.intent,
    parent_branch_id: branch.parentBranchId,
    retrieval_summary: branch.retrievalSummary,
    slug: branch.slug,
    status: branch.status,
    title: branch.title,
    updated_at: time(branch.updatedAt),
  };
}

export function encodeMembership(membership: BundleMembership): JsonObject {
  return {
    branch_id: membership.branchId,
    entity_name: membership.entityName,
    record_id: membership.recordId,
    role: membership.role,
  };
}

// ---------------------------------------------------------------------------
// Decoding (reader). Each decoder throws its kind's defect on any violation.

class Fields {
  constructor(
    private readonly payload: JsonObject,
    private readonly defect: BundleDefect,
  ) {}

  fail(): never {
    throw new BundleInvalidError(this.defect);
  }

  raw(key: string): JsonValue {
    return this.payload[key] as JsonValue;
  }

  string(key: string): string {
    const value = this.payload[key];
    return typeof value === 'string' ? value : this.fail();
  }

  optionalString(key: string): string | null {
    return this.payload[key] === null ? null : this.string(key);
  }

  /** 1..max code points, no NUL (the reference's plain text rule). */
  text(key: string, max: number): string {
    const value = this.string(key);
    return value.length > 0 && !value.includes('\u0000') && codePointLength(value) <= max ? value : this.fail();
  }

  optionalText(key: string, max: number): string | null {
    return this.payload[key] === null ? null : this.text(key, max);
  }

  /** Registry text: also without surrounding whitespace. */
  trimmedText(key: string, max: number): string {
    const value = this.text(key, max);
    return trimContractString(value) === value ? value : this.fail();
  }

  matching(key: string, pattern: RegExp): string {
    const value = this.string(key);
    return pattern.test(value) ? value : this.fail();
  }

  optionalMatching(key: string, pattern: RegExp): string | null {
    return this.payload[key] === null ? null : this.matching(key, pattern);
  }

  oneOf<T extends string>(key: string, allowed: ReadonlySet<string>): T {
    const value = this.string(key);
    return allowed.has(value) ? (value as T) : this.fail();
  }

  uuid(key: string): string {
    const value = this.payload[key];
    return isCanonicalUuid(value) ? value : this.fail();
  }

  optionalUuid(key: string): string | null {
    return this.payload[key] === null ? null : this.uuid(key);
  }

  /** An integer in min..INT64_MAX (the line parser already bounded it to 64 bits). */
  integer(key: string, min: bigint, max: bigint = INT64_MAX): bigint {
    const value = this.payload[key];
    return typeof value === 'bigint' && value >= min && value <= max ? value : this.fail();
  }

  time(key: string): Micros {
    const value = this.payload[key];
    const micros = typeof value === 'string' ? parseTimestamp27(value) : undefined;
    return micros ?? this.fail();
  }

  optionalTime(key: string): Micros | null {
    return this.payload[key] === null ? null : this.time(key);
  }

  entity(key: string, entities: ReadonlyMap<string, EntityFieldRules>): EntityFieldRules {
    const name = this.matching(key, IDENTIFIER);
    const entity = entities.get(name);
    if (entity === undefined) throw new BundleInvalidError('unknown_entity');
    return entity;
  }
}

function open(payload: JsonValue | undefined, keys: readonly string[], defect: BundleDefect): Fields {
  if (!isJsonObject(payload ?? null) || !hasExactKeys(payload as JsonObject, keys)) throw new BundleInvalidError(defect);
  return new Fields(payload as JsonObject, defect);
}

export function decodeHeader(payload: JsonValue | undefined): BundleHeader {
  const p = open(payload, HEADER_KEYS, 'header_invalid');
  if (
    p.raw('export_format_version') !== BigInt(EXPORT_FORMAT_VERSION) ||
    p.raw('canonicalization') !== CANONICALIZATION_PROFILE ||
    p.raw('limit_profile') !== LIMIT_PROFILE ||
    p.raw('producer_package') !== PRODUCER_PACKAGE
  ) {
    p.fail();
  }
  return {
    producerPackageVersion: p.matching('producer_package_version', VERSION_TEXT),
    producerMcpContract: p.matching('producer_mcp_contract', VERSION_TEXT),
    createdAt: p.time('created_at'),
    sourceBackend: p.oneOf<SourceBackend>('source_backend', new Set(['sqlite', 'postgresql'])),
  };
}

export interface DecodedService {
  readonly service: BundleService;
  readonly manifest: ManifestV2 | null;
}

export function decodeService(payload: JsonValue | undefined): DecodedService {
  const p = open(payload, SERVICE_KEYS, 'service_invalid');
  const designState = p.oneOf<DesignState>('design_state', new Set(['seeded', 'materialised']));
  const operationalStatus = p.oneOf<OperationalStatus>('operational_status', OPERATIONAL_STATUSES);
  const schemaVersion = p.raw('schema_version') === null ? null : Number(p.integer('schema_version', 1n, MAX_SCHEMA_VERSION));
  const rawManifest = p.raw('manifest');
  if (rawManifest !== null && !isJsonObject(rawManifest)) p.fail();
  if ((rawManifest === null) !== (schemaVersion === null)) p.fail();
  let manifest: ManifestV2 | null = null;
  if (rawManifest !== null) {
    const checked = validateManifest(rawManifest, { sizeBound: false });
    if (!checked.ok) throw new BundleInvalidError('manifest_invalid');
    manifest = checked.manifest;
    if (manifest.schema_version !== schemaVersion) p.fail();
  }
  const materialisedAt = p.optionalTime('materialised_at');
  const service: BundleService = {
    serviceId: p.uuid('service_id'),
    domainName: p.matching('domain_name', IDENTIFIER),
    domainClass: p.trimmedText('domain_class', 64),
    intentDescription: p.trimmedText('intent_description', 1000),
    designState,
    operationalStatus,
    manifest: manifest === null ? null : manifestToJson(manifest),
    schemaVersion,
    serviceRevision: p.integer('service_revision', 1n),
    createdAt: p.time('created_at'),
    updatedAt: p.time('updated_at'),
    lastActivityAt: p.time('last_activity_at'),
    materialisedAt,
    exportFence: decodeFence(p, designState),
  };
  if (designState === 'materialised') {
    if (manifest === null || materialisedAt === null) p.fail();
    if (operationalStatus === 'active') throw new BundleInvalidError('fence_invalid');
  } else if (materialisedAt !== null) {
    p.fail();
  }
  return { service, manifest };
}

function decodeFence(p: Fields, designState: DesignState): BundleService['exportFence'] {
  const generation = p.raw('export_fence_generation');
  const state = p.raw('export_fence_state');
  if (designState === 'seeded') {
    if (generation !== null || state !== null) throw new BundleInvalidError('fence_invalid');
    return null;
  }
  if (typeof generation !== 'bigint' || generation < 1n || state !== 'closed') throw new BundleInvalidError('fence_invalid');
  return { generation, state };
}

export function decodeRecord(payload: JsonValue | undefined, entities: ReadonlyMap<string, EntityFieldRules>, lineBytes: number): BundleRecord {
  const p = open(payload, RECORD_KEYS, 'record_invalid');
  const entity = p.entity('entity_name', entities);
  // No order between created_at and updated_at (§5.4 sets none): a store
  // written by processes whose wall clock stepped back between them holds
  // such rows, and refusing them froze the service at its export.
  const createdAt = p.time('created_at');
  const updatedAt = p.time('updated_at');
  return {
    entityName: entity.name,
    recordId: p.uuid('record_id'),
    recordVersion: p.integer('record_version', 1n),
    createdAt,
    updatedAt,
    createdVia: p.text('created_via', 128),
    fields: decodeFieldSet(entity, p.raw('fields'), lineBytes),
  };
}

export function decodeHistory(payload: JsonValue | undefined, entities: ReadonlyMap<string, EntityFieldRules>, lineBytes: number): BundleHistoryEvent {
  const p = open(payload, HISTORY_KEYS, 'history_invalid');
  const entity = p.entity('entity_name', entities);
  const kind = p.oneOf<HistoryKind>('kind', HISTORY_KINDS);
  const rawBefore = p.raw('before');
  const rawAfter = p.raw('after');
  // The sides each kind has (contract §6.11): create has no before, delete no
  // after, every other kind both; a membership change leaves the fields as
  // they were, so its sides are the same fields.
  if ((rawBefore === null) !== (kind === 'create') || (rawAfter === null) !== (kind === 'delete')) p.fail();
  if (kind !== 'create' && kind !== 'update' && kind !== 'delete' && encodeCanonical(rawBefore) !== encodeCanonical(rawAfter)) p.fail();
  return {
    entityName: entity.name,
    recordId: p.uuid('record_id'),
    recordVersion: p.integer('record_version', 1n),
    kind,
    occurredAt: p.time('occurred_at'),
    before: rawBefore === null ? null : decodeFieldSet(entity, rawBefore, lineBytes),
    after: rawAfter === null ? null : decodeFieldSet(entity, rawAfter, lineBytes),
  };
}

export function decodeBranch(payload: JsonValue | undefined): BundleBranch {
  const p = open(payload, BRANCH_KEYS, 'branch_invalid');
  // No order between the times either (see decodeRecord).
  const createdAt = p.time('created_at');
  const updatedAt = p.time('updated_at');
  return {
    branchId: p.uuid('branch_id'),
    slug: p.matching('slug', SLUG),
    title: p.text('title', 160),
    intent: p.text('intent', 1000),
    branchType: p.optionalMatching('branch_type', BRANCH_TYPE),
    parentBranchId: p.optionalUuid('parent_branch_id'),
    status: p.oneOf<BranchStatus>('status', BRANCH_STATUSES),
    retrievalSummary: p.optionalText('retrieval_summary', 1000),
    createdAt,
    updatedAt,
    branchRevision: p.integer('branch_revision', 1n),
  };
}

export function decodeMembership(payload: JsonValue | undefined): BundleMembership {
  const p = open(payload, MEMBERSHIP_KEYS, 'membership_invalid');
  return {
    branchId: p.uuid('branch_id'),
    entityName: p.matching('entity_name', IDENTIFIER),
    recordId: p.uuid('record_id'),
    role: p.oneOf<BranchRole>('role', BRANCH_ROLES),
  };
}
