// The AIPCS tool catalogue: the 21 tools of contract §2.1 in order, their
// exact descriptions, the input schemas of Appendix A and the output schemas
// of §9. One source drives tools/list and argument validation (requests/);
// handlers and transports live elsewhere.

import { MANIFEST_DEFS } from './manifest/manifest-schema.js';
import { MAINTENANCE_SCAN_TYPES } from './manifest/derived-model.js';
import { IDENTIFIER_PATTERN } from './manifest/types.js';
import { MAX_REVISION, outputSchemaFor, type ResultModelName } from './output-schemas.js';
import { RECORD_BOUNDS } from './requests/record-values.js';
import { deepFreeze, type SchemaNode } from './schema-check.js';

export const TOOL_NAMES = [
  'aipcs_server_info',
  'aipcs_service_seed',
  'aipcs_service_list',
  'aipcs_service_inspect',
  'aipcs_service_design',
  'aipcs_service_materialise',
  'aipcs_service_evolve',
  'aipcs_record_create',
  'aipcs_record_get',
  'aipcs_record_list',
  'aipcs_record_search',
  'aipcs_record_update',
  'aipcs_record_delete',
  'aipcs_record_history',
  'aipcs_bootstrap',
  'aipcs_service_summary',
  'aipcs_branch_create',
  'aipcs_branch_list',
  'aipcs_branch_update',
  'aipcs_branch_assign_records',
  'aipcs_maintenance_scan',
] as const;

export type ToolName = (typeof TOOL_NAMES)[number];

export function isToolName(value: string): value is ToolName {
  return (TOOL_NAMES as readonly string[]).includes(value);
}

// Appendix A fragments.
const UUID: SchemaNode = { type: 'string', format: 'uuid' };
const IDENT: SchemaNode = { type: 'string', pattern: IDENTIFIER_PATTERN };
const KEY: SchemaNode = { type: 'string', minLength: 1, maxLength: 128 };
const REV: SchemaNode = { type: 'integer', minimum: 1, maximum: MAX_REVISION };
const LIMIT50: SchemaNode = { type: 'integer', minimum: 1, maximum: 100, default: 50 };
const LIMIT100: SchemaNode = { type: 'integer', minimum: 1, maximum: 100, default: 100 };
const CURSOR: SchemaNode = { anyOf: [{ type: 'string', minLength: 1, maxLength: 1024 }, { type: 'null' }], default: null };
const opt = (node: SchemaNode): SchemaNode => ({ anyOf: [node, { type: 'null' }], default: null });
const BRANCH_TYPE: SchemaNode = { type: 'string', maxLength: 80, pattern: '^[a-z][a-z0-9_-]{0,79}$' };
const BRANCH_STATUS: SchemaNode = { type: 'string', enum: ['active', 'archived', 'superseded'] };
const BRANCH_ROLE: SchemaNode = { type: 'string', enum: ['primary', 'related'] };
const MANIFEST_REF: SchemaNode = { $ref: '#/$defs/ManifestV2' };

function inputSchema(properties: Record<string, SchemaNode>, required: readonly string[], defs?: Record<string, SchemaNode>): SchemaNode {
  return {
    type: 'object',
    properties,
    required: [...required],
    additionalProperties: false,
    ...(defs === undefined ? {} : { $defs: defs }),
  };
}

/** Nodes that carry extra rules in requests/; exported so refiners can key on them. */
export const RECORD_VALUES_SCHEMA: SchemaNode = { type: 'object', additionalProperties: true };
export const RECORD_UPDATES_SCHEMA: SchemaNode = { type: 'object', additionalProperties: true, minProperties: 1 };
export const SEARCH_FILTERS_SCHEMA: SchemaNode = { type: 'object', additionalProperties: true, minProperties: 1, maxProperties: RECORD_BOUNDS.maxSearchFilters };

export const BRANCH_UPDATES_SCHEMA: SchemaNode = {
  title: 'BranchUpdates',
  type: 'object',
  properties: {
    title: opt({ type: 'string', minLength: 1, maxLength: 160 }),
    intent: opt({ type: 'string', minLength: 1, maxLength: 1000 }),
    branch_type: opt(BRANCH_TYPE),
    parent_branch_id: opt(UUID),
    status: opt(BRANCH_STATUS),
    retrieval_summary: opt({ type: 'string', maxLength: 1000 }),
  },
  required: [],
  additionalProperties: false,
};

export const BRANCH_ASSIGNMENT_TARGET_SCHEMA: SchemaNode = {
  title: 'BranchAssignmentTarget',
  type: 'object',
  properties: { entity_name: IDENT, record_id: UUID, expected_record_version: REV },
  required: ['entity_name', 'record_id', 'expected_record_version'],
  additionalProperties: false,
};

const pageAndScope = { limit: LIMIT50, cursor: CURSOR, branch_id: opt(UUID), branch_role: opt(BRANCH_ROLE) };

export const INPUT_SCHEMAS: Readonly<Record<ToolName, SchemaNode>> = {
  aipcs_server_info: inputSchema({}, []),
  aipcs_service_seed: inputSchema(
    {
      domain_name: { type: 'string', maxLength: 63, pattern: IDENTIFIER_PATTERN },
      domain_class: { type: 'string', minLength: 1, maxLength: 64 },
      intent_description: { type: 'string', minLength: 1, maxLength: 1000 },
      idempotency_key: KEY,
    },
    ['domain_name', 'domain_class', 'intent_description', 'idempotency_key'],
  ),
  aipcs_service_list: inputSchema({ limit: LIMIT100 }, []),
  aipcs_service_inspect: inputSchema({ service_id: UUID }, ['service_id']),
  aipcs_service_design: inputSchema(
    { service_id: UUID, schema: MANIFEST_REF, idempotency_key: KEY },
    ['service_id', 'schema', 'idempotency_key'],
    { ...MANIFEST_DEFS },
  ),
  aipcs_service_materialise: inputSchema(
    {
      service_id: UUID,
      expected_service_revision: REV,
      expected_schema_version: { type: 'integer', minimum: 1, maximum: 1 },
      idempotency_key: KEY,
    },
    ['service_id', 'expected_service_revision', 'expected_schema_version', 'idempotency_key'],
  ),
  aipcs_service_evolve: inputSchema(
    {
      service_id: UUID,
      expected_service_revision: REV,
      expected_schema_version: { type: 'integer', minimum: 1, maximum: 64 },
      idempotency_key: KEY,
      schema: MANIFEST_REF,
    },
    ['service_id', 'expected_service_revision', 'expected_schema_version', 'idempotency_key', 'schema'],
    { ...MANIFEST_DEFS },
  ),
  aipcs_record_create: inputSchema(
    { idempotency_key: KEY, service_id: UUID, entity_name: IDENT, record: RECORD_VALUES_SCHEMA },
    ['idempotency_key', 'service_id', 'entity_name', 'record'],
  ),
  aipcs_record_get: inputSchema({ service_id: UUID, entity_name: IDENT, record_id: UUID }, ['service_id', 'entity_name', 'record_id']),
  aipcs_record_list: inputSchema({ ...pageAndScope, service_id: UUID, entity_name: IDENT }, ['service_id', 'entity_name']),
  aipcs_record_search: inputSchema(
    { ...pageAndScope, service_id: UUID, entity_name: IDENT, filters: SEARCH_FILTERS_SCHEMA },
    ['service_id', 'entity_name', 'filters'],
  ),
  aipcs_record_update: inputSchema(
    {
      idempotency_key: KEY,
      service_id: UUID,
      entity_name: IDENT,
      record_id: UUID,
      updates: RECORD_UPDATES_SCHEMA,
      expected_record_version: REV,
    },
    ['idempotency_key', 'service_id', 'entity_name', 'record_id', 'updates', 'expected_record_version'],
  ),
  aipcs_record_delete: inputSchema(
    { idempotency_key: KEY, service_id: UUID, entity_name: IDENT, record_id: UUID, expected_record_version: REV },
    ['idempotency_key', 'service_id', 'entity_name', 'record_id', 'expected_record_version'],
  ),
  aipcs_record_history: inputSchema(
    { limit: LIMIT50, cursor: CURSOR, service_id: UUID, entity_name: IDENT, record_id: opt(UUID) },
    ['service_id', 'entity_name'],
  ),
  aipcs_bootstrap: inputSchema({ limit: LIMIT100 }, []),
  aipcs_service_summary: inputSchema(
    { service_id: UUID, sample: { type: 'integer', minimum: 0, maximum: 3, default: 0 } },
    ['service_id'],
  ),
  aipcs_branch_create: inputSchema(
    {
      idempotency_key: KEY,
      service_id: UUID,
      slug: { type: 'string', minLength: 3, maxLength: 64, pattern: '^[a-z][a-z0-9-]{1,62}[a-z0-9]$' },
      title: { type: 'string', minLength: 1, maxLength: 160 },
      intent: { type: 'string', minLength: 1, maxLength: 1000 },
      branch_type: opt(BRANCH_TYPE),
      parent_branch_id: opt(UUID),
      retrieval_summary: opt({ type: 'string', maxLength: 1000 }),
    },
    ['idempotency_key', 'service_id', 'slug', 'title', 'intent'],
  ),
  aipcs_branch_list: inputSchema(
    {
      limit: LIMIT50,
      cursor: CURSOR,
      service_id: UUID,
      status: opt(BRANCH_STATUS),
      branch_type: opt(BRANCH_TYPE),
      parent_branch_id: opt(UUID),
    },
    ['service_id'],
  ),
  aipcs_branch_update: inputSchema(
    {
      idempotency_key: KEY,
      service_id: UUID,
      branch_id: UUID,
      expected_branch_revision: REV,
      updates: { $ref: '#/$defs/BranchUpdates' },
    },
    ['idempotency_key', 'service_id', 'branch_id', 'expected_branch_revision', 'updates'],
    { BranchUpdates: BRANCH_UPDATES_SCHEMA },
  ),
  aipcs_branch_assign_records: inputSchema(
    {
      idempotency_key: KEY,
      service_id: UUID,
      branch_id: UUID,
      role: BRANCH_ROLE,
      operation: { type: 'string', enum: ['assign', 'unassign'] },
      records: { type: 'array', items: { $ref: '#/$defs/BranchAssignmentTarget' }, minItems: 1, maxItems: 100 },
    },
    ['idempotency_key', 'service_id', 'branch_id', 'role', 'operation', 'records'],
    { BranchAssignmentTarget: BRANCH_ASSIGNMENT_TARGET_SCHEMA },
  ),
  aipcs_maintenance_scan: inputSchema(
    {
      service_id: UUID,
      entity_name: opt(IDENT),
      branch_id: opt(UUID),
      scan_types: opt({ type: 'array', items: { type: 'string', enum: [...MAINTENANCE_SCAN_TYPES] }, minItems: 1, maxItems: 8 }),
      stale_after_days: { type: 'integer', minimum: 1, maximum: 3650, default: 90 },
      low_confidence_below: { type: 'number', minimum: 0, maximum: 1, default: 0.5 },
      limit: LIMIT50,
    },
    ['service_id'],
  ),
};

const DESCRIPTIONS: Readonly<Record<ToolName, string>> = {
  aipcs_server_info: 'Return the public AIPCS MCP capability contract.',
  aipcs_service_seed: 'Create or replay a durable service seed.',
  aipcs_service_list: 'List durable services for the configured principal.',
  aipcs_service_inspect: 'Inspect one durable service projection.',
  aipcs_service_design: 'Validate and store an initial service design.',
  aipcs_service_materialise: 'Materialise a designed service using an exact lifecycle precondition.',
  aipcs_service_evolve: 'Evolve a materialised service with one complete adjacent manifest.',
  aipcs_record_create: 'Create one record in a materialised service.',
  aipcs_record_get: 'Get one record by entity and identifier.',
  aipcs_record_list: 'List records with bounded exact branch scope.',
  aipcs_record_search: 'Search records using declared exact filters.',
  aipcs_record_update: 'Update one record with an exact version precondition.',
  aipcs_record_delete: 'Delete one record with an exact version precondition.',
  aipcs_record_history: 'List bounded record history.',
  aipcs_bootstrap: 'Orient to service topology without reading service stores.',
  aipcs_service_summary: 'Summarise one materialised service with bounded discovery facts.',
  aipcs_branch_create: 'Create one durable memory branch.',
  aipcs_branch_list: 'List direct memory branches with bounded pagination.',
  aipcs_branch_update: 'Update one memory branch with an exact revision precondition.',
  aipcs_branch_assign_records: 'Assign or unassign bounded records from one branch.',
  aipcs_maintenance_scan: 'Return bounded, read-only mechanical maintenance signals.',
};

/** Result model per tool (contract §9). */
export const RESULT_MODELS: Readonly<Record<ToolName, ResultModelName>> = {
  aipcs_server_info: 'ServerInfo',
  aipcs_service_seed: 'ServiceMetadata',
  aipcs_service_list: 'ServiceListResult',
  aipcs_service_inspect: 'ServiceMetadata',
  aipcs_service_design: 'ServiceMetadata',
  aipcs_service_materialise: 'ServiceMetadata',
  aipcs_service_evolve: 'ServiceMetadata',
  aipcs_record_create: 'RecordMutationResult',
  aipcs_record_get: 'RecordDocument',
  aipcs_record_list: 'RecordPageResult',
  aipcs_record_search: 'RecordPageResult',
  aipcs_record_update: 'RecordMutationResult',
  aipcs_record_delete: 'RecordDeleteResult',
  aipcs_record_history: 'RecordHistoryResult',
  aipcs_bootstrap: 'BootstrapResult',
  aipcs_service_summary: 'ServiceSummaryResult',
  aipcs_branch_create: 'BranchMutationResult',
  aipcs_branch_list: 'BranchPageResult',
  aipcs_branch_update: 'BranchMutationResult',
  aipcs_branch_assign_records: 'BranchAssignmentResult',
  aipcs_maintenance_scan: 'MaintenanceResult',
};

export interface AipcsToolDefinition {
  readonly name: ToolName;
  readonly description: string;
  readonly inputSchema: SchemaNode;
  readonly outputSchema: SchemaNode;
}

/** The ready (persistent) profile: all 21 tools, in contract order. */
export const AIPCS_TOOLS: readonly AipcsToolDefinition[] = deepFreeze(
  TOOL_NAMES.map((name) => ({
    name,
    description: DESCRIPTIONS[name],
    inputSchema: INPUT_SCHEMAS[name],
    outputSchema: outputSchemaFor(RESULT_MODELS[name]),
  })),
);

/** The stateless profile: server info only. */
export const STATELESS_TOOLS: readonly AipcsToolDefinition[] = AIPCS_TOOLS.filter((tool) => tool.name === 'aipcs_server_info');

/**
 * A schema as plain JSON for a `tools/list` answer. The one bound beyond 2^53
 * (2^63−1) becomes a JS number, the nearest a JSON.stringify transport can
 * write; validation never uses this copy.
 */
export function schemaToPlainJson(node: SchemaNode): Record<string, unknown> {
  const convert = (value: unknown): unknown => {
    // Bounds beyond 2^53 (the 2^63-1 of revisions) stay exact bigints; the
    // stdio transport writes them as bare integers.
    if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value;
    if (Array.isArray(value)) return value.map(convert);
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, member] of Object.entries(value)) out[key] = convert(member);
      return out;
    }
    return value;
  };
  return convert(node) as Record<string, unknown>;
}

/** The `tools` array of a tools/list result: exactly name, description, inputSchema, outputSchema. */
export function toolListing(tools: readonly AipcsToolDefinition[] = AIPCS_TOOLS): Record<string, unknown>[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: schemaToPlainJson(tool.inputSchema),
    outputSchema: schemaToPlainJson(tool.outputSchema),
  }));
}
