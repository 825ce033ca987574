import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { checkEvolution, type EvolutionCheck, type MetadataChange } from '../../../src/aipcs/contract/manifest/evolve.js';
import type { ManifestV2 } from '../../../src/aipcs/contract/manifest/types.js';
import { manifestToJson, validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import { attr, entity, index, relationship } from './builders.js';
import { clone, projectManifest } from './fixtures.js';

function valid(document: JsonValue): ManifestV2 {
  const result = validateManifest(document);
  if (!result.ok) throw new Error(`fixture is not a valid manifest: ${JSON.stringify(result.issues)}`);
  return result.manifest;
}

const CURRENT = valid(projectManifest());

type Doc = JsonObject & { entities: JsonObject[]; relationships: JsonObject[]; indices: JsonObject[] };

/** The adjacent successor document of `current`, changed by `change`; it must itself be valid. */
function successor(change: (doc: Doc) => void, current: ManifestV2 = CURRENT): ManifestV2 {
  const doc = clone(manifestToJson(current)) as Doc;
  doc['schema_version'] = BigInt(current.schema_version + 1);
  doc['migration_history'] = [
    ...(doc['migration_history'] as JsonValue[]),
    { from_schema_version: BigInt(current.schema_version), to_schema_version: BigInt(current.schema_version + 1), operations: ['evolve'] },
  ];
  change(doc);
  return valid(doc);
}

const entityOf = (doc: Doc, name: string): JsonObject & { attributes: JsonObject[] } =>
  doc.entities.find((candidate) => candidate['name'] === name) as JsonObject & { attributes: JsonObject[] };
const attributeOf = (doc: Doc, entityName: string, field: string): JsonObject =>
  entityOf(doc, entityName).attributes.find((candidate) => candidate['name'] === field) as JsonObject;

function plan(result: EvolutionCheck) {
  if (!result.ok) throw new Error(`evolution refused: ${result.rejection.reason}`);
  return result.plan;
}

function refusal(result: EvolutionCheck): string {
  if (result.ok) throw new Error('evolution unexpectedly accepted');
  expect(result.error.code).toBe('unsupported_transition');
  expect(result.error.message).toBe('The service lifecycle transition is not supported.');
  return result.rejection.reason;
}

describe('accepted additive evolutions', () => {
  it('adds a new entity, with required fields and relationships to existing entities and itself', () => {
    const target = successor((doc) => {
      doc.entities.push(entity('comment', [attr('decision_id', 'uuid', { required: true }), attr('reply_to', 'uuid'), attr('body', 'string', { required: true })]));
      doc.relationships.push(relationship('comment_decision_fk', ['comment', 'decision_id'], ['decision', 'id']));
      doc.relationships.push(relationship('comment_reply_fk', ['comment', 'reply_to'], ['comment', 'id']));
      doc.indices.push(index('comment_body_idx', 'comment', ['body'], { unique: true }));
    });
    const result = plan(checkEvolution(CURRENT, target));
    expect(result.fromSchemaVersion).toBe(1);
    expect(result.toSchemaVersion).toBe(2);
    expect(result.addedEntities.map((added) => added.name)).toEqual(['comment']);
    expect(result.addedRelationships.map((added) => added.name)).toEqual(['comment_decision_fk', 'comment_reply_fk']);
    expect(result.addedIndices.map((added) => added.name)).toEqual(['comment_body_idx']);
    expect(result.addedUniqueIndicesOnExistingEntities).toEqual([]);
    expect(result.addedFields).toEqual([]);
    expect(result.metadataChanges).toEqual([]);
  });

  it('appends nullable fields to existing entities', () => {
    const target = successor((doc) => {
      entityOf(doc, 'project').attributes.push(attr('owner', 'string'), attr('labels', 'string_list', { retrieval_mode: 'membership' }));
      entityOf(doc, 'decision').attributes.push(attr('reviewed_at', 'datetime', { required: false }));
    });
    expect(plan(checkEvolution(CURRENT, target)).addedFields).toEqual([
      { entity: 'decision', field: 'reviewed_at', type: 'datetime', position: 17 },
      { entity: 'project', field: 'owner', type: 'string', position: 9 },
      { entity: 'project', field: 'labels', type: 'string_list', position: 10 },
    ]);
  });

  it('adds indexes on existing entities and exposes the unique ones for a data check', () => {
    const target = successor((doc) => {
      doc.indices.push(index('decision_title_uq', 'decision', ['title'], { unique: true }));
      doc.indices.push(index('decision_title_idx', 'decision', ['title', 'created_at']));
    });
    const result = plan(checkEvolution(CURRENT, target));
    expect(result.addedIndices.map((added) => added.name)).toEqual(['decision_title_idx', 'decision_title_uq']);
    expect(result.addedUniqueIndicesOnExistingEntities).toEqual([{ name: 'decision_title_uq', entity: 'decision', fields: ['title'], unique: true }]);
  });

  const metadataCases: [string, (doc: Doc) => void, MetadataChange][] = [
    ['entity description', (doc: Doc) => void (entityOf(doc, 'decision')['description'] = 'Choices.'), { kind: 'entity_description', entity: 'decision', field: null }],
    ['entity description removal', (doc: Doc) => void (entityOf(doc, 'project')['description'] = null), { kind: 'entity_description', entity: 'project', field: null }],
    ['attribute description', (doc: Doc) => void (attributeOf(doc, 'project', 'slug')['description'] = 'Short name.'), { kind: 'attribute_description', entity: 'project', field: 'slug' }],
    ['retrieval mode added', (doc: Doc) => void (attributeOf(doc, 'decision', 'title')['retrieval_mode'] = 'annotation'), { kind: 'retrieval_mode', entity: 'decision', field: 'title' }],
    ['retrieval mode removed', (doc: Doc) => void (attributeOf(doc, 'decision', 'tags')['retrieval_mode'] = null), { kind: 'retrieval_mode', entity: 'decision', field: 'tags' }],
    ['allowed values expanded', (doc: Doc) => void (attributeOf(doc, 'project', 'priority')['allowed_values'] = [3n, 2n, 1n, 4n]), { kind: 'allowed_values_expansion', entity: 'project', field: 'priority' }],
    ['allowed values expanded by a float twin', (doc: Doc) => void (attributeOf(doc, 'decision', 'confidence')['allowed_values'] = [0.5, 1.0, 1n, 2n, 0.25]), { kind: 'allowed_values_expansion', entity: 'decision', field: 'confidence' }],
    ['query patterns removed', (doc: Doc) => void (doc['query_patterns'] = []), { kind: 'query_patterns', entity: null, field: null }],
    ['query pattern replaced by another', (doc: Doc) => void (doc['query_patterns'] = ['Find decisions by title.']), { kind: 'query_patterns', entity: null, field: null }],
    ['query pattern appended', (doc: Doc) => void (doc['query_patterns'] = [...(doc['query_patterns'] as JsonValue[]), 'Find projects by slug.']), { kind: 'query_patterns', entity: null, field: null }],
    // Same field name, other entity: the facet's entity is part of its identity.
    ['facet moved to another entity', (doc: Doc) => void (doc['discovery_facets'] = [...(doc['discovery_facets'] as JsonValue[]).slice(0, 2), { entity: 'decision', field: 'created_at' }]), { kind: 'discovery_facets', entity: null, field: null }],
    ['facets reordered', (doc: Doc) => void (doc['discovery_facets'] = [...(doc['discovery_facets'] as JsonValue[])].reverse()), { kind: 'discovery_facets', entity: null, field: null }],
    ['retrieval guidance added', (doc: Doc) => void (doc['retrieval_guidance'] = 'Search by status.'), { kind: 'retrieval_guidance', entity: null, field: null }],
  ];

  it.each(metadataCases)('accepts a change of %s as metadata', (_name, change, expected) => {
    const result = plan(checkEvolution(CURRENT, successor(change)));
    expect(result.metadataChanges).toEqual([expected]);
    expect(result.addedEntities.length + result.addedFields.length + result.addedIndices.length + result.addedRelationships.length).toBe(0);
  });

  it('ignores a reordering of allowed values and of entities when something else changed', () => {
    const target = successor((doc) => {
      doc.entities.reverse();
      attributeOf(doc, 'project', 'priority')['allowed_values'] = [3n, 1n, 2n];
      doc['retrieval_guidance'] = 'x';
    });
    expect(plan(checkEvolution(CURRENT, target)).metadataChanges).toEqual([{ kind: 'retrieval_guidance', entity: null, field: null }]);
  });

  it('sorts metadata changes by kind, entity, field', () => {
    const target = successor((doc) => {
      doc['retrieval_guidance'] = 'x';
      attributeOf(doc, 'project', 'slug')['description'] = null;
      attributeOf(doc, 'decision', 'title')['description'] = 'T';
      // Declared after title, so only the field comparison puts it first.
      attributeOf(doc, 'decision', 'status')['description'] = 'S';
    });
    expect(plan(checkEvolution(CURRENT, target)).metadataChanges.map((change) => [change.kind, change.entity, change.field])).toEqual([
      ['attribute_description', 'decision', 'status'],
      ['attribute_description', 'decision', 'title'],
      ['attribute_description', 'project', 'slug'],
      ['retrieval_guidance', null, null],
    ]);
  });

  it('lists added entities and relationships by name, not in declaration order', () => {
    const target = successor((doc) => {
      doc.entities.push(entity('zone', [attr('project_id', 'uuid')]), entity('area', [attr('project_id', 'uuid')]));
      doc.relationships.push(relationship('zone_project_fk', ['zone', 'project_id'], ['project', 'id']));
      doc.relationships.push(relationship('area_project_fk', ['area', 'project_id'], ['project', 'id']));
    });
    const result = plan(checkEvolution(CURRENT, target));
    expect(result.addedEntities.map((added) => added.name)).toEqual(['area', 'zone']);
    expect(result.addedRelationships.map((added) => added.name)).toEqual(['area_project_fk', 'zone_project_fk']);
  });

  it('evolves a second time on top of the first', () => {
    const second = successor((doc) => void (doc['retrieval_guidance'] = 'v2'));
    const third = successor((doc) => void entityOf(doc, 'project').attributes.push(attr('archived', 'boolean')), second);
    expect(plan(checkEvolution(second, third)).toSchemaVersion).toBe(3);
  });
});

describe('refused evolutions', () => {
  const second = successor((doc) => void (doc['retrieval_guidance'] = 'v2'));

  const refusedCases: [string, () => EvolutionCheck, string][] = [
    ['a non-adjacent schema version', () => checkEvolution(CURRENT, successor((doc) => void (doc['retrieval_guidance'] = 'v3'), second)), 'schema_version_not_adjacent'],
    [
      'a rewritten history entry',
      () =>
        checkEvolution(
          second,
          successor((doc) => {
            (doc['migration_history'] as JsonObject[])[0] = { from_schema_version: 1n, to_schema_version: 2n, operations: ['rewritten'] };
            doc['retrieval_guidance'] = 'v3';
          }, second),
        ),
      'history_not_extended',
    ],
    [
      'a history entry that gained an operation',
      () =>
        checkEvolution(
          second,
          successor((doc) => {
            const first = (doc['migration_history'] as JsonObject[])[0] as JsonObject;
            first['operations'] = [...(first['operations'] as JsonValue[]), 'added later'];
            doc['retrieval_guidance'] = 'v3';
          }, second),
        ),
      'history_not_extended',
    ],
    ['an entity removal', () => checkEvolution(CURRENT, successor((doc) => {
      doc.entities.splice(doc.entities.indexOf(entityOf(doc, 'decision')), 1);
      doc.relationships.length = 0;
      doc.indices.splice(1, 1);
      doc['discovery_facets'] = [];
    })), 'entity_removed'],
    ['an entity rename', () => checkEvolution(CURRENT, successor((doc) => {
      entityOf(doc, 'project')['name'] = 'initiative';
      doc.relationships.length = 0;
      doc.indices.splice(0, 1);
      doc['discovery_facets'] = [];
    })), 'entity_removed'],
    ['an attribute removal', () => checkEvolution(CURRENT, successor((doc) => void entityOf(doc, 'project').attributes.pop())), 'attribute_removed'],
    ['an attribute rename', () => checkEvolution(CURRENT, successor((doc) => void (attributeOf(doc, 'project', 'active')['name'] = 'enabled'))), 'attribute_removed'],
    ['an attribute reorder', () => checkEvolution(CURRENT, successor((doc) => {
      const attributes = entityOf(doc, 'project').attributes;
      attributes.push(attributes.splice(6, 1)[0] as JsonObject);
    })), 'attribute_renamed_or_moved'],
    ['an insertion before existing fields', () => checkEvolution(CURRENT, successor((doc) => void entityOf(doc, 'project').attributes.splice(6, 0, attr('owner', 'string')))), 'attribute_renamed_or_moved'],
    ['a type change', () => checkEvolution(CURRENT, successor((doc) => {
      const priority = attributeOf(doc, 'project', 'priority');
      priority['type'] = 'number';
    })), 'attribute_changed'],
    ['a nullability change', () => checkEvolution(CURRENT, successor((doc) => void (attributeOf(doc, 'decision', 'title')['required'] = false))), 'attribute_changed'],
    ['a required field appended to an existing entity', () => checkEvolution(CURRENT, successor((doc) => void entityOf(doc, 'project').attributes.push(attr('owner', 'string', { required: true })))), 'required_attribute_added'],
    ['narrowed allowed values', () => checkEvolution(CURRENT, successor((doc) => void (attributeOf(doc, 'project', 'priority')['allowed_values'] = [1n, 2n]))), 'allowed_values_not_expanded'],
    ['removed allowed values', () => checkEvolution(CURRENT, successor((doc) => void (attributeOf(doc, 'project', 'priority')['allowed_values'] = null))), 'allowed_values_not_expanded'],
    ['allowed values where there were none', () => checkEvolution(CURRENT, successor((doc) => void (attributeOf(doc, 'decision', 'title')['allowed_values'] = ['x']))), 'allowed_values_not_expanded'],
    ['1.0 substituted for 1', () => checkEvolution(CURRENT, successor((doc) => void (attributeOf(doc, 'decision', 'confidence')['allowed_values'] = [0.5, 1.0, 2n]))), 'allowed_values_not_expanded'],
    ['a relationship removal', () => checkEvolution(CURRENT, successor((doc) => void (doc.relationships.length = 0))), 'relationship_removed'],
    ['a relationship rename', () => checkEvolution(CURRENT, successor((doc) => void ((doc.relationships[0] as JsonObject)['name'] = 'decision_of_project'))), 'relationship_removed'],
    ['a relationship with a changed source', () => checkEvolution(CURRENT, successor((doc) => void ((doc.relationships[0] as JsonObject)['from'] = { entity: 'decision', field: 'superseded_by' }))), 'relationship_changed'],
    ['a relationship retargeted to a new entity', () => checkEvolution(CURRENT, successor((doc) => {
      doc.entities.push(entity('portfolio'));
      (doc.relationships[0] as JsonObject)['to'] = { entity: 'portfolio', field: 'id' };
    })), 'relationship_changed'],
    ['a relationship moved to a new entity\'s field of the same name', () => checkEvolution(CURRENT, successor((doc) => {
      doc.entities.push(entity('review', [attr('project_id', 'uuid')]));
      (doc.relationships[0] as JsonObject)['from'] = { entity: 'review', field: 'project_id' };
    })), 'relationship_changed'],
    ['a relationship from an existing entity', () => checkEvolution(CURRENT, successor((doc) => {
      entityOf(doc, 'project').attributes.push(attr('parent_id', 'uuid'));
      doc.relationships.push(relationship('project_parent_fk', ['project', 'parent_id'], ['project', 'id']));
    })), 'relationship_from_existing_entity'],
    ['an index removal', () => checkEvolution(CURRENT, successor((doc) => void doc.indices.pop())), 'index_removed'],
    ['an index made non-unique', () => checkEvolution(CURRENT, successor((doc) => void ((doc.indices[0] as JsonObject)['unique'] = false))), 'index_changed'],
    ['an index moved to another entity with the same fields', () => checkEvolution(CURRENT, successor((doc) => {
      entityOf(doc, 'decision').attributes.push(attr('slug', 'string'));
      (doc.indices[0] as JsonObject)['entity'] = 'decision';
    })), 'index_changed'],
    ['an index field reorder', () => checkEvolution(CURRENT, successor((doc) => void ((doc.indices[1] as JsonObject)['fields'] = ['status', 'project_id']))), 'index_changed'],
    ['no change at all', () => checkEvolution(CURRENT, successor(() => undefined)), 'no_change'],
    ['a mere reordering of entities, relationships and indices', () => checkEvolution(CURRENT, successor((doc) => {
      doc.entities.reverse();
      doc.indices.reverse();
    })), 'no_change'],
  ];

  it.each(refusedCases)('refuses %s', (_name, run, reason) => {
    expect(refusal(run())).toBe(reason);
  });
});
