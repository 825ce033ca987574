import { describe, expect, it } from 'vitest';
import { canonicalJsonByteLength, type JsonObject, type JsonValue } from '../../../src/common/json.js';
import { MANIFEST_BOUNDS } from '../../../src/aipcs/contract/manifest/types.js';
import { renderContractJson } from '../../../src/aipcs/contract/envelope.js';
import { manifestToJson, validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import { attr, entity, history, index, linkedManifest, manifest, relationship, serverManaged } from './builders.js';
import { json, projectManifest, quickstartManifest } from './fixtures.js';

type Expected = readonly [code: string, path: string][];

function issuesOf(document: JsonValue): Expected {
  const result = validateManifest(document, { path: ['schema'] });
  return result.ok ? [] : result.issues.map((issue) => [issue.code, issue.path] as [string, string]);
}

function withAttributes(...domain: JsonObject[]): JsonObject {
  return manifest([entity('note', domain)]);
}

const long = (n: number): string => 'x'.repeat(n);
const ident = (n: number): string => 'a'.repeat(n);

describe('valid manifests', () => {
  it('accepts the quick-start manifest and echoes it normalised', () => {
    const result = validateManifest(quickstartManifest());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const echo = manifestToJson(result.manifest);
    expect(Object.keys(echo)).toEqual([
      'manifest_version',
      'schema_version',
      'entities',
      'relationships',
      'indices',
      'query_patterns',
      'discovery_facets',
      'retrieval_guidance',
      'migration_history',
    ]);
    const attribute = ((echo['entities'] as JsonObject[])[0]?.['attributes'] as JsonObject[])[8] as JsonObject;
    expect(Object.keys(attribute)).toEqual(['name', 'type', 'required', 'primary_key', 'description', 'allowed_values', 'retrieval_mode']);
    expect(attribute).toEqual({ name: 'tags', type: 'string_list', required: false, primary_key: false, description: null, allowed_values: null, retrieval_mode: 'membership' });
    expect(renderContractJson((echo['indices'] as JsonValue[])[0] as JsonValue)).toBe('{"name":"note_status_idx","entity":"note","fields":["status"],"unique":false}');
  });

  it('echoes relationships, endpoints, facets and history entries with their keys in contract order (§4.9)', () => {
    const document = linkedManifest({
      schema_version: 2n,
      migration_history: history(1),
      relationships: [relationship('task_project_fk', ['task', 'project_id'], ['project', 'id'])],
      discovery_facets: [{ field: 'title', entity: 'task' }],
    });
    const result = validateManifest(document);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const echo = renderContractJson(manifestToJson(result.manifest));
    expect(echo).toContain('"relationships":[{"name":"task_project_fk","from":{"entity":"task","field":"project_id"},"to":{"entity":"project","field":"id"},"on_delete":"restrict"}]');
    expect(echo).toContain('"discovery_facets":[{"entity":"task","field":"title"}]');
    expect(echo).toContain('"migration_history":[{"from_schema_version":1,"to_schema_version":2,"operations":["step 1"]}]');
    expect(echo).toMatch(/"attributes":\[.*\],"description":null\}/);
  });

  it('accepts the richer project manifest', () => {
    expect(issuesOf(projectManifest())).toEqual([]);
  });

  it('materialises every default of a minimal manifest', () => {
    const result = validateManifest(manifest());
    expect(result.ok && manifestToJson(result.manifest)).toMatchObject({
      relationships: [],
      indices: [],
      query_patterns: [],
      discovery_facets: [],
      retrieval_guidance: null,
      migration_history: [],
    });
  });

  it('trims every manifest string before validating and storing it', () => {
    const document = manifest([entity('  note ', [attr(' title\t', ' string ', { description: '  A title.  ' })])], {
      query_patterns: ['  find by title  '],
      retrieval_guidance: '\u00a0guidance\u3000',
    });
    const result = validateManifest(document);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.manifest.entities[0]?.name).toBe('note');
    expect(result.manifest.entities[0]?.attributes[6]).toMatchObject({ name: 'title', type: 'string', description: 'A title.' });
    expect(result.manifest.query_patterns).toEqual(['find by title']);
    expect(result.manifest.retrieval_guidance).toBe('guidance');
  });

  it('keeps an entity description, trimmed, in the normalised manifest and its echo', () => {
    const result = validateManifest(manifest([entity('note', undefined, { description: '  Short notes.  ' }), entity('task')]));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.manifest.entities.map((item) => item.description)).toEqual(['Short notes.', null]);
    expect((manifestToJson(result.manifest)['entities'] as JsonObject[])[0]?.['description']).toBe('Short notes.');
  });

  it('keeps the JSON type of allowed values (1 and 1.0 are distinct members)', () => {
    const result = validateManifest(withAttributes(attr('score', 'number', { allowed_values: json('[1, 1.0, 2.5]') as JsonValue[] })));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.manifest.entities[0]?.attributes[6]?.allowed_values).toEqual([1n, 1, 2.5]);
    expect(renderContractJson(manifestToJson(result.manifest))).toContain('"allowed_values":[1,1.0,2.5]');
  });

  it('accepts allowed values at the very edges of their type: the signed-64 range for integer, ±2^53 literals for number', () => {
    const result = validateManifest(
      withAttributes(
        attr('i', 'integer', { allowed_values: [-(2n ** 63n), 2n ** 63n - 1n] }),
        attr('n', 'number', { allowed_values: [-(2n ** 53n), 2n ** 53n] }),
      ),
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.manifest.entities[0]?.attributes.slice(6).map((attribute) => attribute.allowed_values)).toEqual([
      [-(2n ** 63n), 2n ** 63n - 1n],
      [-(2n ** 53n), 2n ** 53n],
    ]);
  });

  it('measures an allowed value in characters: 96 astral ones (192 UTF-16 units) fit, 97 do not', () => {
    expect(validateManifest(withAttributes(attr('s', 'string', { allowed_values: ['\u{1F600}'.repeat(96)] }))).ok).toBe(true);
    const over = validateManifest(withAttributes(attr('s', 'string', { allowed_values: ['\u{1F600}'.repeat(97)] })));
    expect(over.ok).toBe(false);
  });

  it('accepts server-managed attributes in any order, facets and indexes on them, nullable reference cycles', () => {
    const attributes = [...serverManaged().reverse(), attr('parent_id', 'uuid'), attr('title', 'string')];
    const document = manifest([{ name: 'note', attributes }], {
      relationships: [relationship('note_parent_fk', ['note', 'parent_id'], ['note', 'id'])],
      indices: [index('note_created_idx', 'note', ['created_at', 'title'])],
      discovery_facets: [{ entity: 'note', field: 'created_at' }],
    });
    expect(issuesOf(document)).toEqual([]);
  });

  it('accepts the relationship example of the contract', () => {
    const example = json(`{"name": "note_project_fk",
      "from": {"entity": "note", "field": "project_id"},
      "to":   {"entity": "project", "field": "id"},
      "on_delete": "restrict"}`);
    const document = manifest([entity('project'), entity('note', [attr('title', 'string'), attr('project_id', 'uuid', { required: true })])], { relationships: [example] });
    expect(issuesOf(document)).toEqual([]);
  });

  it('accepts a continuous migration history', () => {
    expect(issuesOf(manifest(undefined, { schema_version: 4n, migration_history: history(3) }))).toEqual([]);
  });

  it('accepts the bounds themselves', () => {
    const domain = Array.from({ length: 58 }, (_, i) => attr(`f${i}`, 'string'));
    const document = manifest([entity(ident(63), domain, { description: long(1000) })], {
      query_patterns: Array.from({ length: 32 }, () => long(240)),
      retrieval_guidance: long(2000),
      schema_version: 65n,
      // The last entry holds 32 operations of 240 characters.
      migration_history: history(64).map((entry, i) => (i === 63 ? { ...entry, operations: Array.from({ length: 32 }, () => long(240)) } : entry)),
    });
    expect(issuesOf(document)).toEqual([]);
  });

  it('accepts an entity of just the six server-managed fields, 32 allowed values and an index of 8 fields', () => {
    const fields = Array.from({ length: 8 }, (_, i) => attr(`f${i}`, 'string', i === 0 ? { allowed_values: Array.from({ length: 32 }, (_, v) => `v${v}`) } : {}));
    const document = manifest([{ name: 'bare', attributes: serverManaged() }, entity('note', fields)], {
      indices: [index('note_wide_idx', 'note', fields.map((field) => field['name'] as string))],
    });
    expect(issuesOf(document)).toEqual([]);
  });

  it('accepts a manifest whose canonical JSON takes the byte bound exactly, and refuses one byte more at the manifest', () => {
    // 32 entities of 58 described fields, within every per-part bound, are
    // near a megabyte: the descriptions are grown one ASCII byte at a time.
    const lengths = Array.from({ length: 32 * 58 }, () => 400);
    const build = (): JsonObject =>
      manifest(Array.from({ length: 32 }, (_, e) => entity(`e${e}`, Array.from({ length: 58 }, (_, a) => attr(`f${a}`, 'string', { description: long(lengths[e * 58 + a] as number) })))));
    const measured = validateManifest(build());
    if (!measured.ok) throw new Error('the starting manifest is invalid');
    let missing = MANIFEST_BOUNDS.maxCanonicalBytes - canonicalJsonByteLength(manifestToJson(measured.manifest));
    expect(missing).toBeGreaterThan(0);
    for (let i = 0; missing > 0; i++) {
      const grow = Math.min(100, missing);
      lengths[i] = (lengths[i] as number) + grow;
      missing -= grow;
    }
    const atBound = validateManifest(build());
    expect(atBound.ok).toBe(true);
    if (atBound.ok) expect(canonicalJsonByteLength(manifestToJson(atBound.manifest))).toBe(MANIFEST_BOUNDS.maxCanonicalBytes);
    lengths[lengths.length - 1] = (lengths[lengths.length - 1] as number) + 1;
    expect(issuesOf(build())).toEqual([['invalid_length', 'schema']]);
    // An import leaves the bound to the artefact's 1 MiB line; every other rule still holds.
    expect(validateManifest(build(), { sizeBound: false }).ok).toBe(true);
    lengths[0] = 501;
    const overLong = validateManifest(build(), { sizeBound: false });
    expect(overLong.ok ? [] : overLong.issues.map((issue) => issue.code)).toEqual(['invalid_length']);
  });

  it('reserves only the sqlite_ prefix: entity and index names such as sqlite or sqlitex_idx are fine', () => {
    expect(issuesOf(manifest([entity('sqlite'), entity('sqlite1')], { indices: [index('sqlitex_idx', 'sqlite', ['title'])] }))).toEqual([]);
  });

  it('tells indices apart by entity, field order and uniqueness (§4.5)', () => {
    const document = manifest([entity('note', [attr('title', 'string'), attr('status', 'string')]), entity('task', [attr('title', 'string'), attr('status', 'string')])], {
      indices: [
        index('a_idx', 'note', ['title', 'status']),
        index('b_idx', 'note', ['status', 'title']),
        index('c_idx', 'note', ['title', 'status'], { unique: true }),
        index('d_idx', 'task', ['title', 'status']),
      ],
    });
    expect(issuesOf(document)).toEqual([]);
  });

  it('accepts index and relationship names of 48 characters', () => {
    const named = 'n'.repeat(48);
    expect(issuesOf(manifest(undefined, { indices: [index(named, 'note', ['title'])] }))).toEqual([]);
    expect(issuesOf(linkedManifest({ relationships: [relationship(named, ['task', 'project_id'], ['project', 'id'])] }))).toEqual([]);
  });

  it('accepts 128 relationships and 128 indices, the list bounds themselves', () => {
    const uuids = (count: number): JsonObject[] => Array.from({ length: count }, (_, i) => attr(`f${i}`, 'uuid'));
    const sources: [string, number][] = [['a', 58], ['b', 58], ['c', 12]];
    const relationships = sources.flatMap(([name, count]) => Array.from({ length: count }, (_, i) => relationship(`r_${name}_${i}`, [name, `f${i}`], ['t', 'id'])));
    // Distinct definitions over a's 58 fields: 58 single, 57 pairs, 13 triples.
    const fieldRuns = [1, 2, 3].flatMap((width) => Array.from({ length: 59 - width }, (_, i) => Array.from({ length: width }, (_, k) => `f${i + k}`)));
    const indices = fieldRuns.slice(0, 128).map((fields, i) => index(`i${i}`, 'a', fields));
    expect([relationships.length, indices.length]).toEqual([128, 128]);
    const document = manifest([...sources.map(([name, count]) => entity(name, uuids(count))), entity('t')], { relationships, indices });
    expect(issuesOf(document)).toEqual([]);
  });
});

describe('one broken rule, one exact issue', () => {
  const cases: [string, () => JsonValue, Expected][] = [
    // document
    ['non-object manifest', () => [], [['invalid_value', 'schema']]],
    ['unknown top-level key', () => manifest(undefined, { tools: [] }), [['unknown_field', 'schema.tools']]],
    ['unsafe unknown key is masked', () => manifest(undefined, { 'bad-key': 1n }), [['unknown_field', 'schema.<field>']]],
    ['missing manifest_version', () => { const m = manifest(); delete m['manifest_version']; return m; }, [['field_required', 'schema.manifest_version']]],
    ['manifest_version 3', () => manifest(undefined, { manifest_version: 3n }), [['invalid_value', 'schema.manifest_version']]],
    ['manifest_version 2.0 is not an integer', () => manifest(undefined, { manifest_version: 2 }), [['invalid_value', 'schema.manifest_version']]],
    ['missing schema_version', () => { const m = manifest(); delete m['schema_version']; return m; }, [['field_required', 'schema.schema_version']]],
    ['schema_version 0', () => manifest(undefined, { schema_version: 0n }), [['invalid_value', 'schema.schema_version']]],
    ['schema_version 66', () => manifest(undefined, { schema_version: 66n, migration_history: history(64) }), [['invalid_value', 'schema.schema_version']]],
    ['schema_version 1.0', () => manifest(undefined, { schema_version: 1 }), [['invalid_value', 'schema.schema_version']]],
    ['schema_version as string', () => manifest(undefined, { schema_version: '1' }), [['invalid_value', 'schema.schema_version']]],
    ['missing entities', () => { const m = manifest(); delete m['entities']; return m; }, [['field_required', 'schema.entities']]],
    ['no entities', () => manifest([]), [['invalid_length', 'schema.entities']]],
    ['33 entities', () => manifest(Array.from({ length: 33 }, (_, i) => entity(`e${i}`))), [['invalid_length', 'schema.entities']]],
    ['relationships not a list', () => manifest(undefined, { relationships: {} }), [['invalid_value', 'schema.relationships']]],
    ['129 relationships', () => manifest(undefined, { relationships: Array.from({ length: 129 }, () => null) }), [['invalid_length', 'schema.relationships']]],
    ['129 indices', () => manifest(undefined, { indices: Array.from({ length: 129 }, () => null) }), [['invalid_length', 'schema.indices']]],
    ['33 query patterns', () => manifest(undefined, { query_patterns: Array.from({ length: 33 }, () => 'p') }), [['invalid_length', 'schema.query_patterns']]],
    ['blank query pattern', () => manifest(undefined, { query_patterns: ['ok', '   '] }), [['invalid_length', 'schema.query_patterns.1']]],
    ['241-char query pattern', () => manifest(undefined, { query_patterns: [long(241)] }), [['invalid_length', 'schema.query_patterns.0']]],
    ['65 facets', () => manifest(undefined, { discovery_facets: Array.from({ length: 65 }, () => null) }), [['invalid_length', 'schema.discovery_facets']]],
    ['string facet', () => manifest(undefined, { discovery_facets: ['note.title'] }), [['invalid_value', 'schema.discovery_facets.0']]],
    ['facet with unknown key', () => manifest(undefined, { discovery_facets: [{ entity: 'note', field: 'title', mode: 'x' }] }), [['unknown_field', 'schema.discovery_facets.0.mode']]],
    ['2001-char guidance', () => manifest(undefined, { retrieval_guidance: long(2001) }), [['invalid_length', 'schema.retrieval_guidance']]],
    ['guidance not a string', () => manifest(undefined, { retrieval_guidance: 1n }), [['invalid_value', 'schema.retrieval_guidance']]],
    ['65 history entries', () => manifest(undefined, { schema_version: 65n, migration_history: history(65) }), [['invalid_length', 'schema.migration_history']]],
    ['lone surrogate in a description', () => manifest([entity('note', undefined, { description: 'a\ud800b' })]), [['invalid_value', 'schema.entities.0.description']]],
    // entity
    ['entity name with uppercase', () => manifest([entity('Note')]), [['invalid_value', 'schema.entities.0.name']]],
    ['64-char entity name', () => manifest([entity(ident(64))]), [['invalid_value', 'schema.entities.0.name']]],
    ['entity without name', () => manifest([{ attributes: serverManaged() }]), [['field_required', 'schema.entities.0.name']]],
    ['5 attributes', () => manifest([{ name: 'note', attributes: serverManaged().slice(1) }]), [['invalid_length', 'schema.entities.0.attributes']]],
    // Too few items is checked after the items, as pydantic does: the invalid attribute is the issue.
    ['5 attributes, one invalid', () => manifest([{ name: 'note', attributes: [...serverManaged().slice(1, 5), attr('title', 'text')] }]), [['invalid_value', 'schema.entities.0.attributes.4.type']]],
    ['65 attributes', () => manifest([entity('note', Array.from({ length: 59 }, (_, i) => attr(`f${i}`, 'string')))]), [['invalid_length', 'schema.entities.0.attributes']]],
    ['1001-char entity description', () => manifest([entity('note', undefined, { description: long(1001) })]), [['invalid_length', 'schema.entities.0.description']]],
    ['unknown entity key', () => manifest([entity('note', undefined, { fields: [] })]), [['unknown_field', 'schema.entities.0.fields']]],
    // attribute
    ['attribute name with hyphen', () => withAttributes(attr('my-field', 'string')), [['invalid_value', 'schema.entities.0.attributes.6.name']]],
    ['unknown attribute type', () => withAttributes(attr('body', 'text')), [['invalid_value', 'schema.entities.0.attributes.6.type']]],
    ['attribute without type', () => withAttributes({ name: 'body' }), [['field_required', 'schema.entities.0.attributes.6.type']]],
    ['required as string', () => withAttributes(attr('body', 'string', { required: 'yes' })), [['invalid_value', 'schema.entities.0.attributes.6.required']]],
    ['primary_key as integer', () => withAttributes(attr('body', 'string', { primary_key: 1n })), [['invalid_value', 'schema.entities.0.attributes.6.primary_key']]],
    ['501-char attribute description', () => withAttributes(attr('body', 'string', { description: long(501) })), [['invalid_length', 'schema.entities.0.attributes.6.description']]],
    ['empty allowed_values', () => withAttributes(attr('body', 'string', { allowed_values: [] })), [['invalid_length', 'schema.entities.0.attributes.6.allowed_values']]],
    ['33 allowed values', () => withAttributes(attr('body', 'string', { allowed_values: Array.from({ length: 33 }, (_, i) => `v${i}`) })), [['invalid_length', 'schema.entities.0.attributes.6.allowed_values']]],
    ['object as allowed value', () => withAttributes(attr('body', 'string', { allowed_values: ['a', {}] })), [['invalid_value', 'schema.entities.0.attributes.6.allowed_values.1']]],
    ['null as allowed value', () => withAttributes(attr('body', 'string', { allowed_values: [null] })), [['invalid_value', 'schema.entities.0.attributes.6.allowed_values.0']]],
    ['unknown retrieval mode', () => withAttributes(attr('body', 'string', { retrieval_mode: 'fulltext' })), [['invalid_value', 'schema.entities.0.attributes.6.retrieval_mode']]],
    ['unknown attribute key', () => withAttributes(attr('body', 'string', { unique: true })), [['unknown_field', 'schema.entities.0.attributes.6.unique']]],
    ['primary key that is not required', () => withAttributes(attr('code', 'string', { primary_key: true })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['second primary key', () => withAttributes(attr('code', 'string', { primary_key: true, required: true })), [['invalid_value', 'schema.entities.0']]],
    ['duplicate allowed value', () => withAttributes(attr('s', 'string', { allowed_values: ['a', 'b', ' a '] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['duplicate float allowed value', () => withAttributes(attr('n', 'number', { allowed_values: json('[1.5, 1.50]') as JsonValue[] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['string member of integer values', () => withAttributes(attr('n', 'integer', { allowed_values: [1n, '2'] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['float member of integer values', () => withAttributes(attr('n', 'integer', { allowed_values: [1.0] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['boolean member of integer values', () => withAttributes(attr('n', 'integer', { allowed_values: [true] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['integer beyond signed 64', () => withAttributes(attr('n', 'integer', { allowed_values: [2n ** 63n] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['integer literal beyond 2^53 for number', () => withAttributes(attr('n', 'number', { allowed_values: [2n ** 53n + 1n] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['integer member of boolean values', () => withAttributes(attr('b', 'boolean', { allowed_values: [1n] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['integer member of string values', () => withAttributes(attr('s', 'string', { allowed_values: [1n] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['allowed values on a datetime', () => withAttributes(attr('d', 'datetime', { allowed_values: ['2030-01-01T00:00:00Z'] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['allowed values on a uuid', () => withAttributes(attr('u', 'uuid', { allowed_values: ['11111111-2222-4333-8444-555555555555'] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['blank string allowed value', () => withAttributes(attr('s', 'string_list', { allowed_values: ['a', '  '] })), [['invalid_length', 'schema.entities.0.attributes.6']]],
    ['97-char allowed value', () => withAttributes(attr('s', 'string', { allowed_values: [long(97)] })), [['invalid_length', 'schema.entities.0.attributes.6']]],
    ['NUL in allowed value', () => withAttributes(attr('s', 'string', { allowed_values: ['a\u0000b'] })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['membership on a string', () => withAttributes(attr('s', 'string', { retrieval_mode: 'membership' })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['annotation on a string_list', () => withAttributes(attr('s', 'string_list', { retrieval_mode: 'annotation' })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    ['annotation on an integer', () => withAttributes(attr('s', 'integer', { retrieval_mode: 'annotation' })), [['invalid_value', 'schema.entities.0.attributes.6']]],
    // entity-level attribute rules
    ['duplicate attribute name', () => withAttributes(attr('title', 'string'), attr('title', 'integer')), [['invalid_value', 'schema.entities.0']]],
    ['missing server-managed field', () => manifest([{ name: 'note', attributes: [...serverManaged().slice(0, 5), attr('title', 'string')] }]), [['invalid_value', 'schema.entities.0']]],
    ['server-managed field with the wrong type', () => manifest([{ name: 'note', attributes: [...serverManaged().slice(0, 5), attr('record_version', 'number', { required: true })] }]), [['invalid_value', 'schema.entities.0']]],
    ['server-managed field not required', () => manifest([{ name: 'note', attributes: [serverManaged()[0] as JsonObject, attr('owner_id', 'string'), ...serverManaged().slice(2)] }]), [['invalid_value', 'schema.entities.0']]],
    ['id without primary key', () => manifest([{ name: 'note', attributes: [attr('id', 'uuid', { required: true }), ...serverManaged().slice(1)] }]), [['invalid_value', 'schema.entities.0']]],
    ['server-managed field with a description', () => manifest([{ name: 'note', attributes: [...serverManaged().slice(0, 4), attr('created_via', 'string', { required: true, description: 'x' }), serverManaged()[5] as JsonObject] }]), [['invalid_value', 'schema.entities.0']]],
    ['server-managed field with allowed values', () => manifest([{ name: 'note', attributes: [...serverManaged().slice(0, 4), attr('created_via', 'string', { required: true, allowed_values: ['mcp'] }), serverManaged()[5] as JsonObject] }]), [['invalid_value', 'schema.entities.0']]],
    ['server-managed field other than id as primary key, reported once', () => manifest([{ name: 'note', attributes: [serverManaged()[0] as JsonObject, attr('owner_id', 'string', { required: true, primary_key: true }), ...serverManaged().slice(2)] }]), [['invalid_value', 'schema.entities.0']]],
    ['server-managed field with a retrieval mode', () => manifest([{ name: 'note', attributes: [serverManaged()[0] as JsonObject, attr('owner_id', 'string', { required: true, retrieval_mode: 'annotation' }), ...serverManaged().slice(2)] }]), [['invalid_value', 'schema.entities.0']]],
    // index shape
    ['49-char index name', () => manifest(undefined, { indices: [index(ident(49), 'note', ['title'])] }), [['invalid_length', 'schema.indices.0.name']]],
    ['index without fields', () => manifest(undefined, { indices: [index('note_idx', 'note', [])] }), [['invalid_length', 'schema.indices.0.fields']]],
    ['index with 9 fields', () => manifest([entity('note', Array.from({ length: 9 }, (_, i) => attr(`f${i}`, 'string')))], { indices: [index('note_idx', 'note', Array.from({ length: 9 }, (_, i) => `f${i}`))] }), [['invalid_length', 'schema.indices.0.fields']]],
    ['index field repeated', () => manifest(undefined, { indices: [index('note_idx', 'note', ['title', 'title'])] }), [['invalid_value', 'schema.indices.0']]],
    ['index unique as string', () => manifest(undefined, { indices: [index('note_idx', 'note', ['title'], { unique: 'true' })] }), [['invalid_value', 'schema.indices.0.unique']]],
    // relationship shape
    ['49-char relationship name', () => linkedManifest({ relationships: [relationship(ident(49), ['task', 'project_id'], ['project', 'id'])] }), [['invalid_length', 'schema.relationships.0.name']]],
    ['cascade on delete', () => linkedManifest({ relationships: [relationship('task_project_fk', ['task', 'project_id'], ['project', 'id'], { on_delete: 'cascade' })] }), [['invalid_value', 'schema.relationships.0.on_delete']]],
    ['relationship without target', () => { const r = relationship('task_project_fk', ['task', 'project_id'], ['project', 'id']); delete r['to']; return linkedManifest({ relationships: [r] }); }, [['field_required', 'schema.relationships.0.to']]],
    ['relationship spelled from_', () => { const r = relationship('task_project_fk', ['task', 'project_id'], ['project', 'id']); r['from_'] = r['from'] as JsonValue; delete r['from']; return linkedManifest({ relationships: [r] }); }, [['field_required', 'schema.relationships.0.from'], ['unknown_field', 'schema.relationships.0.from_']]],
    ['endpoint with unknown key', () => linkedManifest({ relationships: [relationship('task_project_fk', ['task', 'project_id'], ['project', 'id'], { to: { entity: 'project', field: 'id', kind: 'pk' } })] }), [['unknown_field', 'schema.relationships.0.to.kind']]],
    ['relationship name with uppercase', () => linkedManifest({ relationships: [relationship('TaskFk', ['task', 'project_id'], ['project', 'id'])] }), [['invalid_value', 'schema.relationships.0.name']]],
    ['endpoint entity that is no identifier', () => linkedManifest({ relationships: [relationship('fk', ['task', 'project_id'], ['Project', 'id'])] }), [['invalid_value', 'schema.relationships.0.to.entity']]],
    ['index name with a hyphen', () => manifest(undefined, { indices: [index('note-idx', 'note', ['title'])] }), [['invalid_value', 'schema.indices.0.name']]],
    ['index field that is no identifier', () => manifest(undefined, { indices: [index('note_idx', 'note', ['Title'])] }), [['invalid_value', 'schema.indices.0.fields.0']]],
    ['facet field that is no identifier', () => manifest(undefined, { discovery_facets: [{ entity: 'note', field: 'ti tle' }] }), [['invalid_value', 'schema.discovery_facets.0.field']]],
    // Required keys of the parts with no default (mutation review AD).
    ['relationship without on_delete', () => { const r = relationship('task_project_fk', ['task', 'project_id'], ['project', 'id']); delete r['on_delete']; return linkedManifest({ relationships: [r] }); }, [['field_required', 'schema.relationships.0.on_delete']]],
    ['entity without attributes', () => manifest([{ name: 'note' }]), [['field_required', 'schema.entities.0.attributes']]],
    ['history entry without operations key', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 2n }] }), [['field_required', 'schema.migration_history.0.operations']]],
    ['endpoint field that is no identifier', () => linkedManifest({ relationships: [relationship('fk', ['task', 'Project_id'], ['project', 'id'])] }), [['invalid_value', 'schema.relationships.0.from.field']]],
    ['index entity that is no identifier', () => manifest(undefined, { indices: [index('note_idx', 'Note', ['title'])] }), [['invalid_value', 'schema.indices.0.entity']]],
    ['facet entity that is no identifier', () => manifest(undefined, { discovery_facets: [{ entity: 'no te', field: 'title' }] }), [['invalid_value', 'schema.discovery_facets.0.entity']]],
    ['endpoint without field', () => { const r = relationship('fk', ['task', 'project_id'], ['project', 'id']); delete (r['from'] as JsonObject)['field']; return linkedManifest({ relationships: [r] }); }, [['field_required', 'schema.relationships.0.from.field']]],
    ['index without fields key', () => manifest(undefined, { indices: [{ name: 'note_idx', entity: 'note' }] }), [['field_required', 'schema.indices.0.fields']]],
    ['facet without field', () => manifest(undefined, { discovery_facets: [{ entity: 'note' }] }), [['field_required', 'schema.discovery_facets.0.field']]],
    ['entity name starting with an underscore', () => manifest([entity('_note')]), [['invalid_value', 'schema.entities.0.name']]],
    ['entity name starting with a digit', () => manifest([entity('1note')]), [['invalid_value', 'schema.entities.0.name']]],
    // history shape
    ['history entry not advancing', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 1n, operations: ['x'] }] }), [['invalid_value', 'schema.migration_history.0']]],
    ['history entry without operations', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: [] }] }), [['invalid_length', 'schema.migration_history.0.operations']]],
    ['blank history operation', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['x', '  '] }] }), [['invalid_length', 'schema.migration_history.0.operations.1']]],
    ['history operation too long', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: [long(241)] }] }), [['invalid_length', 'schema.migration_history.0.operations.0']]],
    ['history from 0', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 0n, to_schema_version: 2n, operations: ['x'] }] }), [['invalid_value', 'schema.migration_history.0.from_schema_version']]],
    ['history to 0', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 0n, operations: ['x'] }] }), [['invalid_value', 'schema.migration_history.0.to_schema_version']]],
    ['history entry with 33 operations', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: Array.from({ length: 33 }, () => 'x') }] }), [['invalid_length', 'schema.migration_history.0.operations']]],
    ['history entry with unknown key', () => manifest(undefined, { schema_version: 2n, migration_history: [{ ...history(1)[0], sql: 'x' }] }), [['unknown_field', 'schema.migration_history.0.sql']]],
    // manifest-level rules
    ['history shorter than schema_version − 1', () => manifest(undefined, { schema_version: 3n, migration_history: history(1) }), [['invalid_value', 'schema']]],
    ['history not starting at 1', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 2n, to_schema_version: 3n, operations: ['x'] }] }), [['invalid_value', 'schema']]],
    ['history entry starting behind the one before', () => manifest(undefined, { schema_version: 3n, migration_history: [history(1)[0] as JsonObject, { from_schema_version: 1n, to_schema_version: 3n, operations: ['x'] }] }), [['invalid_value', 'schema']]],
    ['history skipping a version', () => manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 3n, operations: ['x'] }] }), [['invalid_value', 'schema']]],
    ['duplicate entity name', () => manifest([entity('note'), entity('task'), entity('note')]), [['invalid_value', 'schema']]],
    ['sqlite_ entity name', () => manifest([entity('sqlite_master')]), [['invalid_value', 'schema']]],
    ['duplicate relationship name', () => linkedManifest({ relationships: [relationship('fk', ['task', 'project_id'], ['project', 'id']), relationship('fk', ['task', 'owner_ref'], ['project', 'id'])] }), [['invalid_value', 'schema']]],
    ['duplicate index name', () => manifest(undefined, { indices: [index('idx', 'note', ['title']), index('idx', 'note', ['created_at'])] }), [['invalid_value', 'schema']]],
    ['sqlite_ index name', () => manifest(undefined, { indices: [index('sqlite_autoindex', 'note', ['title'])] }), [['invalid_value', 'schema']]],
    ['index named like an entity', () => manifest([entity('note'), entity('task')], { indices: [index('task', 'note', ['title'])] }), [['invalid_value', 'schema']]],
    ['duplicate index definition', () => manifest(undefined, { indices: [index('a_idx', 'note', ['title']), index('b_idx', 'note', ['title'])] }), [['invalid_value', 'schema']]],
    ['duplicate relationship definition', () => linkedManifest({ relationships: [relationship('a_fk', ['task', 'project_id'], ['project', 'id']), relationship('b_fk', ['task', 'project_id'], ['project', 'id'])] }), [['invalid_value', 'schema']]],
    ['relationship source reused', () => linkedManifest({ relationships: [relationship('a_fk', ['task', 'project_id'], ['project', 'id']), relationship('b_fk', ['task', 'project_id'], ['task', 'id'])] }), [['invalid_value', 'schema']]],
    ['duplicate facet', () => manifest(undefined, { discovery_facets: [{ entity: 'note', field: 'title' }, { entity: 'note', field: 'title' }] }), [['invalid_value', 'schema']]],
    ['facet on unknown entity', () => manifest(undefined, { discovery_facets: [{ entity: 'task', field: 'title' }] }), [['invalid_value', 'schema']]],
    ['facet on unknown field', () => manifest(undefined, { discovery_facets: [{ entity: 'note', field: 'status' }] }), [['invalid_value', 'schema']]],
    ['index on unknown entity', () => manifest(undefined, { indices: [index('idx', 'task', ['title'])] }), [['invalid_value', 'schema']]],
    ['index on unknown field', () => manifest(undefined, { indices: [index('idx', 'note', ['title', 'status'])] }), [['invalid_value', 'schema']]],
    ['relationship from unknown entity', () => linkedManifest({ relationships: [relationship('fk', ['epic', 'project_id'], ['project', 'id'])] }), [['invalid_value', 'schema']]],
    ['relationship from unknown field', () => linkedManifest({ relationships: [relationship('fk', ['task', 'epic_id'], ['project', 'id'])] }), [['invalid_value', 'schema']]],
    ['relationship from a non-uuid field', () => linkedManifest({ relationships: [relationship('fk', ['task', 'title'], ['project', 'id'])] }), [['invalid_value', 'schema']]],
    ['relationship from the primary key', () => linkedManifest({ relationships: [relationship('fk', ['task', 'id'], ['project', 'id'])] }), [['invalid_value', 'schema']]],
    ['relationship from a server-managed field', () => linkedManifest({ relationships: [relationship('fk', ['task', 'owner_id'], ['project', 'id'])] }), [['invalid_value', 'schema']]],
    ['relationship to unknown entity', () => linkedManifest({ relationships: [relationship('fk', ['task', 'project_id'], ['epic', 'id'])] }), [['invalid_value', 'schema']]],
    ['relationship to a field other than id', () => linkedManifest({ relationships: [relationship('fk', ['task', 'project_id'], ['project', 'title'])] }), [['invalid_value', 'schema']]],
    ['required self-reference', () => manifest([entity('task', [attr('parent_id', 'uuid', { required: true })])], { relationships: [relationship('fk', ['task', 'parent_id'], ['task', 'id'])] }), [['invalid_value', 'schema']]],
    [
      'identical required self-references',
      () => manifest([entity('task', [attr('parent_id', 'uuid', { required: true })])], { relationships: [relationship('a_fk', ['task', 'parent_id'], ['task', 'id']), relationship('b_fk', ['task', 'parent_id'], ['task', 'id'])] }),
      [['invalid_value', 'schema']],
    ],
    [
      'required reference cycle',
      () =>
        manifest([entity('alpha', [attr('beta_id', 'uuid', { required: true })]), entity('beta', [attr('alpha_id', 'uuid', { required: true })]), entity('gamma', [attr('alpha_id', 'uuid', { required: true })])], {
          relationships: [
            relationship('gamma_fk', ['gamma', 'alpha_id'], ['alpha', 'id']),
            relationship('alpha_fk', ['alpha', 'beta_id'], ['beta', 'id']),
            relationship('beta_fk', ['beta', 'alpha_id'], ['alpha', 'id']),
          ],
        }),
      [['invalid_value', 'schema']],
    ],
  ];

  it.each(cases)('%s', (_name, build, expected) => {
    expect(issuesOf(build())).toEqual(expected);
  });

  it('refuses an index over a string_list field', () => {
    const document = withAttributes(attr('tags', 'string_list'));
    document['indices'] = [index('tags_idx', 'note', ['tags'])];
    expect(issuesOf(document)).toEqual([['invalid_value', 'schema']]);
  });

  it('keeps the code of an attribute\'s first broken rule: an item\'s length before its NUL, items in order', () => {
    const at = 'schema.entities.0.attributes.6';
    expect(issuesOf(withAttributes(attr('s', 'string', { allowed_values: [`${long(60)}\u0000${long(60)}`] })))).toEqual([['invalid_length', at]]);
    expect(issuesOf(withAttributes(attr('s', 'string', { allowed_values: [long(97), 'a\u0000b'] })))).toEqual([['invalid_length', at]]);
    expect(issuesOf(withAttributes(attr('s', 'string', { allowed_values: ['a\u0000b', long(97)] })))).toEqual([['invalid_value', at]]);
  });

  it('measures the manifest\'s bytes only once its other rules hold: one issue for a broken rule of an oversized manifest', () => {
    const described = (e: number) => entity(`e${e}`, Array.from({ length: 58 }, (_, a) => attr(`f${a}`, 'string', { description: long(500) })));
    const oversized = manifest(Array.from({ length: 32 }, (_, e) => described(e)));
    expect(issuesOf(oversized)).toEqual([['invalid_length', 'schema']]);
    oversized['discovery_facets'] = [{ entity: 'e0', field: 'f0' }, { entity: 'e0', field: 'f0' }];
    expect(issuesOf(oversized)).toEqual([['invalid_value', 'schema']]);
  });

  it('does not trim keys: a padded key is unknown and the real one missing', () => {
    const document = manifest();
    document[' entities'] = document['entities'] as JsonValue;
    delete document['entities'];
    expect(issuesOf(document)).toEqual([
      ['field_required', 'schema.entities'],
      ['unknown_field', 'schema.<field>'],
    ]);
  });

  it('reports at most 32 issues, in validation order', () => {
    const document = manifest();
    for (let i = 0; i < 40; i++) document[`extra_${i}`] = null;
    const issues = issuesOf(document);
    expect(issues).toHaveLength(32);
    expect(issues[0]).toEqual(['unknown_field', 'schema.extra_0']);
  });

  it('runs cross-reference rules only once the shape is clean', () => {
    const document = manifest([entity('note'), entity('note')], { retrieval_guidance: 5n });
    expect(issuesOf(document)).toEqual([['invalid_value', 'schema.retrieval_guidance']]);
  });

  it('gives issue texts from the fixed vocabulary only', () => {
    const result = validateManifest(withAttributes(attr('secret_value_here', 'text')));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues[0]).toEqual({
      code: 'invalid_value',
      path: 'entities.0.attributes.6.type',
      message: 'The field value is invalid.',
      remediation: 'Use a value allowed by the public contract and retry.',
    });
  });
});
