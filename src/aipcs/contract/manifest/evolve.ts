// Adjacent additive evolution (contract §4.11): decides whether a complete
// target manifest is the accepted successor of the current one and, if so,
// exactly what it adds, including the unique indexes storage must check
// against existing rows before admitting the evolve (decision §12.9).

import { AipcsError } from '../error-codes.js';
import type { AttributeDefinition, AttributeType, EntityDefinition, IndexDefinition, ManifestV2, RelationshipDefinition } from './types.js';
import { allowedValueKey } from './validate-manifest.js';

export type MetadataChangeKind =
  | 'allowed_values_expansion'
  | 'attribute_description'
  | 'discovery_facets'
  | 'entity_description'
  | 'query_patterns'
  | 'retrieval_guidance'
  | 'retrieval_mode';

export interface MetadataChange {
  readonly kind: MetadataChangeKind;
  readonly entity: string | null;
  readonly field: string | null;
}

export interface FieldAddition {
  readonly entity: string;
  readonly field: string;
  readonly type: AttributeType;
  /** Position of the new column in the entity's attribute list. */
  readonly position: number;
}

export interface EvolutionPlan {
  readonly fromSchemaVersion: number;
  readonly toSchemaVersion: number;
  /** New entities (tables), ascending by name. */
  readonly addedEntities: readonly EntityDefinition[];
  /** Appended nullable fields of existing entities: entities ascending, fields in append order. */
  readonly addedFields: readonly FieldAddition[];
  /** New relationships (all sourced from new entities), ascending by name. */
  readonly addedRelationships: readonly RelationshipDefinition[];
  /** New indexes on any entity, ascending by name. */
  readonly addedIndices: readonly IndexDefinition[];
  /**
   * The added unique indexes on entities of the current manifest, which may
   * already hold rows: storage must prove the existing data has no
   * duplicates before admitting.
   */
  readonly addedUniqueIndicesOnExistingEntities: readonly IndexDefinition[];
  /** Non-structural changes, sorted by (kind, entity, field). */
  readonly metadataChanges: readonly MetadataChange[];
}

/** Why a target was refused; for logs and tests, never shown to clients. */
export type EvolutionRejectionReason =
  | 'schema_version_not_adjacent'
  | 'history_not_extended'
  | 'entity_removed'
  | 'attribute_removed'
  | 'attribute_renamed_or_moved'
  | 'attribute_changed'
  | 'required_attribute_added'
  | 'primary_key_attribute_added'
  | 'allowed_values_not_expanded'
  | 'relationship_removed'
  | 'relationship_changed'
  | 'relationship_from_existing_entity'
  | 'index_removed'
  | 'index_changed'
  | 'no_change';

export interface EvolutionRejection {
  readonly reason: EvolutionRejectionReason;
  /** The element concerned (entity, field, relationship or index name), if any. */
  readonly entity?: string;
  readonly field?: string;
  readonly name?: string;
}

export type EvolutionCheck =
  | { readonly ok: true; readonly plan: EvolutionPlan }
  | { readonly ok: false; readonly error: AipcsError; readonly rejection: EvolutionRejection };

function reject(rejection: EvolutionRejection): EvolutionCheck {
  return { ok: false, error: new AipcsError('unsupported_transition'), rejection };
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

function sameHistoryEntry(a: ManifestV2['migration_history'][number], b: ManifestV2['migration_history'][number]): boolean {
  return a.from_schema_version === b.from_schema_version && a.to_schema_version === b.to_schema_version && sameStrings(a.operations, b.operations);
}

function sameRelationship(a: RelationshipDefinition, b: RelationshipDefinition): boolean {
  return (
    a.name === b.name &&
    a.from.entity === b.from.entity &&
    a.from.field === b.from.field &&
    a.to.entity === b.to.entity &&
    a.to.field === b.to.field &&
    a.on_delete === b.on_delete
  );
}

function sameIndex(a: IndexDefinition, b: IndexDefinition): boolean {
  return a.name === b.name && a.entity === b.entity && a.unique === b.unique && sameStrings(a.fields, b.fields);
}

function byName<T extends { readonly name: string }>(items: readonly T[]): Map<string, T> {
  return new Map(items.map((item) => [item.name, item]));
}

function compareChanges(a: MetadataChange, b: MetadataChange): number {
  const left = [a.kind, a.entity ?? '', a.field ?? ''];
  const right = [b.kind, b.entity ?? '', b.field ?? ''];
  for (let i = 0; i < 3; i++) {
    const x = left[i] as string;
    const y = right[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

type AttributeOutcome = { readonly rejected: EvolutionRejectionReason } | { readonly changes: readonly MetadataChange[] };

function compareAttribute(entity: string, current: AttributeDefinition, target: AttributeDefinition): AttributeOutcome {
  if (current.name !== target.name) return { rejected: 'attribute_renamed_or_moved' };
  if (current.type !== target.type || current.required !== target.required || current.primary_key !== target.primary_key) {
    return { rejected: 'attribute_changed' };
  }
  const changes: MetadataChange[] = [];
  const at = (kind: MetadataChangeKind): MetadataChange => ({ kind, entity, field: current.name });
  if (current.description !== target.description) changes.push(at('attribute_description'));
  if (current.retrieval_mode !== target.retrieval_mode) changes.push(at('retrieval_mode'));
  if (current.allowed_values !== null || target.allowed_values !== null) {
    // Only a strict expansion of the (type, value) set is allowed; adding or removing the set is not.
    if (current.allowed_values === null || target.allowed_values === null) return { rejected: 'allowed_values_not_expanded' };
    const before = new Set(current.allowed_values.map(allowedValueKey));
    const after = new Set(target.allowed_values.map(allowedValueKey));
    if ([...before].some((key) => !after.has(key))) return { rejected: 'allowed_values_not_expanded' };
    if (after.size > before.size) changes.push(at('allowed_values_expansion'));
  }
  return { changes };
}

/**
 * Classifies `target` against `current`; both must be valid manifests.
 * Accepts only the adjacent additive successor of contract §4.11, and
 * refuses everything else with `unsupported_transition`.
 */
export function checkEvolution(current: ManifestV2, target: ManifestV2): EvolutionCheck {
  if (target.schema_version !== current.schema_version + 1) return reject({ reason: 'schema_version_not_adjacent' });
  const previous = current.migration_history;
  const next = target.migration_history;
  const last = next[next.length - 1];
  if (
    next.length !== previous.length + 1 ||
    !previous.every((entry, index) => sameHistoryEntry(entry, next[index] as ManifestV2['migration_history'][number])) ||
    last === undefined ||
    last.from_schema_version !== current.schema_version ||
    last.to_schema_version !== target.schema_version
  ) {
    return reject({ reason: 'history_not_extended' });
  }

  const currentEntities = byName(current.entities);
  const targetEntities = byName(target.entities);
  for (const name of currentEntities.keys()) {
    if (!targetEntities.has(name)) return reject({ reason: 'entity_removed', entity: name });
  }
  const newEntityNames = new Set([...targetEntities.keys()].filter((name) => !currentEntities.has(name)));

  const metadataChanges: MetadataChange[] = [];
  const addedFields: FieldAddition[] = [];
  for (const name of [...currentEntities.keys()].sort()) {
    const before = currentEntities.get(name) as EntityDefinition;
    const after = targetEntities.get(name) as EntityDefinition;
    if (before.description !== after.description) metadataChanges.push({ kind: 'entity_description', entity: name, field: null });
    if (after.attributes.length < before.attributes.length) {
      const missing = before.attributes.find((attribute) => !after.attributes.some((candidate) => candidate.name === attribute.name));
      return reject(
        missing ? { reason: 'attribute_removed', entity: name, field: missing.name } : { reason: 'attribute_renamed_or_moved', entity: name },
      );
    }
    for (let index = 0; index < before.attributes.length; index++) {
      const was = before.attributes[index] as AttributeDefinition;
      const now = after.attributes[index] as AttributeDefinition;
      const outcome = compareAttribute(name, was, now);
      if ('rejected' in outcome) {
        const removed = outcome.rejected === 'attribute_renamed_or_moved' && !after.attributes.some((candidate) => candidate.name === was.name);
        return reject({ reason: removed ? 'attribute_removed' : outcome.rejected, entity: name, field: was.name });
      }
      metadataChanges.push(...outcome.changes);
    }
    for (let index = before.attributes.length; index < after.attributes.length; index++) {
      const added = after.attributes[index] as AttributeDefinition;
      if (added.primary_key) return reject({ reason: 'primary_key_attribute_added', entity: name, field: added.name });
      if (added.required) return reject({ reason: 'required_attribute_added', entity: name, field: added.name });
      addedFields.push({ entity: name, field: added.name, type: added.type, position: index });
    }
  }

  if (current.retrieval_guidance !== target.retrieval_guidance) metadataChanges.push({ kind: 'retrieval_guidance', entity: null, field: null });
  if (!sameStrings(current.query_patterns, target.query_patterns)) metadataChanges.push({ kind: 'query_patterns', entity: null, field: null });
  const facetKeys = (manifest: ManifestV2) => manifest.discovery_facets.map((facet) => `${facet.entity}.${facet.field}`);
  if (!sameStrings(facetKeys(current), facetKeys(target))) metadataChanges.push({ kind: 'discovery_facets', entity: null, field: null });

  const targetRelationships = byName(target.relationships);
  for (const relationship of current.relationships) {
    const counterpart = targetRelationships.get(relationship.name);
    if (!counterpart) return reject({ reason: 'relationship_removed', name: relationship.name });
    if (!sameRelationship(relationship, counterpart)) return reject({ reason: 'relationship_changed', name: relationship.name });
  }
  const currentRelationshipNames = new Set(current.relationships.map((relationship) => relationship.name));
  const addedRelationships = target.relationships
    .filter((relationship) => !currentRelationshipNames.has(relationship.name))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const relationship of addedRelationships) {
    if (!newEntityNames.has(relationship.from.entity)) return reject({ reason: 'relationship_from_existing_entity', name: relationship.name });
  }

  const targetIndices = byName(target.indices);
  for (const index of current.indices) {
    const counterpart = targetIndices.get(index.name);
    if (!counterpart) return reject({ reason: 'index_removed', name: index.name });
    if (!sameIndex(index, counterpart)) return reject({ reason: 'index_changed', name: index.name });
  }
  const currentIndexNames = new Set(current.indices.map((index) => index.name));
  const addedIndices = target.indices.filter((index) => !currentIndexNames.has(index.name)).sort((a, b) => (a.name < b.name ? -1 : 1));

  const addedEntities = target.entities.filter((entity) => newEntityNames.has(entity.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
  metadataChanges.sort(compareChanges);
  if (addedEntities.length === 0 && addedFields.length === 0 && addedRelationships.length === 0 && addedIndices.length === 0 && metadataChanges.length === 0) {
    return reject({ reason: 'no_change' });
  }
  return {
    ok: true,
    plan: {
      fromSchemaVersion: current.schema_version,
      toSchemaVersion: target.schema_version,
      addedEntities,
      addedFields,
      addedRelationships,
      addedIndices,
      addedUniqueIndicesOnExistingEntities: addedIndices.filter((index) => index.unique && currentEntities.has(index.entity)),
      metadataChanges,
    },
  };
}
