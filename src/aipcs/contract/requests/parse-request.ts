// Request-shape validation of tool arguments into typed commands, in the
// check order of the contract: unknown tool, then (lifecycle tools)
// invalid_identifier → retired_field → manifest version, then the schema of
// Appendix A with its cross-field rules. No state is read here.

import { isJsonObject, type JsonObject, type JsonValue } from '../../../common/json.js';
import { AipcsError, validationFailed } from '../error-codes.js';
import { IssueSink, type PathSegment } from '../issues.js';
import { equalsManifestVersion } from '../manifest/convert-v1.js';
import { MAINTENANCE_SCAN_TYPES, type MaintenanceScanType } from '../manifest/derived-model.js';
import { MANIFEST_REFINERS, manifestFromNormalised } from '../manifest/validate-manifest.js';
import { containsRetiredKey } from '../retired-fields.js';
import { checkValue, isCanonicalUuid, trimContractString, type Refiner, type SchemaNode } from '../schema-check.js';
import {
  BRANCH_UPDATES_SCHEMA,
  INPUT_SCHEMAS,
  RECORD_UPDATES_SCHEMA,
  RECORD_VALUES_SCHEMA,
  SEARCH_FILTERS_SCHEMA,
  TOOL_NAMES,
  isToolName,
  type ToolName,
} from '../tool-catalogue.js';
import type { BranchRole, BranchStatus, BranchUpdates, CommandFor, PageRequest, ToolCommand } from './commands.js';
import { checkFilterMap, checkRecordMap } from './record-values.js';

export type RequestParse<C extends ToolCommand = ToolCommand> = { readonly ok: true; readonly command: C } | { readonly ok: false; readonly error: AipcsError };

/** Idempotency keys with this prefix are reserved for data mutations (contract §6.4). */
export const RESERVED_KEY_PREFIX = '__aipcs_';
const DATA_MUTATIONS: ReadonlySet<ToolName> = new Set<ToolName>([
  'aipcs_record_create',
  'aipcs_record_update',
  'aipcs_record_delete',
  'aipcs_branch_create',
  'aipcs_branch_update',
  'aipcs_branch_assign_records',
]);
/**
 * Free-text arguments kept as text outside the manifest (besides every
 * idempotency key). Like record strings they may not contain U+0000:
 * PostgreSQL text cannot hold it, and both backends answer alike
 * (docs/decisions.md D19).
 */
const NUL_FREE_ARGUMENTS = ['domain_class', 'intent_description', 'title', 'intent', 'retrieval_summary'] as const;
const NUL_FREE_BRANCH_UPDATES: ReadonlySet<string> = new Set(['title', 'intent', 'retrieval_summary']);
const holdsNul = (value: JsonValue | undefined): boolean => typeof value === 'string' && value.includes('\u0000');

const obj = (value: JsonValue | undefined): JsonObject => (isJsonObject(value ?? null) ? (value as JsonObject) : {});

// ---------------------------------------------------------------------------
// Cross-field rules, each attached to the schema node it refines.

const refineRecordValues: Refiner = (value, path, sink) => checkRecordMap(obj(value), path, sink);
const refineFilters: Refiner = (value, path, sink) => checkFilterMap(obj(value), path, sink);

const refineBranchUpdates: Refiner = (value, path, sink, raw) => {
  const supplied = Object.keys(obj(raw));
  const normalised = obj(value);
  if (supplied.length === 0) {
    sink.report('invalid_length', path);
    return value;
  }
  const out: JsonObject = {};
  for (const key of supplied) {
    const member = normalised[key] as JsonValue;
    if (member === null && (key === 'title' || key === 'intent' || key === 'status')) sink.report('invalid_value', [...path, key]);
    // An empty summary has no meaning (the reference fails internally); refuse it as a length.
    if (key === 'retrieval_summary' && member === '') sink.report('invalid_length', [...path, key]);
    if (NUL_FREE_BRANCH_UPDATES.has(key) && holdsNul(member)) sink.report('invalid_value', [...path, key]);
    out[key] = member;
  }
  return out;
};

function toolRefiner(tool: ToolName): Refiner {
  return (value, _path, sink) => {
    const args = obj(value);
    if (DATA_MUTATIONS.has(tool) && String(args['idempotency_key']).startsWith(RESERVED_KEY_PREFIX)) sink.report('invalid_value', ['idempotency_key']);
    else if (holdsNul(args['idempotency_key'])) sink.report('invalid_value', ['idempotency_key']);
    for (const key of NUL_FREE_ARGUMENTS) if (holdsNul(args[key])) sink.report('invalid_value', [key]);
    switch (tool) {
      case 'aipcs_service_evolve': {
        const expected = args['expected_schema_version'] as bigint;
        if (obj(args['schema'])['schema_version'] !== expected + 1n) sink.report('invalid_value', []);
        break;
      }
      case 'aipcs_record_list':
      case 'aipcs_record_search':
        if ((args['branch_id'] === null) !== (args['branch_role'] === null)) sink.report('invalid_value', []);
        break;
      case 'aipcs_branch_create':
        if (args['retrieval_summary'] === '') sink.report('invalid_length', ['retrieval_summary']);
        break;
      case 'aipcs_branch_assign_records': {
        const seen = new Set<string>();
        (args['records'] as JsonValue[]).forEach((target, index) => {
          const key = `${String(obj(target)['entity_name'])}/${String(obj(target)['record_id'])}`;
          if (seen.has(key)) sink.report('invalid_value', ['records', index]);
          seen.add(key);
        });
        break;
      }
      case 'aipcs_maintenance_scan': {
        const scans = args['scan_types'];
        if (Array.isArray(scans)) {
          scans.forEach((scan, index) => {
            if (scans.indexOf(scan) !== index) sink.report('invalid_value', ['scan_types', index]);
          });
        }
        break;
      }
      default:
        break;
    }
    return value;
  };
}

const REFINERS: ReadonlyMap<SchemaNode, Refiner> = new Map<SchemaNode, Refiner>([
  ...MANIFEST_REFINERS,
  [RECORD_VALUES_SCHEMA, refineRecordValues],
  [RECORD_UPDATES_SCHEMA, refineRecordValues],
  [SEARCH_FILTERS_SCHEMA, refineFilters],
  [BRANCH_UPDATES_SCHEMA, refineBranchUpdates],
  ...TOOL_NAMES.map((name): [SchemaNode, Refiner] => [INPUT_SCHEMAS[name], toolRefiner(name)]),
]);

// ---------------------------------------------------------------------------
// Lifecycle precedence checks (contract §5.6–§5.9), on the arguments as sent.

const LIFECYCLE_IDENTIFIER_TOOLS: ReadonlySet<ToolName> = new Set<ToolName>([
  'aipcs_service_inspect',
  'aipcs_service_design',
  'aipcs_service_materialise',
  'aipcs_service_evolve',
]);
const RETIRED_CHECK_TOOLS: ReadonlySet<ToolName> = new Set<ToolName>(['aipcs_service_design', 'aipcs_service_materialise', 'aipcs_service_evolve']);

function lifecyclePrecedence(tool: ToolName, args: JsonObject): AipcsError | undefined {
  if (LIFECYCLE_IDENTIFIER_TOOLS.has(tool) && Object.hasOwn(args, 'service_id')) {
    const value = args['service_id'];
    if (typeof value !== 'string' || !isCanonicalUuid(trimContractString(value))) return new AipcsError('invalid_identifier');
  }
  if (RETIRED_CHECK_TOOLS.has(tool) && containsRetiredKey(args)) return new AipcsError('retired_field');
  if (tool === 'aipcs_service_design' || tool === 'aipcs_service_evolve') {
    const schema = args['schema'];
    if (isJsonObject(schema ?? null)) {
      const version = obj(schema)['manifest_version'];
      if (equalsManifestVersion(version, 1)) return new AipcsError('legacy_import_required');
      if (!equalsManifestVersion(version, 2)) {
        return new AipcsError(tool === 'aipcs_service_design' ? 'manifest_version_unsupported_design' : 'manifest_version_unsupported_lifecycle');
      }
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Commands from normalised arguments (the schema guarantees every shape).

const text = (args: JsonObject, key: string): string => args[key] as string;
const textOrNull = (args: JsonObject, key: string): string | null => (typeof args[key] === 'string' ? (args[key] as string) : null);
const small = (args: JsonObject, key: string): number => Number(args[key] as bigint);
const big = (args: JsonObject, key: string): bigint => args[key] as bigint;
const page = (args: JsonObject): PageRequest => ({ limit: small(args, 'limit'), cursor: textOrNull(args, 'cursor') });

function branchScope(args: JsonObject): { branchId: string; role: BranchRole } | null {
  const branchId = textOrNull(args, 'branch_id');
  const role = textOrNull(args, 'branch_role');
  return branchId === null || role === null ? null : { branchId, role: role as BranchRole };
}

function branchUpdates(updates: JsonObject): BranchUpdates {
  const out: { -readonly [K in keyof BranchUpdates]: BranchUpdates[K] } = {};
  if (Object.hasOwn(updates, 'title')) out.title = text(updates, 'title');
  if (Object.hasOwn(updates, 'intent')) out.intent = text(updates, 'intent');
  if (Object.hasOwn(updates, 'branch_type')) out.branchType = textOrNull(updates, 'branch_type');
  if (Object.hasOwn(updates, 'parent_branch_id')) out.parentBranchId = textOrNull(updates, 'parent_branch_id');
  if (Object.hasOwn(updates, 'status')) out.status = text(updates, 'status') as BranchStatus;
  if (Object.hasOwn(updates, 'retrieval_summary')) out.retrievalSummary = textOrNull(updates, 'retrieval_summary');
  return out;
}

function buildCommand(tool: ToolName, args: JsonObject): ToolCommand {
  switch (tool) {
    case 'aipcs_server_info':
      return { tool };
    case 'aipcs_service_seed':
      return {
        tool,
        domainName: text(args, 'domain_name'),
        domainClass: text(args, 'domain_class'),
        intentDescription: text(args, 'intent_description'),
        idempotencyKey: text(args, 'idempotency_key'),
      };
    case 'aipcs_service_list':
    case 'aipcs_bootstrap':
      return { tool, limit: small(args, 'limit') };
    case 'aipcs_service_inspect':
      return { tool, serviceId: text(args, 'service_id') };
    case 'aipcs_service_design':
      return { tool, serviceId: text(args, 'service_id'), manifest: manifestFromNormalised(args['schema'] as JsonValue), idempotencyKey: text(args, 'idempotency_key') };
    case 'aipcs_service_materialise':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        expectedServiceRevision: big(args, 'expected_service_revision'),
        expectedSchemaVersion: small(args, 'expected_schema_version'),
        idempotencyKey: text(args, 'idempotency_key'),
      };
    case 'aipcs_service_evolve':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        expectedServiceRevision: big(args, 'expected_service_revision'),
        expectedSchemaVersion: small(args, 'expected_schema_version'),
        idempotencyKey: text(args, 'idempotency_key'),
        manifest: manifestFromNormalised(args['schema'] as JsonValue),
      };
    case 'aipcs_record_create':
      return { tool, serviceId: text(args, 'service_id'), entityName: text(args, 'entity_name'), record: obj(args['record']), idempotencyKey: text(args, 'idempotency_key') };
    case 'aipcs_record_get':
      return { tool, serviceId: text(args, 'service_id'), entityName: text(args, 'entity_name'), recordId: text(args, 'record_id') };
    case 'aipcs_record_list':
      return { tool, serviceId: text(args, 'service_id'), entityName: text(args, 'entity_name'), page: page(args), branchScope: branchScope(args) };
    case 'aipcs_record_search':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        entityName: text(args, 'entity_name'),
        page: page(args),
        branchScope: branchScope(args),
        filters: obj(args['filters']),
      };
    case 'aipcs_record_update':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        entityName: text(args, 'entity_name'),
        recordId: text(args, 'record_id'),
        updates: obj(args['updates']),
        expectedRecordVersion: big(args, 'expected_record_version'),
        idempotencyKey: text(args, 'idempotency_key'),
      };
    case 'aipcs_record_delete':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        entityName: text(args, 'entity_name'),
        recordId: text(args, 'record_id'),
        expectedRecordVersion: big(args, 'expected_record_version'),
        idempotencyKey: text(args, 'idempotency_key'),
      };
    case 'aipcs_record_history':
      return { tool, serviceId: text(args, 'service_id'), entityName: text(args, 'entity_name'), recordId: textOrNull(args, 'record_id'), page: page(args) };
    case 'aipcs_service_summary':
      return { tool, serviceId: text(args, 'service_id'), sample: small(args, 'sample') };
    case 'aipcs_branch_create':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        slug: text(args, 'slug'),
        title: text(args, 'title'),
        intent: text(args, 'intent'),
        branchType: textOrNull(args, 'branch_type'),
        parentBranchId: textOrNull(args, 'parent_branch_id'),
        retrievalSummary: textOrNull(args, 'retrieval_summary'),
        idempotencyKey: text(args, 'idempotency_key'),
      };
    case 'aipcs_branch_list':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        status: textOrNull(args, 'status') as BranchStatus | null,
        branchType: textOrNull(args, 'branch_type'),
        parentBranchId: textOrNull(args, 'parent_branch_id'),
        page: page(args),
      };
    case 'aipcs_branch_update': {
      const updates = obj(args['updates']);
      return {
        tool,
        serviceId: text(args, 'service_id'),
        branchId: text(args, 'branch_id'),
        expectedBranchRevision: big(args, 'expected_branch_revision'),
        updates: branchUpdates(updates),
        suppliedUpdates: updates,
        idempotencyKey: text(args, 'idempotency_key'),
      };
    }
    case 'aipcs_branch_assign_records':
      return {
        tool,
        serviceId: text(args, 'service_id'),
        branchId: text(args, 'branch_id'),
        role: text(args, 'role') as BranchRole,
        operation: text(args, 'operation') as 'assign' | 'unassign',
        records: (args['records'] as JsonValue[]).map((raw) => {
          const target = obj(raw);
          return { entityName: text(target, 'entity_name'), recordId: text(target, 'record_id'), expectedRecordVersion: big(target, 'expected_record_version') };
        }),
        idempotencyKey: text(args, 'idempotency_key'),
      };
    case 'aipcs_maintenance_scan': {
      const scans = args['scan_types'];
      return {
        tool,
        serviceId: text(args, 'service_id'),
        entityName: textOrNull(args, 'entity_name'),
        branchId: textOrNull(args, 'branch_id'),
        scanTypes: Array.isArray(scans) ? (scans as MaintenanceScanType[]) : [...MAINTENANCE_SCAN_TYPES],
        staleAfterDays: small(args, 'stale_after_days'),
        lowConfidenceBelow: Number(args['low_confidence_below'] as number | bigint),
        limit: small(args, 'limit'),
      };
    }
  }
}

export interface ParseOptions {
  /** Tools this process exposes (the stateless profile exposes server info only). */
  readonly available?: ReadonlySet<string>;
}

/**
 * Validates one `tools/call` into a typed command, or the exact contract
 * failure: `unsupported_operation` for an unknown or unavailable tool,
 * lifecycle precedence codes, else `validation_failed` with issues.
 */
export function parseToolRequest(name: string, args: JsonObject, options: ParseOptions = {}): RequestParse {
  if (!isToolName(name) || (options.available !== undefined && !options.available.has(name))) {
    return { ok: false, error: new AipcsError('unsupported_operation') };
  }
  if (name === 'aipcs_server_info') {
    // Any argument at all is refused, without issues (contract §3.3).
    return Object.keys(args).length > 0 ? { ok: false, error: validationFailed() } : { ok: true, command: { tool: name } };
  }
  const precedence = lifecyclePrecedence(name, args);
  if (precedence) return { ok: false, error: precedence };
  const overflow = nonFinitePath(args);
  if (overflow !== null) {
    const sink = new IssueSink();
    sink.report('invalid_value', overflow);
    return { ok: false, error: validationFailed(sink.toIssues()) };
  }
  if ((name === 'aipcs_service_design' && designsLaterVersion(args)) || (name === 'aipcs_service_evolve' && skipsAVersion(args))) {
    // One issue at `request`, whatever else the manifest holds (contract §5.7 step 4, §5.9).
    const sink = new IssueSink();
    sink.report('invalid_value', []);
    return { ok: false, error: validationFailed(sink.toIssues()) };
  }
  const schema = INPUT_SCHEMAS[name];
  const sink = new IssueSink();
  const normalised = checkValue(schema, args, [] as PathSegment[], sink, { root: schema, refiners: REFINERS });
  if (sink.total > 0) return { ok: false, error: validationFailed(sink.toIssues()) };
  return { ok: true, command: buildCommand(name, obj(normalised)) };
}

/**
 * A design whose manifest is not a first version: an integer schema_version
 * other than 1, or a non-empty history. A schema_version that is no integer
 * is a type error, reported at its own path as evolve does.
 */
function designsLaterVersion(args: JsonObject): boolean {
  const schema = args['schema'];
  if (!isJsonObject(schema)) return false;
  const history = schema['migration_history'];
  const version = schema['schema_version'];
  return (typeof version === 'bigint' && version !== 1n) || (Array.isArray(history) && history.length > 0);
}

/** An evolve whose target schema_version is not expected_schema_version + 1 (both valid integers). */
function skipsAVersion(args: JsonObject): boolean {
  const schema = args['schema'];
  const expected = args['expected_schema_version'];
  // Out of its own range, expected_schema_version is reported at its own path.
  if (!isJsonObject(schema) || typeof expected !== 'bigint' || expected < 1n || expected > 64n) return false;
  const target = schema['schema_version'];
  return typeof target === 'bigint' && target !== expected + 1n;
}

/**
 * Where the arguments hold a number JSON text can carry but binary64 cannot
 * (`1e400` reads as Infinity, as in Python); no tool accepts one anywhere.
 */
function nonFinitePath(value: JsonValue): PathSegment[] | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : [];
  if (value === null || typeof value !== 'object') return null;
  // The path is built only on the way back from a find: a clean request allocates nothing.
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = nonFinitePath(value[index] as JsonValue);
      if (found !== null) return [index, ...found];
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    const found = nonFinitePath(value[key] as JsonValue);
    if (found !== null) return [key, ...found];
  }
  return null;
}

/** The typed form of `parseToolRequest` for callers that already dispatched on the name. */
export function parseToolRequestAs<T extends ToolName>(name: T, args: JsonObject, options: ParseOptions = {}): RequestParse<CommandFor<T>> {
  return parseToolRequest(name, args, options) as RequestParse<CommandFor<T>>;
}
