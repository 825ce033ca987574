// Strict manifest-v2 validation (contract §4): the Appendix A schema first,
// then every cross-field rule as a refiner on the schema node it belongs to
// (attribute, entity, index, history entry, the whole manifest). As in the
// reference, a node whose rules break gets one issue at the node itself
// (`schema` for the cross-reference rules, §4.8). Pure: no state is read;
// the caller decides where in a request the manifest sits (its base path).

import { canonicalJsonByteLength, isJsonObject, type JsonObject, type JsonValue } from '../../../common/json.js';
import { IssueSink, type Issue, type PathSegment } from '../issues.js';
import { checkValue, type Refiner, type SchemaNode } from '../schema-check.js';
import {
  ATTRIBUTE_DEFINITION_SCHEMA,
  ENTITY_DEFINITION_SCHEMA,
  INDEX_DEFINITION_SCHEMA,
  MANIFEST_DEFS,
  MANIFEST_V2_SCHEMA,
  MIGRATION_HISTORY_ENTRY_SCHEMA,
} from './manifest-schema.js';
import {
  MANIFEST_BOUNDS,
  SERVER_MANAGED_FIELDS,
  isServerManagedField,
  type AllowedValue,
  type AttributeDefinition,
  type AttributeType,
  type EntityDefinition,
  type ManifestV2,
  type RetrievalMode,
} from './types.js';
import { codePointLength } from '../../../common/code-points.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const EXACT_FLOAT_INTEGER = 2n ** 53n;

// The refiners below run on normalised values the schema already accepted, so
// their shapes are known; these accessors only narrow the static types.
function obj(value: JsonValue | undefined): JsonObject {
  return isJsonObject(value ?? null) ? (value as JsonObject) : {};
}
function arr(value: JsonValue | undefined): JsonValue[] {
  return Array.isArray(value) ? value : [];
}
function str(value: JsonValue | undefined): string {
  return typeof value === 'string' ? value : '';
}

/** Whether an allowed value's JSON type fits the attribute type (contract §4.3). */
export function allowedValueFitsType(value: JsonValue, type: AttributeType): boolean {
  switch (type) {
    case 'string':
    case 'string_list':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
    case 'number':
      if (typeof value === 'bigint') return value >= -EXACT_FLOAT_INTEGER && value <= EXACT_FLOAT_INTEGER;
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'datetime':
    case 'uuid':
      return false;
  }
}

/** Identity of an allowed value by (JSON type, value): `1`, `1.0` and `true` differ. */
export function allowedValueKey(value: AllowedValue): string {
  if (typeof value === 'bigint') return `i:${value}`;
  // -0.0 equals 0.0 as a float member; String() already maps both to "0".
  if (typeof value === 'number') return `f:${String(value)}`;
  if (typeof value === 'boolean') return `b:${value}`;
  return `s:${value}`;
}

const refineAttribute: Refiner = (value, path, sink) => {
  const attribute = obj(value);
  const type = str(attribute['type']) as AttributeType;
  if (attribute['primary_key'] === true && attribute['required'] !== true) sink.report('invalid_value', [...path, 'primary_key']);
  const allowed = attribute['allowed_values'];
  if (Array.isArray(allowed)) {
    const seen = new Set<string>();
    allowed.forEach((item, index) => {
      const itemPath = [...path, 'allowed_values', index];
      if (!allowedValueFitsType(item, type)) {
        sink.report('invalid_value', itemPath);
      } else if (typeof item === 'string' && (item.length === 0 || codePointLength(item) > MANIFEST_BOUNDS.maxAllowedValueLength)) {
        sink.report('invalid_length', itemPath);
      } else if (typeof item === 'string' && item.includes('\u0000')) {
        sink.report('invalid_value', itemPath);
      } else {
        const key = allowedValueKey(item as AllowedValue);
        if (seen.has(key)) sink.report('invalid_value', itemPath);
        seen.add(key);
      }
    });
  }
  const mode = attribute['retrieval_mode'];
  if ((mode === 'membership' && type !== 'string_list') || (mode === 'annotation' && type !== 'string')) {
    sink.report('invalid_value', [...path, 'retrieval_mode']);
  }
  return value;
};

const refineEntity: Refiner = (value, path, sink) => {
  const attributes = arr(obj(value)['attributes']).map(obj);
  const attributesPath = [...path, 'attributes'];
  const firstIndex = new Map<string, number>();
  attributes.forEach((attribute, index) => {
    const name = str(attribute['name']);
    if (firstIndex.has(name)) sink.report('invalid_value', [...attributesPath, index, 'name']);
    else firstIndex.set(name, index);
  });
  let missingReported = false;
  for (const expected of SERVER_MANAGED_FIELDS) {
    const index = firstIndex.get(expected.name);
    if (index === undefined) {
      // One issue for the list however many declarations are missing.
      if (!missingReported) sink.report('invalid_value', attributesPath);
      missingReported = true;
      continue;
    }
    const actual = attributes[index] as JsonObject;
    const mismatch = (
      [
        ['type', actual['type'] !== expected.type],
        ['required', actual['required'] !== true],
        ['primary_key', actual['primary_key'] !== expected.primary_key],
        ['description', actual['description'] !== null],
        ['allowed_values', actual['allowed_values'] !== null],
        ['retrieval_mode', actual['retrieval_mode'] !== null],
      ] as const
    ).find(([, differs]) => differs);
    if (mismatch) sink.report('invalid_value', [...attributesPath, index, mismatch[0]]);
  }
  attributes.forEach((attribute, index) => {
    // A primary key without `required` was already reported on the attribute
    // itself, and a server-managed declaration by the exact-declaration check
    // above (or as a duplicate name): each broken rule is one issue.
    if (attribute['primary_key'] === true && attribute['required'] === true && !isServerManagedField(str(attribute['name']))) {
      sink.report('invalid_value', [...attributesPath, index, 'primary_key']);
    }
  });
  return value;
};

const refineIndex: Refiner = (value, path, sink) => {
  const seen = new Set<string>();
  arr(obj(value)['fields']).forEach((field, index) => {
    if (seen.has(str(field))) sink.report('invalid_value', [...path, 'fields', index]);
    seen.add(str(field));
  });
  return value;
};

const refineHistoryEntry: Refiner = (value, path, sink) => {
  const entry = obj(value);
  const from = entry['from_schema_version'];
  const to = entry['to_schema_version'];
  if (typeof from === 'bigint' && typeof to === 'bigint' && to <= from) sink.report('invalid_value', [...path, 'to_schema_version']);
  return value;
};

function isSqliteReserved(name: string): boolean {
  return name.toLowerCase().startsWith('sqlite_');
}

function reportLaterDuplicates(items: readonly string[], report: (index: number) => void): void {
  const seen = new Set<string>();
  items.forEach((item, index) => {
    if (seen.has(item)) report(index);
    seen.add(item);
  });
}

const refineManifest: Refiner = (value, path, sink) => {
  const manifest = obj(value);
  const at = (...rest: PathSegment[]): PathSegment[] => [...path, ...rest];

  // Migration history: exactly the continuous chain 1→2, …, (n−1)→n.
  const schemaVersion = manifest['schema_version'] as bigint;
  const history = arr(manifest['migration_history']).map(obj);
  if (BigInt(history.length) !== schemaVersion - 1n) {
    sink.report('invalid_value', at('migration_history'));
  } else {
    history.forEach((entry, index) => {
      if (entry['from_schema_version'] !== BigInt(index + 1)) sink.report('invalid_value', at('migration_history', index, 'from_schema_version'));
      else if (entry['to_schema_version'] !== BigInt(index + 2)) sink.report('invalid_value', at('migration_history', index, 'to_schema_version'));
    });
  }

  const entities = arr(manifest['entities']).map(obj);
  const relationships = arr(manifest['relationships']).map(obj);
  const indices = arr(manifest['indices']).map(obj);
  const facets = arr(manifest['discovery_facets']).map(obj);

  const entityNames = entities.map((entity) => str(entity['name']));
  reportLaterDuplicates(entityNames, (index) => sink.report('invalid_value', at('entities', index, 'name')));
  entityNames.forEach((name, index) => {
    if (isSqliteReserved(name)) sink.report('invalid_value', at('entities', index, 'name'));
  });
  reportLaterDuplicates(
    relationships.map((relationship) => str(relationship['name'])),
    (index) => sink.report('invalid_value', at('relationships', index, 'name')),
  );
  const indexNames = indices.map((index) => str(index['name']));
  reportLaterDuplicates(indexNames, (index) => sink.report('invalid_value', at('indices', index, 'name')));
  const entityNameSet = new Set(entityNames);
  indexNames.forEach((name, index) => {
    if (isSqliteReserved(name) || entityNameSet.has(name)) sink.report('invalid_value', at('indices', index, 'name'));
  });
  reportLaterDuplicates(
    indices.map((index) => JSON.stringify([index['entity'], index['fields'], index['unique']])),
    (index) => sink.report('invalid_value', at('indices', index)),
  );

  const endpointKey = (endpoint: JsonObject): string => JSON.stringify([endpoint['entity'], endpoint['field']]);
  const duplicateDefinitions = new Set<number>();
  reportLaterDuplicates(
    relationships.map((relationship) => JSON.stringify([endpointKey(obj(relationship['from'])), endpointKey(obj(relationship['to']))])),
    (index) => {
      duplicateDefinitions.add(index);
      sink.report('invalid_value', at('relationships', index));
    },
  );
  const sources = new Set<string>();
  relationships.forEach((relationship, index) => {
    const key = endpointKey(obj(relationship['from']));
    if (sources.has(key) && !duplicateDefinitions.has(index)) sink.report('invalid_value', at('relationships', index, 'from'));
    sources.add(key);
  });
  reportLaterDuplicates(
    facets.map((facet) => endpointKey(facet)),
    (index) => sink.report('invalid_value', at('discovery_facets', index)),
  );

  // References resolve against the first entity of each name.
  const byName = new Map<string, Map<string, JsonObject>>();
  for (const entity of entities) {
    const name = str(entity['name']);
    if (byName.has(name)) continue;
    const attributes = new Map<string, JsonObject>();
    for (const attribute of arr(entity['attributes']).map(obj)) {
      const attributeName = str(attribute['name']);
      if (!attributes.has(attributeName)) attributes.set(attributeName, attribute);
    }
    byName.set(name, attributes);
  }

  facets.forEach((facet, index) => {
    const attributes = byName.get(str(facet['entity']));
    if (!attributes) sink.report('invalid_value', at('discovery_facets', index, 'entity'));
    else if (!attributes.has(str(facet['field']))) sink.report('invalid_value', at('discovery_facets', index, 'field'));
  });

  indices.forEach((index, position) => {
    const attributes = byName.get(str(index['entity']));
    if (!attributes) {
      sink.report('invalid_value', at('indices', position, 'entity'));
      return;
    }
    arr(index['fields']).forEach((field, fieldIndex) => {
      const attribute = attributes.get(str(field));
      if (!attribute || attribute['type'] === 'string_list') sink.report('invalid_value', at('indices', position, 'fields', fieldIndex));
    });
  });

  const requiredEdges: { readonly index: number; readonly source: string; readonly target: string }[] = [];
  relationships.forEach((relationship, index) => {
    const from = obj(relationship['from']);
    const to = obj(relationship['to']);
    const sourceAttributes = byName.get(str(from['entity']));
    const targetAttributes = byName.get(str(to['entity']));
    let valid = true;
    const fail = (...rest: PathSegment[]): void => {
      valid = false;
      sink.report('invalid_value', at('relationships', index, ...rest));
    };
    if (!sourceAttributes) {
      fail('from', 'entity');
    } else {
      const source = sourceAttributes.get(str(from['field']));
      if (!source || source['primary_key'] === true || isServerManagedField(str(from['field'])) || source['type'] !== 'uuid') fail('from', 'field');
    }
    if (!targetAttributes) fail('to', 'entity');
    else if (str(to['field']) !== 'id' || !targetAttributes.has('id')) fail('to', 'field');
    if (valid && from['entity'] === to['entity'] && from['field'] === to['field']) fail('to');
    // A repeated definition is already reported; its edge would report the same path again as a cycle.
    if (valid && !duplicateDefinitions.has(index) && sourceAttributes?.get(str(from['field']))?.['required'] === true) {
      requiredEdges.push({ index, source: str(from['entity']), target: str(to['entity']) });
    }
  });

  // The graph of required references must be acyclic; report each edge on a cycle.
  const adjacency = new Map<string, string[]>();
  for (const edge of requiredEdges) adjacency.set(edge.source, [...(adjacency.get(edge.source) ?? []), edge.target]);
  const reaches = (start: string, goal: string): boolean => {
    const seen = new Set<string>([start]);
    const queue = [start];
    while (queue.length > 0) {
      const node = queue.shift() as string;
      if (node === goal) return true;
      for (const next of adjacency.get(node) ?? []) {
        if (!seen.has(next)) {
          seen.add(next);
          queue.push(next);
        }
      }
    }
    return false;
  };
  for (const edge of requiredEdges) {
    if (reaches(edge.target, edge.source)) sink.report('invalid_value', at('relationships', edge.index));
  }
  return value;
};

const refineManifestAtNode = atNode(refineManifest);

/**
 * Within every part's bound a manifest can still reach megabytes: then no
 * export could carry it and its answers would pass an MCP client's line
 * limit. Checked once every other rule of the manifest holds; the sink may
 * already hold issues of arguments checked before it, which do not count.
 */
const refineManifestSize: Refiner = (value, path, sink, raw) => {
  const before = sink.total;
  const refined = refineManifestAtNode(value, path, sink, raw);
  if (sink.total === before && canonicalJsonByteLength(manifestToJson(manifestFromNormalised(refined))) > MANIFEST_BOUNDS.maxCanonicalBytes) {
    sink.report('invalid_length', [...path]);
  }
  return refined;
};

/**
 * One issue at the refined node, with the code of its first broken rule: the
 * reference checks these rules in each model's own validator, which stops at
 * the first failure and is reported at the model (contract §4.8: `schema` for
 * the manifest's cross-reference rules). A client that matches on an issue's
 * path sees the same path from both servers. The rules above still name the
 * exact member; only their first report's code is kept.
 */
function atNode(refine: Refiner): Refiner {
  return (value, path, sink, raw) => {
    const broken = new IssueSink();
    const refined = refine(value, path, broken, raw);
    const first = broken.raw[0];
    if (first !== undefined) sink.report(first.code, path);
    return refined;
  };
}

const NODE_REFINERS: readonly (readonly [SchemaNode, Refiner])[] = [
  [ATTRIBUTE_DEFINITION_SCHEMA, atNode(refineAttribute)],
  [ENTITY_DEFINITION_SCHEMA, atNode(refineEntity)],
  [INDEX_DEFINITION_SCHEMA, atNode(refineIndex)],
  [MIGRATION_HISTORY_ENTRY_SCHEMA, atNode(refineHistoryEntry)],
];

/** The cross-field rules, keyed by the `$defs` node they refine. */
export const MANIFEST_REFINERS: ReadonlyMap<SchemaNode, Refiner> = new Map<SchemaNode, Refiner>([
  ...NODE_REFINERS,
  [MANIFEST_V2_SCHEMA, refineManifestSize],
]);

/** The same rules without the manifest's own byte bound (see ManifestValidationOptions.sizeBound). */
const MANIFEST_REFINERS_UNSIZED: ReadonlyMap<SchemaNode, Refiner> = new Map<SchemaNode, Refiner>([...NODE_REFINERS, [MANIFEST_V2_SCHEMA, refineManifestAtNode]]);

const MANIFEST_ROOT: SchemaNode = { $defs: MANIFEST_DEFS };

export type ManifestValidation = { readonly ok: true; readonly manifest: ManifestV2 } | { readonly ok: false; readonly issues: readonly Issue[] };

export interface ManifestValidationOptions {
  /** Where the manifest sits in the request, e.g. `['schema']`; issue paths start there. */
  readonly path?: readonly PathSegment[];
  /**
   * Hold the manifest to MANIFEST_BOUNDS.maxCanonicalBytes (default). An
   * import leaves it out: the artefact's 1 MiB line already bounds the
   * manifest it carries (operations §5.7), and refusing a line the format
   * allows would refuse a valid artefact.
   */
  readonly sizeBound?: boolean;
}

/**
 * Validates a complete manifest-v2 document. On success the manifest is the
 * normalised document (trimmed, defaults materialised); on failure the
 * issues (at most 32) say which rule broke where.
 */
export function validateManifest(input: JsonValue, options: ManifestValidationOptions = {}): ManifestValidation {
  const sink = new IssueSink();
  const refiners = options.sizeBound === false ? MANIFEST_REFINERS_UNSIZED : MANIFEST_REFINERS;
  const normalised = checkValue(MANIFEST_V2_SCHEMA, input, options.path ?? [], sink, { root: MANIFEST_ROOT, refiners });
  if (sink.total > 0) return { ok: false, issues: sink.toIssues() };
  return { ok: true, manifest: manifestFromNormalised(normalised) };
}

/**
 * Builds the typed manifest from a normalised value that passed the schema
 * and its refiners. Calling it on anything else is a bug.
 */
export function manifestFromNormalised(value: JsonValue): ManifestV2 {
  const manifest = obj(value);
  const entities: EntityDefinition[] = arr(manifest['entities']).map((raw) => {
    const entity = obj(raw);
    const attributes: AttributeDefinition[] = arr(entity['attributes']).map((rawAttribute) => {
      const attribute = obj(rawAttribute);
      const allowed = attribute['allowed_values'];
      return {
        name: str(attribute['name']),
        type: str(attribute['type']) as AttributeType,
        required: attribute['required'] === true,
        primary_key: attribute['primary_key'] === true,
        description: typeof attribute['description'] === 'string' ? attribute['description'] : null,
        allowed_values: Array.isArray(allowed) ? (allowed as AllowedValue[]) : null,
        retrieval_mode: typeof attribute['retrieval_mode'] === 'string' ? (attribute['retrieval_mode'] as RetrievalMode) : null,
      };
    });
    return { name: str(entity['name']), attributes, description: typeof entity['description'] === 'string' ? entity['description'] : null };
  });
  const endpoint = (raw: JsonValue | undefined) => ({ entity: str(obj(raw)['entity']), field: str(obj(raw)['field']) });
  return {
    manifest_version: 2,
    schema_version: Number(manifest['schema_version']),
    entities,
    relationships: arr(manifest['relationships']).map((raw) => {
      const relationship = obj(raw);
      return { name: str(relationship['name']), from: endpoint(relationship['from']), to: endpoint(relationship['to']), on_delete: 'restrict' as const };
    }),
    indices: arr(manifest['indices']).map((raw) => {
      const index = obj(raw);
      return { name: str(index['name']), entity: str(index['entity']), fields: arr(index['fields']).map(str), unique: index['unique'] === true };
    }),
    query_patterns: arr(manifest['query_patterns']).map(str),
    discovery_facets: arr(manifest['discovery_facets']).map(endpoint),
    retrieval_guidance: typeof manifest['retrieval_guidance'] === 'string' ? manifest['retrieval_guidance'] : null,
    migration_history: arr(manifest['migration_history']).map((raw) => {
      const entry = obj(raw);
      return {
        from_schema_version: Number(entry['from_schema_version']),
        to_schema_version: Number(entry['to_schema_version']),
        operations: arr(entry['operations']).map(str),
      };
    }),
  };
}

/**
 * The normalised echo of contract §4.9: every key present in contract order,
 * integers as bigint (so they render as integers), allowed values keeping
 * their JSON type. This is also the manifest's fingerprint input.
 */
export function manifestToJson(manifest: ManifestV2): JsonObject {
  const endpoint = (value: { readonly entity: string; readonly field: string }): JsonObject => ({ entity: value.entity, field: value.field });
  return {
    manifest_version: 2n,
    schema_version: BigInt(manifest.schema_version),
    entities: manifest.entities.map((entity) => ({
      name: entity.name,
      attributes: entity.attributes.map((attribute) => ({
        name: attribute.name,
        type: attribute.type,
        required: attribute.required,
        primary_key: attribute.primary_key,
        description: attribute.description,
        allowed_values: attribute.allowed_values === null ? null : [...attribute.allowed_values],
        retrieval_mode: attribute.retrieval_mode,
      })),
      description: entity.description,
    })),
    relationships: manifest.relationships.map((relationship) => ({
      name: relationship.name,
      from: endpoint(relationship.from),
      to: endpoint(relationship.to),
      on_delete: relationship.on_delete,
    })),
    indices: manifest.indices.map((index) => ({ name: index.name, entity: index.entity, fields: [...index.fields], unique: index.unique })),
    query_patterns: [...manifest.query_patterns],
    discovery_facets: manifest.discovery_facets.map(endpoint),
    retrieval_guidance: manifest.retrieval_guidance,
    migration_history: manifest.migration_history.map((entry) => ({
      from_schema_version: BigInt(entry.from_schema_version),
      to_schema_version: BigInt(entry.to_schema_version),
      operations: [...entry.operations],
    })),
  };
}
