// The ManifestV2 JSON Schema `$defs` of Appendix A, mirroring contract
// §4.1–§4.7 field for field. The tool catalogue publishes them and the
// manifest validator checks against the very same objects; the cross-field
// rules the schema cannot express live in validate-manifest.ts.

import type { SchemaNode } from '../schema-check.js';
import { ATTRIBUTE_TYPES, IDENTIFIER_PATTERN, MANIFEST_BOUNDS as B, RETRIEVAL_MODES } from './types.js';

const ident: SchemaNode = { type: 'string', pattern: IDENTIFIER_PATTERN };
/** A relationship's or an index's name: an identifier of at most `maxLength` characters. */
const shortIdent = (maxLength: number): SchemaNode => ({ type: 'string', maxLength, pattern: IDENTIFIER_PATTERN });
const ref = (name: string): SchemaNode => ({ $ref: `#/$defs/${name}` });
const nullable = (node: SchemaNode): SchemaNode => ({ anyOf: [node, { type: 'null' }], default: null });

export const ATTRIBUTE_DEFINITION_SCHEMA: SchemaNode = {
  title: 'AttributeDefinition',
  description:
    'One field. Search filters domain fields by exact value, except: retrieval_mode "annotation" (string only) keeps prose out of search, ' +
    'and a string_list is filterable (by one member) only with retrieval_mode "membership". datetime values need a zero UTC offset.',
  type: 'object',
  additionalProperties: false,
  properties: {
    name: ident,
    type: { type: 'string', enum: [...ATTRIBUTE_TYPES] },
    required: { type: 'boolean', default: false },
    primary_key: { type: 'boolean', default: false },
    description: nullable({ type: 'string', maxLength: B.maxAttributeDescriptionLength }),
    allowed_values: nullable({
      type: 'array',
      items: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'number' }, { type: 'boolean' }] },
      minItems: 1,
      maxItems: B.maxAllowedValues,
    }),
    retrieval_mode: nullable({ type: 'string', enum: [...RETRIEVAL_MODES] }),
  },
  required: ['name', 'type'],
};

export const ENTITY_DEFINITION_SCHEMA: SchemaNode = {
  title: 'EntityDefinition',
  description:
    'One record type. attributes must include the six server-managed fields, declared exactly so and nothing more: ' +
    'id (uuid, required, primary_key), owner_id (string, required), created_at (datetime, required), ' +
    'updated_at (datetime, required), created_via (string, required), record_version (integer, required); ' +
    'all other attributes are domain fields. Records carry only domain fields; the server fills the others.',
  type: 'object',
  additionalProperties: false,
  properties: {
    name: ident,
    attributes: { type: 'array', items: ref('AttributeDefinition'), minItems: B.minAttributes, maxItems: B.maxAttributes },
    description: nullable({ type: 'string', maxLength: B.maxEntityDescriptionLength }),
  },
  required: ['name', 'attributes'],
};

export const RELATIONSHIP_ENDPOINT_SCHEMA: SchemaNode = {
  title: 'RelationshipEndpoint',
  type: 'object',
  additionalProperties: false,
  properties: { entity: ident, field: ident },
  required: ['entity', 'field'],
};

export const RELATIONSHIP_DEFINITION_SCHEMA: SchemaNode = {
  title: 'RelationshipDefinition',
  type: 'object',
  additionalProperties: false,
  properties: {
    name: shortIdent(B.maxRelationshipNameLength),
    from: ref('RelationshipEndpoint'),
    to: ref('RelationshipEndpoint'),
    on_delete: { type: 'string', const: 'restrict' },
  },
  required: ['name', 'from', 'to', 'on_delete'],
};

export const INDEX_DEFINITION_SCHEMA: SchemaNode = {
  title: 'IndexDefinition',
  type: 'object',
  additionalProperties: false,
  properties: {
    name: shortIdent(B.maxIndexNameLength),
    entity: ident,
    fields: { type: 'array', items: ident, minItems: 1, maxItems: B.maxIndexFields },
    unique: { type: 'boolean', default: false },
  },
  required: ['name', 'entity', 'fields'],
};

export const DISCOVERY_FACET_SCHEMA: SchemaNode = {
  title: 'DiscoveryFacet',
  type: 'object',
  additionalProperties: false,
  properties: { entity: ident, field: ident },
  required: ['entity', 'field'],
};

export const MIGRATION_HISTORY_ENTRY_SCHEMA: SchemaNode = {
  title: 'MigrationHistoryEntry',
  type: 'object',
  additionalProperties: false,
  properties: {
    from_schema_version: { type: 'integer', minimum: 1 },
    to_schema_version: { type: 'integer', minimum: 1 },
    operations: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: B.maxHistoryOperationLength },
      minItems: 1,
      maxItems: B.maxHistoryOperations,
    },
  },
  required: ['from_schema_version', 'to_schema_version', 'operations'],
};

export const MANIFEST_V2_SCHEMA: SchemaNode = {
  title: 'ManifestV2',
  description:
    'A complete manifest. Design takes schema_version 1 with no migration_history. Evolve takes the successor of the current manifest: ' +
    'schema_version one higher, the current migration_history plus one entry, every current entity, relationship and index kept, ' +
    'every current attribute kept in place with its name, type, required and primary_key, new attributes optional and appended ' +
    'at the end, new relationships only from new entities.',
  type: 'object',
  additionalProperties: false,
  properties: {
    manifest_version: { const: 2 },
    schema_version: { type: 'integer', minimum: 1, maximum: B.maxSchemaVersion },
    entities: { type: 'array', items: ref('EntityDefinition'), minItems: B.minEntities, maxItems: B.maxEntities },
    relationships: { type: 'array', items: ref('RelationshipDefinition'), maxItems: B.maxRelationships, default: [] },
    indices: { type: 'array', items: ref('IndexDefinition'), maxItems: B.maxIndices, default: [] },
    query_patterns: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: B.maxQueryPatternLength },
      maxItems: B.maxQueryPatterns,
      default: [],
    },
    discovery_facets: { type: 'array', items: ref('DiscoveryFacet'), maxItems: B.maxDiscoveryFacets, default: [] },
    retrieval_guidance: nullable({ type: 'string', maxLength: B.maxRetrievalGuidanceLength }),
    migration_history: { type: 'array', items: ref('MigrationHistoryEntry'), maxItems: B.maxHistoryEntries, default: [] },
  },
  required: ['manifest_version', 'schema_version', 'entities'],
};

/** The `$defs` block a schema embedding `{"$ref": "#/$defs/ManifestV2"}` carries. */
export const MANIFEST_DEFS: Readonly<Record<string, SchemaNode>> = {
  AttributeDefinition: ATTRIBUTE_DEFINITION_SCHEMA,
  DiscoveryFacet: DISCOVERY_FACET_SCHEMA,
  EntityDefinition: ENTITY_DEFINITION_SCHEMA,
  IndexDefinition: INDEX_DEFINITION_SCHEMA,
  ManifestV2: MANIFEST_V2_SCHEMA,
  MigrationHistoryEntry: MIGRATION_HISTORY_ENTRY_SCHEMA,
  RelationshipDefinition: RELATIONSHIP_DEFINITION_SCHEMA,
  RelationshipEndpoint: RELATIONSHIP_ENDPOINT_SCHEMA,
};
