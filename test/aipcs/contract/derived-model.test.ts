import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../src/common/json.js';
import { deriveModel, findEntity, type DerivedModel } from '../../../src/aipcs/contract/manifest/derived-model.js';
import { validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import { attr, entity, manifest } from './builders.js';
import { projectManifest, quickstartManifest } from './fixtures.js';

function derive(document: JsonValue): DerivedModel {
  const result = validateManifest(document);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return deriveModel(result.manifest);
}

describe('derived model', () => {
  const model = derive(projectManifest());
  const decision = findEntity(model, 'decision');
  const project = findEntity(model, 'project');

  it('orders entities, relationships and indexes by name', () => {
    expect(model.schemaVersion).toBe(1);
    expect(model.entities.map((e) => e.name)).toEqual(['decision', 'project']);
    expect(model.indices.map((i) => i.name)).toEqual(['decision_status_idx', 'project_slug_idx']);
    expect(model.relationships).toEqual([
      { name: 'decision_project_fk', sourceEntity: 'decision', sourceField: 'project_id', targetEntity: 'project', targetField: 'id', required: true },
    ]);
  });

  it('keeps the physical column layout in manifest order with storage types', () => {
    expect(project?.columns.map((c) => [c.name, c.storageType, c.required, c.serverManaged, c.position])).toEqual([
      ['id', 'text', true, true, 0],
      ['owner_id', 'text', true, true, 1],
      ['created_at', 'text', true, true, 2],
      ['updated_at', 'text', true, true, 3],
      ['created_via', 'text', true, true, 4],
      ['record_version', 'int64', true, true, 5],
      ['slug', 'text', true, false, 6],
      ['priority', 'int64', false, false, 7],
      ['active', 'boolean', false, false, 8],
    ]);
    expect(project?.columns[0]?.primaryKey).toBe(true);
    expect(decision?.columns.find((c) => c.name === 'confidence')?.storageType).toBe('float64');
    expect(decision?.columns.find((c) => c.name === 'tags')?.storageType).toBe('string_list');
  });

  it('lists domain fields by name with their filter modes', () => {
    expect(decision?.domainFields.map((f) => [f.name, f.filterMode])).toEqual([
      ['confidence', 'exact'],
      ['notes', null],
      ['project_id', 'exact'],
      ['provenance_source', 'exact'],
      ['rationale', null],
      ['source_ref', 'exact'],
      ['status', 'exact'],
      ['superseded_by', 'exact'],
      ['tags', 'membership'],
      ['title', 'exact'],
      ['valid_until', 'exact'],
    ]);
    expect(decision?.filterableFields.map((f) => f.name)).not.toContain('notes');
    expect(decision?.annotationFields).toEqual(['rationale']);
    expect(decision?.domainFields.find((f) => f.name === 'confidence')?.allowedValues).toEqual([0.5, 1, 1n]);
  });

  it('reports domain facets only, with their value shape', () => {
    expect(model.facets).toEqual([
      { entity: 'decision', field: 'status', valueShape: 'scalar' },
      { entity: 'decision', field: 'tags', valueShape: 'list_members' },
    ]);
    expect(project?.facets).toEqual([]);
    expect(project?.columns.find((c) => c.name === 'created_at')?.facet).toBe(true);
  });

  it('links relationships and unique indexes to their entities', () => {
    expect(decision?.references.map((r) => r.name)).toEqual(['decision_project_fk']);
    expect(project?.referencedBy.map((r) => r.name)).toEqual(['decision_project_fk']);
    expect(project?.uniqueIndices.map((i) => i.name)).toEqual(['project_slug_idx']);
    expect(decision?.uniqueIndices).toEqual([]);
  });

  it('declares authority availability and maintenance signals from conventional names and types', () => {
    expect(decision?.authority).toEqual({
      provenanceFields: ['provenance_source'],
      sourceFields: ['source_ref'],
      scopeFields: [],
      confidenceField: 'confidence',
      statusField: 'status',
      validityFields: ['valid_until'],
      supersessionFields: ['superseded_by'],
    });
    expect(decision?.maintenance).toEqual({
      available: ['blob_candidate', 'duplicate_authority', 'expired', 'low_confidence', 'missing_authority', 'stale', 'superseded', 'unbranched'],
      blobCandidateFields: ['rationale'],
      duplicateAuthorityFields: ['provenance_source', 'source_ref'],
      expiryField: 'valid_until',
      confidenceField: 'confidence',
      supersededSignals: ['status', 'superseded_by'],
      authorityFields: ['provenance_source', 'source_ref', 'confidence', 'status', 'valid_until', 'superseded_by'],
    });
    expect(project?.maintenance.available).toEqual(['stale', 'unbranched']);
  });

  it('recognises every conventional authority name, and an integer confidence for the low-confidence scan', () => {
    const names = ['provenance_type', 'provenance_note', 'provenance_source', 'source_ref', 'source_kind', 'scope', 'scope_ref', 'status', 'valid_from', 'valid_until', 'supersedes', 'superseded_by'];
    const claim = findEntity(derive(manifest([entity('claim', [...names.map((name) => attr(name, 'string')), attr('confidence', 'integer')])])), 'claim');
    expect(claim?.authority).toEqual({
      provenanceFields: ['provenance_type', 'provenance_note', 'provenance_source'],
      sourceFields: ['source_ref', 'source_kind'],
      scopeFields: ['scope', 'scope_ref'],
      confidenceField: 'confidence',
      statusField: 'status',
      validityFields: ['valid_from', 'valid_until'],
      supersessionFields: ['supersedes', 'superseded_by'],
    });
    expect(claim?.maintenance.authorityFields).toEqual([...names.slice(0, 7), 'confidence', ...names.slice(7)]);
    expect(claim?.maintenance.confidenceField).toBe('confidence');
    expect(claim?.maintenance.available).toContain('low_confidence');
  });

  it('makes type-conditional scans unavailable when the declared type does not fit', () => {
    const odd = findEntity(
      derive(
        manifest([
          entity('claim', [
            attr('confidence', 'string'),
            attr('valid_until', 'string'),
            attr('status', 'integer'),
            attr('superseded_by', 'string_list'),
            attr('source_ref', 'integer'),
            attr('scope', 'boolean'),
          ]),
        ]),
      ),
      'claim',
    );
    expect(odd?.maintenance).toMatchObject({
      available: ['missing_authority', 'stale', 'superseded', 'unbranched'],
      expiryField: null,
      confidenceField: null,
      duplicateAuthorityFields: [],
      supersededSignals: ['superseded_by'],
    });
    expect(odd?.authority).toMatchObject({ confidenceField: 'confidence', statusField: 'status', scopeFields: ['scope'] });
  });

  it('takes uuid authority references as duplicate-authority signals, and a nullable reference as not required', () => {
    const derived = derive(
      manifest([entity('source'), entity('claim', [attr('provenance_source', 'uuid'), attr('source_ref', 'uuid'), attr('origin_id', 'uuid')])], {
        relationships: [{ name: 'claim_origin_fk', from: { entity: 'claim', field: 'origin_id' }, to: { entity: 'source', field: 'id' }, on_delete: 'restrict' }],
      }),
    );
    const claim = findEntity(derived, 'claim');
    expect(claim?.maintenance.duplicateAuthorityFields).toEqual(['provenance_source', 'source_ref']);
    expect(claim?.maintenance.available).toContain('duplicate_authority');
    expect(derived.relationships.map((relationship) => [relationship.name, relationship.required])).toEqual([['claim_origin_fk', false]]);
    // Server-managed columns are never filterable, whatever their type.
    expect(claim?.columns.filter((column) => column.serverManaged).map((column) => column.filterMode)).toEqual([null, null, null, null, null, null]);
  });

  it('derives the quick-start note', () => {
    const note = findEntity(derive(quickstartManifest()), 'note');
    expect(note?.filterableFields.map((f) => [f.name, f.filterMode])).toEqual([
      ['status', 'exact'],
      ['tags', 'membership'],
      ['title', 'exact'],
    ]);
    expect(note?.annotationFields).toEqual(['detail']);
    expect(note?.maintenance.available).toEqual(['blob_candidate', 'missing_authority', 'stale', 'superseded', 'unbranched']);
  });

  it('facets on a non-membership string_list count members instead of failing', () => {
    const document = manifest([entity('note', [attr('labels', 'string_list')])], { discovery_facets: [{ entity: 'note', field: 'labels' }] });
    expect(derive(document).facets).toEqual([{ entity: 'note', field: 'labels', valueShape: 'list_members' }]);
  });
});
