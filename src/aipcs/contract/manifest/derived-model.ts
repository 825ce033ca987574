// The model storage adapters and the core derive everything from: per entity
// its columns and storage types, domain fields, filter modes, annotation
// fields, facets, relationships, indexes and the maintenance signals it can
// support. A pure function of a validated manifest; never the raw document.

import {
  isServerManagedField,
  type AllowedValue,
  type AttributeDefinition,
  type AttributeType,
  type IndexDefinition,
  type ManifestV2,
} from './types.js';

/**
 * Backend-neutral storage classes; each adapter maps them (SQLite: TEXT,
 * INTEGER, REAL, INTEGER 0/1, JSON TEXT).
 */
export type StorageType = 'text' | 'int64' | 'float64' | 'boolean' | 'string_list';

export const STORAGE_TYPES: Readonly<Record<AttributeType, StorageType>> = {
  string: 'text',
  datetime: 'text',
  uuid: 'text',
  integer: 'int64',
  number: 'float64',
  boolean: 'boolean',
  string_list: 'string_list',
};

/** How a search filter matches a field (contract §6.8); `null` = not filterable. */
export type FilterMode = 'exact' | 'membership';

/** Maintenance scan types in the input enum order of contract §8.3. */
export const MAINTENANCE_SCAN_TYPES = [
  'expired',
  'stale',
  'low_confidence',
  'superseded',
  'missing_authority',
  'unbranched',
  'duplicate_authority',
  'blob_candidate',
] as const;
export type MaintenanceScanType = (typeof MAINTENANCE_SCAN_TYPES)[number];

/** The 13 recognised authority names, in the fixed order of contract §4.3. */
export const AUTHORITY_FIELD_GROUPS = {
  provenance: ['provenance_type', 'provenance_note', 'provenance_source'],
  source: ['source_ref', 'source_kind'],
  scope: ['scope', 'scope_ref'],
  confidence: ['confidence'],
  status: ['status'],
  validity: ['valid_from', 'valid_until'],
  supersession: ['supersedes', 'superseded_by'],
} as const;
export const AUTHORITY_FIELD_NAMES: readonly string[] = Object.values(AUTHORITY_FIELD_GROUPS).flat();

export interface DerivedField {
  readonly name: string;
  readonly type: AttributeType;
  readonly storageType: StorageType;
  readonly required: boolean;
  readonly primaryKey: boolean;
  readonly serverManaged: boolean;
  /** Column position: the attribute's index in the manifest. */
  readonly position: number;
  readonly filterMode: FilterMode | null;
  readonly annotation: boolean;
  readonly allowedValues: readonly AllowedValue[] | null;
  /** Whether (entity, field) is a declared discovery facet. */
  readonly facet: boolean;
}

export interface DerivedFacet {
  readonly entity: string;
  readonly field: string;
  /** `list_members` counts each member of a string_list, whatever its retrieval mode. */
  readonly valueShape: 'scalar' | 'list_members';
}

export interface DerivedRelationship {
  readonly name: string;
  readonly sourceEntity: string;
  readonly sourceField: string;
  readonly targetEntity: string;
  /** Always `id`; delete and update are restricted and checked immediately. */
  readonly targetField: string;
  readonly required: boolean;
}

/** Declared conventional authority fields (summary §8.2); never an inference. */
export interface AuthorityAvailability {
  readonly provenanceFields: readonly string[];
  readonly sourceFields: readonly string[];
  readonly scopeFields: readonly string[];
  readonly confidenceField: 'confidence' | null;
  readonly statusField: 'status' | null;
  readonly validityFields: readonly string[];
  readonly supersessionFields: readonly string[];
}

/** What the maintenance scan can evaluate for one entity (contract §8.3). */
export interface MaintenanceSignals {
  /** Scan types available for this entity, alphabetical. */
  readonly available: readonly MaintenanceScanType[];
  /** `string` annotation fields, ascending by name (the first oversized one is reported). */
  readonly blobCandidateFields: readonly string[];
  /** `provenance_source` then `source_ref`, when declared as string or uuid. */
  readonly duplicateAuthorityFields: readonly string[];
  readonly expiryField: 'valid_until' | null;
  readonly confidenceField: 'confidence' | null;
  /** Superseded signals available, in the order `status`, `superseded_by`. */
  readonly supersededSignals: readonly ('status' | 'superseded_by')[];
  /** Declared recognised authority names (any type), in the §4.3 order. */
  readonly authorityFields: readonly string[];
}

export interface DerivedEntity {
  readonly name: string;
  readonly description: string | null;
  /** Every attribute in manifest order: the physical column layout. */
  readonly columns: readonly DerivedField[];
  /** Domain fields in ascending name order, the order of record `fields`. */
  readonly domainFields: readonly DerivedField[];
  /** Filterable domain fields in ascending name order. */
  readonly filterableFields: readonly DerivedField[];
  readonly annotationFields: readonly string[];
  /** Declared facets on domain fields, ascending by field. */
  readonly facets: readonly DerivedFacet[];
  /** Relationships whose source is this entity. */
  readonly references: readonly DerivedRelationship[];
  /** Relationships whose target is this entity (deletes are restricted by them). */
  readonly referencedBy: readonly DerivedRelationship[];
  readonly indices: readonly IndexDefinition[];
  readonly uniqueIndices: readonly IndexDefinition[];
  readonly authority: AuthorityAvailability;
  readonly maintenance: MaintenanceSignals;
}

export interface DerivedModel {
  readonly schemaVersion: number;
  /** Entities ascending by name. */
  readonly entities: readonly DerivedEntity[];
  /** Relationships ascending by name. */
  readonly relationships: readonly DerivedRelationship[];
  /** Indexes ascending by name. */
  readonly indices: readonly IndexDefinition[];
  /** Facets on domain fields ordered by (entity, field), as the summary reports them. */
  readonly facets: readonly DerivedFacet[];
  readonly queryPatterns: readonly string[];
  readonly retrievalGuidance: string | null;
}

function ascending<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

function filterModeOf(attribute: AttributeDefinition): FilterMode | null {
  if (isServerManagedField(attribute.name)) return null;
  if (attribute.type === 'string_list') return attribute.retrieval_mode === 'membership' ? 'membership' : null;
  if (attribute.type === 'string' && attribute.retrieval_mode === 'annotation') return null;
  return 'exact';
}

function maintenanceOf(fields: ReadonlyMap<string, DerivedField>, annotationFields: readonly string[]): MaintenanceSignals {
  const typeOf = (name: string): AttributeType | undefined => fields.get(name)?.type;
  const duplicateAuthorityFields = ['provenance_source', 'source_ref'].filter((name) => typeOf(name) === 'string' || typeOf(name) === 'uuid');
  const expiryField = typeOf('valid_until') === 'datetime' ? 'valid_until' : null;
  const confidenceField = typeOf('confidence') === 'integer' || typeOf('confidence') === 'number' ? 'confidence' : null;
  const supersededBy = typeOf('superseded_by');
  const supersededSignals: ('status' | 'superseded_by')[] = [];
  if (typeOf('status') === 'string') supersededSignals.push('status');
  if (supersededBy === 'string' || supersededBy === 'uuid' || supersededBy === 'string_list') supersededSignals.push('superseded_by');
  const authorityFields = AUTHORITY_FIELD_NAMES.filter((name) => fields.has(name));
  const available: MaintenanceScanType[] = ['stale', 'unbranched'];
  if (annotationFields.length > 0) available.push('blob_candidate');
  if (duplicateAuthorityFields.length > 0) available.push('duplicate_authority');
  if (expiryField) available.push('expired');
  if (confidenceField) available.push('low_confidence');
  if (authorityFields.length > 0) available.push('missing_authority');
  if (supersededSignals.length > 0) available.push('superseded');
  return {
    available: available.sort(),
    blobCandidateFields: annotationFields,
    duplicateAuthorityFields,
    expiryField,
    confidenceField,
    supersededSignals,
    authorityFields,
  };
}

function authorityOf(fields: ReadonlyMap<string, DerivedField>): AuthorityAvailability {
  const declared = (names: readonly string[]) => names.filter((name) => fields.has(name));
  return {
    provenanceFields: declared(AUTHORITY_FIELD_GROUPS.provenance),
    sourceFields: declared(AUTHORITY_FIELD_GROUPS.source),
    scopeFields: declared(AUTHORITY_FIELD_GROUPS.scope),
    confidenceField: fields.has('confidence') ? 'confidence' : null,
    statusField: fields.has('status') ? 'status' : null,
    validityFields: declared(AUTHORITY_FIELD_GROUPS.validity),
    supersessionFields: declared(AUTHORITY_FIELD_GROUPS.supersession),
  };
}

/** Derives the storage/runtime model of a validated manifest. Deterministic. */
export function deriveModel(manifest: ManifestV2): DerivedModel {
  const facetSet = new Set(manifest.discovery_facets.map((facet) => `${facet.entity}.${facet.field}`));
  const requiredOf = new Map<string, boolean>();
  for (const entity of manifest.entities) {
    for (const attribute of entity.attributes) requiredOf.set(`${entity.name}.${attribute.name}`, attribute.required);
  }
  const relationships: DerivedRelationship[] = ascending(
    manifest.relationships.map((relationship) => ({
      name: relationship.name,
      sourceEntity: relationship.from.entity,
      sourceField: relationship.from.field,
      targetEntity: relationship.to.entity,
      targetField: relationship.to.field,
      required: requiredOf.get(`${relationship.from.entity}.${relationship.from.field}`) === true,
    })),
    (relationship) => relationship.name,
  );
  const indices = ascending(manifest.indices, (index) => index.name);

  const entities: DerivedEntity[] = ascending(manifest.entities, (entity) => entity.name).map((entity) => {
    const columns: DerivedField[] = entity.attributes.map((attribute, position) => ({
      name: attribute.name,
      type: attribute.type,
      storageType: STORAGE_TYPES[attribute.type],
      required: attribute.required,
      primaryKey: attribute.primary_key,
      serverManaged: isServerManagedField(attribute.name),
      position,
      filterMode: filterModeOf(attribute),
      annotation: attribute.type === 'string' && attribute.retrieval_mode === 'annotation',
      allowedValues: attribute.allowed_values,
      facet: facetSet.has(`${entity.name}.${attribute.name}`),
    }));
    const domainFields = ascending(
      columns.filter((field) => !field.serverManaged),
      (field) => field.name,
    );
    const domainByName = new Map(domainFields.map((field) => [field.name, field]));
    const annotationFields = domainFields.filter((field) => field.annotation).map((field) => field.name);
    const entityIndices = indices.filter((index) => index.entity === entity.name);
    return {
      name: entity.name,
      description: entity.description,
      columns,
      domainFields,
      filterableFields: domainFields.filter((field) => field.filterMode !== null),
      annotationFields,
      facets: domainFields
        .filter((field) => field.facet)
        .map((field) => ({ entity: entity.name, field: field.name, valueShape: field.type === 'string_list' ? 'list_members' : 'scalar' }) as const),
      references: relationships.filter((relationship) => relationship.sourceEntity === entity.name),
      referencedBy: relationships.filter((relationship) => relationship.targetEntity === entity.name),
      indices: entityIndices,
      uniqueIndices: entityIndices.filter((index) => index.unique),
      authority: authorityOf(domainByName),
      maintenance: maintenanceOf(domainByName, annotationFields),
    };
  });

  return {
    schemaVersion: manifest.schema_version,
    entities,
    relationships,
    indices,
    facets: entities.flatMap((entity) => entity.facets),
    queryPatterns: manifest.query_patterns,
    retrievalGuidance: manifest.retrieval_guidance,
  };
}

export function findEntity(model: DerivedModel, name: string): DerivedEntity | undefined {
  return model.entities.find((entity) => entity.name === name);
}
