// Turns the contract's derived model into the physical layout a backend must
// build: columns in attribute order, relationships as foreign keys, manifest
// indexes, and which domain fields need equality or membership indexes for
// search. Backends build tables from this, never from the manifest document.

import { deriveModel } from '../contract/manifest/derived-model.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import type { ColumnType, StoreLayout } from './ports.js';

const COLUMN_TYPES: Record<string, ColumnType> = {
  string: 'text',
  integer: 'integer',
  number: 'real',
  boolean: 'boolean',
  datetime: 'datetime',
  uuid: 'uuid',
  string_list: 'string_list',
};

export function storeLayoutOf(manifest: ManifestV2): StoreLayout {
  const model = deriveModel(manifest);
  return {
    entities: model.entities.map((entity) => ({
      name: entity.name,
      columns: entity.columns.map((field) => ({ name: field.name, type: COLUMN_TYPES[field.type] ?? 'text', notNull: field.required })),
      foreignKeys: entity.references.map((reference) => ({ name: reference.name, column: reference.sourceField, targetEntity: reference.targetEntity })),
      indexes: entity.indices.map((index) => ({ name: index.name, columns: [...index.fields], unique: index.unique })),
      equalityFields: entity.filterableFields.filter((field) => field.filterMode === 'exact').map((field) => field.name),
      // Members of every list are kept indexed, so that an evolve that turns
      // membership retrieval on needs no backfill.
      listFields: entity.domainFields.filter((field) => field.type === 'string_list').map((field) => field.name),
    })),
  };
}
