// One-way conversion of a legacy manifest-v1 document into manifest v2
// (contract §4.12). Library-only: no MCP tool accepts v1, nothing is stored
// as v1, and nothing here creates state. Every v1 key is converted, explicitly
// discarded, or the document is refused; nothing is dropped silently.

import { isJsonObject, type JsonObject, type JsonValue } from '../../../common/json.js';
import { AipcsError } from '../error-codes.js';
import { makeIssue, MAX_ISSUES, type Issue, type IssueCode, type PathSegment } from '../issues.js';
import { setMember, trimContractString } from '../schema-check.js';
import { RETIRED_FIELD_NAMES } from '../retired-fields.js';
import { SERVER_MANAGED_FIELDS, serverManagedAttribute, type ManifestV2 } from './types.js';
import { manifestToJson, validateManifest } from './validate-manifest.js';

export type LegacyWarningCode =
  | 'legacy_type_normalised'
  | 'server_managed_field_normalised'
  | 'server_managed_field_injected'
  | 'legacy_schema_version_reset'
  | 'legacy_migration_history_discarded'
  | 'legacy_fields_discarded';

export interface LegacyWarning {
  readonly code: LegacyWarningCode;
  readonly message: string;
}

export interface LegacyImportProvenance {
  readonly source: 'legacy_v1';
  readonly source_manifest_version: 1;
  readonly importer: 'aipcs';
}

export interface LegacyImportResult {
  readonly manifest: ManifestV2;
  readonly provenance: LegacyImportProvenance;
  readonly warnings: readonly LegacyWarning[];
  /** Top-level v1 keys removed by the conversion, sorted. */
  readonly discarded_fields: readonly string[];
}

export type LegacyConversion = { readonly ok: true; readonly value: LegacyImportResult } | { readonly ok: false; readonly error: AipcsError };

const CONVERTED_KEYS: ReadonlySet<string> = new Set([
  'manifest_version',
  'schema_version',
  'entities',
  'relationships',
  'indices',
  'query_patterns',
  'discovery_facets',
  'retrieval_guidance',
]);
const DISCARDED_KEYS: ReadonlySet<string> = new Set([...RETIRED_FIELD_NAMES, 'migration_history']);
const ENTITY_KEYS: ReadonlySet<string> = new Set(['name', 'description', 'attributes', 'fields']);
const ATTRIBUTE_KEYS: ReadonlySet<string> = new Set([
  'name',
  'type',
  'data_type',
  'required',
  'primary_key',
  'description',
  'allowed_values',
  'retrieval_mode',
]);
const TYPE_ALIASES: ReadonlyMap<string, string> = new Map([['float', 'number']]);

/** A legacy type name trimmed, with its v2 name for an alias; anything not a string as it is. */
function legacyType(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const trimmed = trimContractString(value);
  return TYPE_ALIASES.get(trimmed) ?? trimmed;
}

const isTypeAlias = (value: unknown): boolean => typeof value === 'string' && TYPE_ALIASES.has(trimContractString(value));

/**
 * `manifest_version` equality as the reference's intake applies it: the
 * integer 1, the float 1.0 and `true` all compare equal to 1.
 */
export function equalsManifestVersion(value: JsonValue | undefined, version: 1 | 2): boolean {
  if (typeof value === 'bigint') return value === BigInt(version);
  if (typeof value === 'number') return value === version;
  if (typeof value === 'boolean') return version === 1 && value;
  return false;
}

class LegacyProblems {
  readonly issues: Issue[] = [];
  unrecognised = false;

  add(code: IssueCode, path: readonly PathSegment[]): void {
    if (code === 'legacy_field_unrecognised') this.unrecognised = true;
    if (this.issues.length < MAX_ISSUES) this.issues.push(makeIssue(code, path));
  }
}

function list(source: JsonObject, key: string): JsonValue[] | undefined | null {
  if (!Object.hasOwn(source, key)) return undefined;
  const value = source[key] as JsonValue;
  return Array.isArray(value) ? value : null;
}

function copyPresent(target: JsonObject, source: JsonObject, key: string, as: string = key): void {
  if (Object.hasOwn(source, key)) setMember(target, as, source[key] as JsonValue);
}

interface ConvertedEntity {
  readonly value: JsonObject;
  readonly attributeNames: readonly string[];
}

function convertEntity(raw: JsonValue, index: number, problems: LegacyProblems, warnings: LegacyWarning[]): ConvertedEntity | undefined {
  const path: PathSegment[] = ['entities', index];
  if (!isJsonObject(raw)) {
    problems.add('invalid_value', path);
    return undefined;
  }
  for (const key of Object.keys(raw)) if (!ENTITY_KEYS.has(key)) problems.add('legacy_field_unrecognised', [...path, key]);
  const hasAttributes = Object.hasOwn(raw, 'attributes');
  const hasFields = Object.hasOwn(raw, 'fields');
  if (hasAttributes && hasFields) {
    // Two attribute lists cannot both be converted; which one was meant is ambiguous.
    problems.add('invalid_value', [...path, 'fields']);
    return undefined;
  }
  if (!hasAttributes && !hasFields) {
    problems.add('field_required', [...path, 'attributes']);
    return undefined;
  }
  const listKey = hasAttributes ? 'attributes' : 'fields';
  const attributes = raw[listKey];
  if (!Array.isArray(attributes)) {
    problems.add('invalid_value', [...path, listKey]);
    return undefined;
  }
  if (attributes.length > 64) {
    problems.add('invalid_length', [...path, listKey]);
    return undefined;
  }
  const entityName = typeof raw['name'] === 'string' ? trimContractString(raw['name']) : '';
  const converted: JsonValue[] = [];
  const names: string[] = [];
  attributes.forEach((rawAttribute, position) => {
    const attributePath: PathSegment[] = [...path, listKey, position];
    if (!isJsonObject(rawAttribute)) {
      problems.add('invalid_value', attributePath);
      return;
    }
    for (const key of Object.keys(rawAttribute)) if (!ATTRIBUTE_KEYS.has(key)) problems.add('legacy_field_unrecognised', [...attributePath, key]);
    const rawName = rawAttribute['name'];
    if (typeof rawName !== 'string') {
      problems.add(rawName === undefined ? 'field_required' : 'invalid_value', [...attributePath, 'name']);
      return;
    }
    const name = trimContractString(rawName);
    const hasType = Object.hasOwn(rawAttribute, 'type');
    const hasDataType = Object.hasOwn(rawAttribute, 'data_type');
    // Both given: they must name the same type once trimmed and `float` read as `number`.
    if (hasType && hasDataType && legacyType(rawAttribute['type']) !== legacyType(rawAttribute['data_type'])) {
      problems.add('invalid_value', [...attributePath, 'data_type']);
      return;
    }
    const rawType = legacyType(hasType ? rawAttribute['type'] : rawAttribute['data_type']);
    if (typeof rawType !== 'string') {
      problems.add(rawType === undefined ? 'field_required' : 'invalid_value', [...attributePath, hasDataType && !hasType ? 'data_type' : 'type']);
      return;
    }
    if (isTypeAlias(rawAttribute['type']) || isTypeAlias(rawAttribute['data_type'])) {
      warnings.push({ code: 'legacy_type_normalised', message: `Converted the legacy float type of ${entityName}.${name} to number.` });
    }
    names.push(name);
    const managed = serverManagedAttribute(name);
    if (managed) {
      const differs =
        rawType !== managed.type ||
        (rawAttribute['required'] ?? false) !== true ||
        (rawAttribute['primary_key'] ?? name === 'id') !== managed.primary_key ||
        ['description', 'allowed_values', 'retrieval_mode'].some((key) => (rawAttribute[key] ?? null) !== null);
      if (differs) {
        warnings.push({
          code: 'server_managed_field_normalised',
          message: `Normalised the legacy server-managed field ${entityName}.${name} to its v2 declaration.`,
        });
      }
      converted.push({ name: managed.name, type: managed.type, required: true, primary_key: managed.primary_key });
      return;
    }
    const attribute: JsonObject = { name, type: rawType };
    for (const key of ['required', 'primary_key', 'description', 'allowed_values', 'retrieval_mode']) copyPresent(attribute, rawAttribute, key);
    converted.push(attribute);
  });
  for (const field of SERVER_MANAGED_FIELDS) {
    if (names.includes(field.name)) continue;
    converted.push({ name: field.name, type: field.type, required: true, primary_key: field.primary_key });
    names.push(field.name);
    warnings.push({ code: 'server_managed_field_injected', message: `Injected the server-managed field ${entityName}.${field.name}.` });
  }
  const value: JsonObject = {};
  copyPresent(value, raw, 'name');
  setMember(value, 'attributes', converted);
  copyPresent(value, raw, 'description');
  return { value, attributeNames: names };
}

function convertFacets(raw: JsonValue[], entities: readonly ConvertedEntity[], problems: LegacyProblems): { facets: JsonValue[]; ambiguous: boolean } {
  const declaring = new Map<string, string[]>();
  for (const entity of entities) {
    const entityName = typeof entity.value['name'] === 'string' ? trimContractString(entity.value['name']) : '';
    for (const name of new Set(entity.attributeNames)) declaring.set(name, [...(declaring.get(name) ?? []), entityName]);
  }
  let ambiguous = false;
  const facets = raw.map((facet, index): JsonValue => {
    if (isJsonObject(facet)) return facet;
    if (typeof facet !== 'string') {
      problems.add('invalid_value', ['discovery_facets', index]);
      return facet;
    }
    const text = trimContractString(facet);
    const dot = text.indexOf('.');
    if (dot >= 0) return { entity: text.slice(0, dot), field: text.slice(dot + 1) };
    const owners = declaring.get(text) ?? [];
    if (owners.length !== 1) {
      ambiguous = true;
      problems.add('invalid_value', ['discovery_facets', index]);
      return facet;
    }
    return { entity: owners[0] as string, field: text };
  });
  return { facets, ambiguous };
}

/**
 * Converts one legacy v1 document. On success the manifest is a validated
 * v2 manifest with `schema_version: 1` and empty history; on failure the
 * error says why the document cannot be converted.
 */
export function convertLegacyV1(input: JsonValue): LegacyConversion {
  const fail = (error: AipcsError): LegacyConversion => ({ ok: false, error });
  if (!isJsonObject(input)) return fail(new AipcsError('legacy_not_object'));
  if (!equalsManifestVersion(input['manifest_version'], 1)) return fail(new AipcsError('legacy_version_unsupported'));

  const keys = Object.keys(input);
  if (keys.some((key) => !CONVERTED_KEYS.has(key) && !DISCARDED_KEYS.has(key))) {
    return fail(new AipcsError('legacy_field_unrecognised', { issues: [makeIssue('legacy_field_unrecognised', 'legacy_manifest')] }));
  }
  const discarded = keys.filter((key) => DISCARDED_KEYS.has(key)).sort();

  const relationships = list(input, 'relationships');
  if (relationships === null) return fail(new AipcsError('legacy_malformed', { issues: [makeIssue('invalid_value', ['relationships'])] }));
  if (relationships !== undefined && relationships.length > 0) {
    return fail(new AipcsError('legacy_relationship_ambiguous', { issues: [makeIssue('legacy_relationship_ambiguous', 'relationships')] }));
  }

  const warnings: LegacyWarning[] = [];
  const schemaVersion = Object.hasOwn(input, 'schema_version') ? input['schema_version'] : 1n;
  if (typeof schemaVersion !== 'bigint' || schemaVersion < 1n) return fail(new AipcsError('legacy_schema_version_invalid'));
  if (schemaVersion !== 1n) {
    warnings.push({
      code: 'legacy_schema_version_reset',
      message: 'Legacy schema_version was reset to 1; the importer does not invent v2 migration history.',
    });
  }
  if (discarded.includes('migration_history')) {
    warnings.push({
      code: 'legacy_migration_history_discarded',
      message: 'Legacy migration history was discarded; the importer does not invent v2 history.',
    });
  }

  const problems = new LegacyProblems();
  const rawEntities = list(input, 'entities');
  if (rawEntities === null) problems.add('invalid_value', ['entities']);
  // Bound the walk: a v2 manifest holds at most 32 entities of 64 attributes.
  if (rawEntities && rawEntities.length > 32) problems.add('invalid_length', ['entities']);
  const entities: ConvertedEntity[] = [];
  if (rawEntities && rawEntities.length <= 32) {
    rawEntities.forEach((raw, index) => {
      const converted = convertEntity(raw, index, problems, warnings);
      if (converted) entities.push(converted);
    });
  }
  const rawFacets = list(input, 'discovery_facets');
  if (rawFacets === null) problems.add('invalid_value', ['discovery_facets']);
  if (rawFacets && rawFacets.length > 64) problems.add('invalid_length', ['discovery_facets']);
  const facets = rawFacets && rawFacets.length <= 64 ? convertFacets(rawFacets, entities, problems) : { facets: [], ambiguous: false };
  if (problems.issues.length > 0) {
    const situation = problems.unrecognised ? 'legacy_field_unrecognised' : facets.ambiguous ? 'legacy_facet_ambiguous' : 'legacy_malformed';
    return fail(new AipcsError(situation, { issues: problems.issues }));
  }

  const document: JsonObject = {
    manifest_version: 2n,
    schema_version: 1n,
    entities: entities.map((entity) => entity.value),
    relationships: [],
  };
  copyPresent(document, input, 'indices');
  copyPresent(document, input, 'query_patterns');
  setMember(document, 'discovery_facets', facets.facets);
  copyPresent(document, input, 'retrieval_guidance');
  setMember(document, 'migration_history', []);

  const validated = validateManifest(document);
  if (!validated.ok) return fail(new AipcsError('validation_failed', { issues: validated.issues }));
  if (discarded.length > 0) {
    warnings.push({ code: 'legacy_fields_discarded', message: 'Private-v1-only fields were removed during one-way import.' });
  }
  return {
    ok: true,
    value: {
      manifest: validated.manifest,
      provenance: { source: 'legacy_v1', source_manifest_version: 1, importer: 'aipcs' },
      warnings,
      discarded_fields: discarded,
    },
  };
}

/** The conversion result as a JSON document, keys in the order of contract §4.12. */
export function legacyImportResultToJson(result: LegacyImportResult): JsonObject {
  return {
    manifest: manifestToJson(result.manifest),
    provenance: { source: 'legacy_v1', source_manifest_version: 1n, importer: 'aipcs' },
    warnings: result.warnings.map((warning) => ({ code: warning.code, message: warning.message })),
    discarded_fields: [...result.discarded_fields],
  };
}
