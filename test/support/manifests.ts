// Manifest fixtures shared by the AIPCS tests: a small two-entity memory
// domain (projects and notes) that exercises every field type, a
// relationship, a unique index, facets and the retrieval modes.

import type { JsonObject } from '../../src/common/json.js';

export const serverManaged = (): JsonObject[] => [
  { name: 'id', type: 'uuid', required: true, primary_key: true },
  { name: 'owner_id', type: 'string', required: true },
  { name: 'created_at', type: 'datetime', required: true },
  { name: 'updated_at', type: 'datetime', required: true },
  { name: 'created_via', type: 'string', required: true },
  { name: 'record_version', type: 'integer', required: true },
];

export function notesManifest(): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: 1n,
    entities: [
      {
        name: 'project',
        description: 'A body of work notes belong to.',
        attributes: [...serverManaged(), { name: 'name', type: 'string', required: true }, { name: 'code', type: 'string' }],
      },
      {
        name: 'note',
        attributes: [
          ...serverManaged(),
          { name: 'title', type: 'string', required: true },
          { name: 'detail', type: 'string', retrieval_mode: 'annotation' },
          { name: 'status', type: 'string', allowed_values: ['draft', 'complete', 'superseded'] },
          { name: 'confidence', type: 'number' },
          { name: 'priority', type: 'integer' },
          { name: 'pinned', type: 'boolean' },
          { name: 'due_at', type: 'datetime' },
          { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
          { name: 'aliases', type: 'string_list' },
          { name: 'project_id', type: 'uuid' },
        ],
      },
    ],
    relationships: [{ name: 'note_project_fk', from: { entity: 'note', field: 'project_id' }, to: { entity: 'project', field: 'id' }, on_delete: 'restrict' }],
    indices: [{ name: 'project_code_unique', entity: 'project', fields: ['code'], unique: true }],
    query_patterns: ['notes by tag'],
    discovery_facets: [{ entity: 'note', field: 'status' }],
    retrieval_guidance: 'Search notes by status or tag.',
  };
}

/** The adjacent successor of notesManifest: a new field, a new entity, a new index. */
export function notesManifestV2(extra: Partial<Record<'uniqueOnTitle', boolean>> = {}): JsonObject {
  const base = notesManifest();
  const entities = base['entities'] as JsonObject[];
  const note = entities[1] as JsonObject;
  return {
    ...base,
    schema_version: 2n,
    entities: [
      entities[0] as JsonObject,
      { ...note, attributes: [...(note['attributes'] as JsonObject[]), { name: 'summary', type: 'string' }] },
      { name: 'person', attributes: [...serverManaged(), { name: 'full_name', type: 'string', required: true }] },
    ],
    indices: [
      ...(base['indices'] as JsonObject[]),
      { name: 'note_priority_idx', entity: 'note', fields: ['priority'] },
      ...(extra.uniqueOnTitle ? [{ name: 'note_title_unique', entity: 'note', fields: ['title'], unique: true }] : []),
    ],
    migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['add note.summary and person'] }],
  };
}

/** Fields named after PostgreSQL's system columns (refused there as column names even quoted), with an index, a reference and a facet on them. */
export function systemColumnNamesManifest(evolved = false): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: evolved ? 2n : 1n,
    entities: [
      { name: 'anchor', attributes: [...serverManaged(), { name: 'xmin', type: 'string', required: true }] },
      {
        name: 'item',
        attributes: [
          ...serverManaged(),
          { name: 'xmin', type: 'string', required: true },
          { name: 'xmax', type: 'integer' },
          { name: 'cmin', type: 'string', allowed_values: ['a', 'b'] },
          { name: 'cmax', type: 'number' },
          { name: 'ctid', type: 'string_list', retrieval_mode: 'membership' },
          { name: 'tableoid', type: 'uuid' },
          ...(evolved ? [{ name: 'note', type: 'string' }] : []),
        ],
      },
    ],
    relationships: [{ name: 'item_anchor_fk', from: { entity: 'item', field: 'tableoid' }, to: { entity: 'anchor', field: 'id' }, on_delete: 'restrict' }],
    indices: [{ name: 'item_xmax_unique', entity: 'item', fields: ['xmax'], unique: true }],
    discovery_facets: [{ entity: 'item', field: 'cmin' }],
    ...(evolved ? { migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['add item.note'] }] } : {}),
  };
}
