// The manifest-v2 document (contract §4) as validated, normalised values:
// every key present, defaults materialised, strings trimmed. Keys keep the
// document's snake_case because these types are the wire document itself.
// Only validate-manifest.ts builds them; everything else reads them.

export const ATTRIBUTE_TYPES = ['string', 'integer', 'number', 'boolean', 'datetime', 'uuid', 'string_list'] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

export const RETRIEVAL_MODES = ['annotation', 'membership'] as const;
export type RetrievalMode = (typeof RETRIEVAL_MODES)[number];

/**
 * An allowed value keeps its JSON type: `1` (bigint) and `1.0` (number) are
 * distinct members, as are `true` and `1`.
 */
export type AllowedValue = string | bigint | number | boolean;

export interface AttributeDefinition {
  readonly name: string;
  readonly type: AttributeType;
  readonly required: boolean;
  readonly primary_key: boolean;
  readonly description: string | null;
  readonly allowed_values: readonly AllowedValue[] | null;
  readonly retrieval_mode: RetrievalMode | null;
}

export interface EntityDefinition {
  readonly name: string;
  readonly attributes: readonly AttributeDefinition[];
  readonly description: string | null;
}

export interface RelationshipEndpoint {
  readonly entity: string;
  readonly field: string;
}

export interface RelationshipDefinition {
  readonly name: string;
  readonly from: RelationshipEndpoint;
  readonly to: RelationshipEndpoint;
  readonly on_delete: 'restrict';
}

export interface IndexDefinition {
  readonly name: string;
  readonly entity: string;
  readonly fields: readonly string[];
  readonly unique: boolean;
}

export interface DiscoveryFacet {
  readonly entity: string;
  readonly field: string;
}

export interface MigrationHistoryEntry {
  readonly from_schema_version: number;
  readonly to_schema_version: number;
  readonly operations: readonly string[];
}

export interface ManifestV2 {
  readonly manifest_version: 2;
  readonly schema_version: number;
  readonly entities: readonly EntityDefinition[];
  readonly relationships: readonly RelationshipDefinition[];
  readonly indices: readonly IndexDefinition[];
  readonly query_patterns: readonly string[];
  readonly discovery_facets: readonly DiscoveryFacet[];
  readonly retrieval_guidance: string | null;
  readonly migration_history: readonly MigrationHistoryEntry[];
}

/** The six server-managed attributes every entity declares (contract §4.2). */
export const SERVER_MANAGED_FIELDS: readonly {
  readonly name: string;
  readonly type: AttributeType;
  readonly required: true;
  readonly primary_key: boolean;
}[] = [
  { name: 'id', type: 'uuid', required: true, primary_key: true },
  { name: 'owner_id', type: 'string', required: true, primary_key: false },
  { name: 'created_at', type: 'datetime', required: true, primary_key: false },
  { name: 'updated_at', type: 'datetime', required: true, primary_key: false },
  { name: 'created_via', type: 'string', required: true, primary_key: false },
  { name: 'record_version', type: 'integer', required: true, primary_key: false },
];

export const SERVER_MANAGED_FIELD_NAMES: ReadonlySet<string> = new Set(SERVER_MANAGED_FIELDS.map((field) => field.name));

export function isServerManagedField(name: string): boolean {
  return SERVER_MANAGED_FIELD_NAMES.has(name);
}

/** The exact v2 declaration of a server-managed attribute, with defaults. */
export function serverManagedAttribute(name: string): AttributeDefinition | undefined {
  const field = SERVER_MANAGED_FIELDS.find((candidate) => candidate.name === name);
  if (!field) return undefined;
  return {
    name: field.name,
    type: field.type,
    required: true,
    primary_key: field.primary_key,
    description: null,
    allowed_values: null,
    retrieval_mode: null,
  };
}

/** Identifier rule of contract §4.1 (entity, attribute, facet, index, relationship names). */
export const IDENTIFIER_PATTERN = '^[a-z][a-z0-9_]{0,62}$';
export const IDENTIFIER = new RegExp(IDENTIFIER_PATTERN);

export function isIdentifier(value: unknown): value is string {
  return typeof value === 'string' && IDENTIFIER.test(value);
}

/** Manifest bounds (contract §4.1, §10). */
export const MANIFEST_BOUNDS = {
  maxSchemaVersion: 65,
  minEntities: 1,
  maxEntities: 32,
  minAttributes: 6,
  maxAttributes: 64,
  maxRelationships: 128,
  maxIndices: 128,
  maxIndexFields: 8,
  maxQueryPatterns: 32,
  maxQueryPatternLength: 240,
  maxDiscoveryFacets: 64,
  maxRetrievalGuidanceLength: 2000,
  maxEntityDescriptionLength: 1000,
  maxAttributeDescriptionLength: 500,
  maxAllowedValues: 32,
  maxAllowedValueLength: 96,
  maxHistoryEntries: 64,
  maxHistoryOperations: 32,
  maxHistoryOperationLength: 240,
  maxRelationshipNameLength: 48,
  maxIndexNameLength: 48,
  /**
   * Bytes of the manifest's canonical JSON (ours, decision in
   * decisions-aipcs-contract.md "Page byte budget"): the export's service
   * line, which carries it, is at most 1 MiB (operations §5.7), and the rest
   * of that line takes under 8 KiB.
   */
  maxCanonicalBytes: 1024 * 1024 - 8 * 1024,
} as const;
