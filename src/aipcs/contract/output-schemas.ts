// The outputSchema of every AIPCS tool (contract §2.1, §9): a closed result
// model wrapped as `anyOf[_TypedSuccessEnvelope_<Model>_, FailureEnvelope]`,
// with the top-level `"type": "object"` decided in §12.10. Shapes only; the
// results themselves are built by the handlers.

import { ERROR_CODES } from './error-codes.js';
import { MANIFEST_DEFS } from './manifest/manifest-schema.js';
import { MAINTENANCE_SCAN_TYPES } from './manifest/derived-model.js';
import type { SchemaNode } from './schema-check.js';

export const MAX_REVISION = 9223372036854775807n;

const ref = (name: string): SchemaNode => ({ $ref: `#/$defs/${name}` });
const orNull = (node: SchemaNode): SchemaNode => ({ anyOf: [node, { type: 'null' }] });
const text = (minLength: number, maxLength: number): SchemaNode => ({ type: 'string', minLength, maxLength });
const uuid: SchemaNode = { type: 'string', format: 'uuid' };
const timestamp: SchemaNode = { type: 'string', format: 'date-time' };
const revision: SchemaNode = { type: 'integer', minimum: 1, maximum: MAX_REVISION };
const count: SchemaNode = { type: 'integer', minimum: 0 };
const name64 = text(1, 64);
const freeObject: SchemaNode = { type: 'object', additionalProperties: true };
const arrayOf = (items: SchemaNode, maxItems?: number, minItems?: number): SchemaNode => ({
  type: 'array',
  items,
  ...(minItems === undefined ? {} : { minItems }),
  ...(maxItems === undefined ? {} : { maxItems }),
});
const oneOfStrings = (values: readonly string[]): SchemaNode => ({ type: 'string', enum: [...values] });
const closed = (title: string, properties: Record<string, SchemaNode>): SchemaNode => ({
  title,
  type: 'object',
  additionalProperties: false,
  properties,
  required: Object.keys(properties),
});

const RECOVERY_STATES = ['clear', 'pending', 'recovery_required'];
const OPERATIONAL_STATUSES = ['active', 'suspended', 'archived'];
const DESIGN_STATES = ['seeded', 'materialised'];
const HISTORY_KINDS = ['create', 'update', 'delete', 'primary_assign', 'primary_move', 'primary_unassign', 'related_assign', 'related_unassign'];
const BRANCH_STATUSES = ['active', 'archived', 'superseded'];
const nullableCursor = orNull(text(1, 1024));

/** Every model any tool result refers to, by `$defs` name. */
const MODEL_DEFS: Readonly<Record<string, SchemaNode>> = {
  ...MANIFEST_DEFS,
  ErrorCode: { title: 'ErrorCode', type: 'string', enum: [...ERROR_CODES] },
  ErrorIssue: closed('ErrorIssue', {
    code: text(1, 96),
    path: text(1, 240),
    message: text(1, 500),
    remediation: orNull({ type: 'string', maxLength: 500 }),
  }),
  ErrorDetail: closed('ErrorDetail', {
    code: ref('ErrorCode'),
    message: text(1, 500),
    issues: arrayOf(ref('ErrorIssue'), 32),
    retryable: { type: 'boolean' },
  }),
  FailureEnvelope: {
    title: 'FailureEnvelope',
    type: 'object',
    additionalProperties: false,
    properties: {
      ok: { type: 'boolean', const: false, default: false },
      result: { type: 'null', default: null },
      error: ref('ErrorDetail'),
    },
    required: ['error'],
  },
  ServerFeatures: closed('ServerFeatures', {
    server_info: { type: 'boolean' },
    manifest_v2_validation: { type: 'boolean' },
    legacy_v1_importer: { type: 'boolean' },
    stdio_preflight: { type: 'boolean' },
    registry_lifecycle: { type: 'boolean' },
    materialisation_lifecycle: { type: 'boolean' },
    record_runtime: { type: 'boolean' },
    discovery_topology: { type: 'boolean' },
  }),
  ServerInfo: closed('ServerInfo', {
    server_name: { type: 'string' },
    package_version: { type: 'string' },
    aipcs_mcp_contract: { type: 'string' },
    supported_manifest_versions: arrayOf({ const: 2 }),
    transports: arrayOf(oneOfStrings(['stdio', 'streamable-http'])),
    features: ref('ServerFeatures'),
    operational_statuses: arrayOf(oneOfStrings(['active'])),
  }),
  StorageSummary: closed('StorageSummary', {
    backend: oneOfStrings(['sqlite', 'postgresql']),
    namespace: { type: 'string', pattern: '^svc_[0-9a-f]{32}$' },
  }),
  ServiceMetadata: closed('ServiceMetadata', {
    service_id: uuid,
    domain_name: text(1, 63),
    domain_class: text(1, 64),
    intent_description: text(1, 1000),
    design_state: oneOfStrings(DESIGN_STATES),
    operational_status: oneOfStrings(OPERATIONAL_STATUSES),
    schema: orNull(ref('ManifestV2')),
    schema_version: orNull({ type: 'integer', minimum: 1, maximum: 65 }),
    service_revision: revision,
    recovery_state: oneOfStrings(RECOVERY_STATES),
    created_at: timestamp,
    updated_at: timestamp,
    last_activity_at: timestamp,
    materialised_at: orNull(timestamp),
    storage: orNull(ref('StorageSummary')),
  }),
  ServiceListResult: closed('ServiceListResult', { services: arrayOf(ref('ServiceMetadata'), 100) }),
  RecordDocument: closed('RecordDocument', {
    entity_name: name64,
    id: uuid,
    record_version: revision,
    created_at: timestamp,
    updated_at: timestamp,
    created_via: text(1, 128),
    fields: freeObject,
  }),
  RecordMutationResult: closed('RecordMutationResult', { record: ref('RecordDocument'), replayed: { type: 'boolean' } }),
  RecordDeleteResult: closed('RecordDeleteResult', { id: uuid, record_version: revision, replayed: { type: 'boolean' } }),
  RecordPageResult: closed('RecordPageResult', { records: arrayOf(ref('RecordDocument'), 100), next_cursor: nullableCursor }),
  RecordSnapshot: closed('RecordSnapshot', { fields: freeObject }),
  RecordHistoryEventResult: closed('RecordHistoryEventResult', {
    entity_name: name64,
    id: uuid,
    record_version: revision,
    kind: oneOfStrings(HISTORY_KINDS),
    occurred_at: timestamp,
    before: orNull(ref('RecordSnapshot')),
    after: orNull(ref('RecordSnapshot')),
  }),
  RecordHistoryResult: closed('RecordHistoryResult', { events: arrayOf(ref('RecordHistoryEventResult'), 100), next_cursor: nullableCursor }),
  BranchDocument: closed('BranchDocument', {
    id: uuid,
    slug: { type: 'string', minLength: 3, maxLength: 64, pattern: '^[a-z][a-z0-9-]{1,62}[a-z0-9]$' },
    title: text(1, 160),
    intent: text(1, 1000),
    type: orNull({ type: 'string', maxLength: 80 }),
    parent_id: orNull(uuid),
    status: oneOfStrings(BRANCH_STATUSES),
    retrieval_summary: orNull({ type: 'string', maxLength: 1000 }),
    created_at: timestamp,
    updated_at: timestamp,
    branch_revision: revision,
  }),
  BranchMutationResult: closed('BranchMutationResult', { branch: ref('BranchDocument'), replayed: { type: 'boolean' } }),
  BranchPageResult: closed('BranchPageResult', { branches: arrayOf(ref('BranchDocument'), 100), next_cursor: nullableCursor }),
  RecordReference: closed('RecordReference', { entity_name: name64, id: uuid, record_version: revision }),
  BranchAssignmentResult: closed('BranchAssignmentResult', { records: arrayOf(ref('RecordReference'), 100, 1), replayed: { type: 'boolean' } }),
  BootstrapServiceCard: closed('BootstrapServiceCard', {
    service_id: uuid,
    domain_name: text(1, 63),
    domain_class: text(1, 64),
    intent: text(1, 1000),
    state: oneOfStrings(DESIGN_STATES),
    operational_status: oneOfStrings(OPERATIONAL_STATUSES),
    schema_version: orNull({ type: 'integer', minimum: 1, maximum: 65 }),
    recovery_state: oneOfStrings(RECOVERY_STATES),
    entities: arrayOf({ type: 'string' }, 32),
  }),
  BootstrapResult: closed('BootstrapResult', { services: arrayOf(ref('BootstrapServiceCard'), 100), truncated: { type: 'boolean' } }),
  FieldFilterMode: closed('FieldFilterMode', {
    field_name: name64,
    mode: oneOfStrings(['exact', 'membership']),
    value_shape: oneOfStrings(['scalar', 'single_string_member']),
    facet: { type: 'boolean' },
  }),
  EntityAffordance: closed('EntityAffordance', { entity_name: name64, filter_modes: arrayOf(ref('FieldFilterMode'), 64) }),
  AuthorityFieldAvailability: closed('AuthorityFieldAvailability', {
    entity_name: name64,
    provenance_fields: arrayOf(oneOfStrings(['provenance_type', 'provenance_note', 'provenance_source'])),
    source_fields: arrayOf(oneOfStrings(['source_ref', 'source_kind'])),
    scope_fields: arrayOf(oneOfStrings(['scope', 'scope_ref'])),
    confidence_field: orNull({ type: 'string', const: 'confidence' }),
    status_field: orNull({ type: 'string', const: 'status' }),
    validity_fields: arrayOf(oneOfStrings(['valid_from', 'valid_until'])),
    supersession_fields: arrayOf(oneOfStrings(['supersedes', 'superseded_by'])),
  }),
  QueryGuidance: closed('QueryGuidance', {
    patterns: arrayOf({ type: 'string' }, 32),
    retrieval_guidance: orNull({ type: 'string', maxLength: 2000 }),
  }),
  EntityRecordCount: closed('EntityRecordCount', { entity_name: name64, count: orNull(count) }),
  FacetValueCount: closed('FacetValueCount', { value: {}, count }),
  FacetResult: closed('FacetResult', { entity_name: name64, field_name: name64, values: arrayOf(ref('FacetValueCount'), 20) }),
  BranchCardResult: closed('BranchCardResult', {
    branch: ref('BranchDocument'),
    primary_record_count: count,
    related_record_count: count,
  }),
  EntitySamples: closed('EntitySamples', { entity_name: name64, records: arrayOf(ref('RecordDocument'), 3) }),
  ServiceSummaryResult: closed('ServiceSummaryResult', {
    data_status: oneOfStrings(['ready', 'migration_required']),
    affordances: arrayOf(ref('EntityAffordance'), 32),
    authority_field_availability: arrayOf(ref('AuthorityFieldAvailability'), 32),
    query_guidance: ref('QueryGuidance'),
    record_counts: arrayOf(ref('EntityRecordCount'), 32),
    facets: orNull(arrayOf(ref('FacetResult'), 64)),
    branches: orNull(arrayOf(ref('BranchCardResult'), 100)),
    unbranched_record_count: orNull(count),
    samples: orNull(arrayOf(ref('EntitySamples'), 32)),
  }),
  RecordIdentifier: closed('RecordIdentifier', { entity_name: name64, id: uuid }),
  MaintenanceCandidateResult: closed('MaintenanceCandidateResult', {
    scan_type: oneOfStrings(MAINTENANCE_SCAN_TYPES),
    record: ref('RecordIdentifier'),
    detail: freeObject,
  }),
  MaintenanceResult: closed('MaintenanceResult', {
    candidates: arrayOf(ref('MaintenanceCandidateResult'), 100),
    unavailable_scan_types: arrayOf(oneOfStrings(MAINTENANCE_SCAN_TYPES)),
  }),
};

export type ResultModelName =
  | 'ServerInfo'
  | 'ServiceMetadata'
  | 'ServiceListResult'
  | 'RecordMutationResult'
  | 'RecordDocument'
  | 'RecordPageResult'
  | 'RecordDeleteResult'
  | 'RecordHistoryResult'
  | 'BootstrapResult'
  | 'ServiceSummaryResult'
  | 'BranchMutationResult'
  | 'BranchPageResult'
  | 'BranchAssignmentResult'
  | 'MaintenanceResult';

function referencedDefs(start: string): string[] {
  const found = new Set<string>();
  const pending = [start];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (found.has(name)) continue;
    found.add(name);
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(visit);
      else if (node !== null && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === '$ref' && typeof value === 'string') pending.push(value.slice('#/$defs/'.length));
          else visit(value);
        }
      }
    };
    visit(MODEL_DEFS[name]);
  }
  return [...found];
}

/** The outputSchema of a tool whose success result is `model`. */
export function outputSchemaFor(model: ResultModelName): SchemaNode {
  const envelopeName = `_TypedSuccessEnvelope_${model}_`;
  const envelope: SchemaNode = {
    title: `_TypedSuccessEnvelope[${model}]`,
    type: 'object',
    additionalProperties: false,
    properties: {
      ok: { type: 'boolean', const: true, default: true },
      result: ref(model),
      error: { type: 'null', default: null },
    },
    required: ['result'],
  };
  const names = new Set([...referencedDefs(model), ...referencedDefs('FailureEnvelope')]);
  const defs: Record<string, SchemaNode> = { [envelopeName]: envelope };
  for (const name of [...names].sort()) defs[name] = MODEL_DEFS[name] as SchemaNode;
  return {
    type: 'object',
    $defs: defs,
    anyOf: [ref(envelopeName), ref('FailureEnvelope')],
  };
}
