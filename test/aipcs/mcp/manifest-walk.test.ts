// A black-box walk of contract §4 (manifest v2) and §5 (service
// lifecycle) through `aipcs serve` over stdio with the SDK client. Each bound
// is tried at the bound and one past it, each cross-field rule once broken,
// each §4.11 transition once accepted or refused, and the registry key rules
// of §5.2 with every failure that must not consume a key.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverProfiles, sqliteProfile, startAipcs, type AipcsClient, type Envelope, type ServerProfile } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';

type Json = Record<string, unknown>;

const attr = (name: string, type: string, more: Json = {}): Json => ({ name, type, ...more });
const entity = (name: string, domain: Json[] = []): Json => ({ name, attributes: [...serverManaged(), ...domain] });
const manifest = (entities: Json[], rest: Json = {}): Json => ({ manifest_version: 2, schema_version: 1, entities, ...rest });
const rel = (name: string, fromEntity: string, fromField: string, toEntity: string): Json => ({
  name,
  from: { entity: fromEntity, field: fromField },
  to: { entity: toEntity, field: 'id' },
  on_delete: 'restrict',
});
const many = <T>(count: number, make: (index: number) => T): T[] => Array.from({ length: count }, (_, index) => make(index));

/** `ok`, or the error code and its issues as `code@path`. */
function outcome(envelope: Envelope): string {
  if (envelope.ok) return 'ok';
  const issues = envelope.error?.issues.map((issue) => `${issue.code}@${issue.path}`) ?? [];
  return [envelope.error?.code, ...issues].join(' ');
}

let aipcs: AipcsClient;
let counter = 0;
const nextKey = (): string => `key-${++counter}`;

async function seed(): Promise<string> {
  const seeded = await aipcs.call('aipcs_service_seed', { domain_name: `walk_${++counter}`, domain_class: 'audit', intent_description: 'Manifest walk.', idempotency_key: nextKey() });
  return (seeded.result as Json)['service_id'] as string;
}

const design = async (serviceId: string, schema: unknown, key = nextKey()): Promise<Envelope> =>
  aipcs.call('aipcs_service_design', { service_id: serviceId, schema, idempotency_key: key });

const materialise = async (serviceId: string, revision: number, key = nextKey()): Promise<Envelope> =>
  aipcs.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: revision, expected_schema_version: 1, idempotency_key: key });

const evolve = async (serviceId: string, schema: Json, revision = 3, version = 1, key = nextKey()): Promise<Envelope> =>
  aipcs.call('aipcs_service_evolve', { service_id: serviceId, expected_service_revision: revision, expected_schema_version: version, schema, idempotency_key: key });

/** Each describe runs on a server of its own over fresh storage of `profile`. */
function onServer(profile: ServerProfile): void {
  let drop: () => Promise<void> = async () => undefined;
  beforeAll(async () => {
    const storage = await profile.fresh();
    drop = storage.drop;
    aipcs = await startAipcs(storage.args, storage.env);
  });
  afterAll(async () => {
    await aipcs.close();
    await drop();
  });
}

const profiles = await serverProfiles();

describe('design: manifest bounds at the bound and one past it (contract §4.1, §4.3, §4.5, §4.6)', () => {
  onServer(sqliteProfile);
  const withDomain = (domain: Json[]): Json => manifest([entity('a', domain)]);
  const cases: [string, Json, string][] = [
    ['32 entities', manifest(many(32, (i) => entity(`e${i}`))), 'ok'],
    ['33 entities', manifest(many(33, (i) => entity(`e${i}`))), 'validation_failed invalid_length@schema.entities'],
    ['64 attributes', withDomain(many(58, (i) => attr(`f${i}`, 'string'))), 'ok'],
    ['65 attributes', withDomain(many(59, (i) => attr(`f${i}`, 'string'))), 'validation_failed invalid_length@schema.entities.0.attributes'],
    ['an entity name of 63 characters', manifest([entity('a'.repeat(63))]), 'ok'],
    ['an entity name of 64 characters', manifest([entity('a'.repeat(64))]), 'validation_failed invalid_value@schema.entities.0.name'],
    ['an attribute description of 500 characters', withDomain([attr('x', 'string', { description: 'd'.repeat(500) })]), 'ok'],
    ['an attribute description of 501 characters', withDomain([attr('x', 'string', { description: 'd'.repeat(501) })]), 'validation_failed invalid_length@schema.entities.0.attributes.6.description'],
    ['an entity description of 1000 characters', manifest([{ ...entity('a'), description: 'd'.repeat(1000) }]), 'ok'],
    ['an entity description of 1001 characters', manifest([{ ...entity('a'), description: 'd'.repeat(1001) }]), 'validation_failed invalid_length@schema.entities.0.description'],
    ['32 allowed values', withDomain([attr('x', 'integer', { allowed_values: many(32, (i) => i) })]), 'ok'],
    ['33 allowed values', withDomain([attr('x', 'integer', { allowed_values: many(33, (i) => i) })]), 'validation_failed invalid_length@schema.entities.0.attributes.6.allowed_values'],
    ['an allowed string of 96 characters', withDomain([attr('x', 'string', { allowed_values: ['v'.repeat(96)] })]), 'ok'],
    ['an allowed string of 97 characters', withDomain([attr('x', 'string', { allowed_values: ['v'.repeat(97)] })]), 'validation_failed invalid_length@schema.entities.0.attributes.6'],
    ['a relationship name of 48 characters', manifest([entity('a', [attr('p', 'uuid')])], { relationships: [rel('r'.repeat(48), 'a', 'p', 'a')] }), 'ok'],
    ['a relationship name of 49 characters', manifest([entity('a', [attr('p', 'uuid')])], { relationships: [rel('r'.repeat(49), 'a', 'p', 'a')] }), 'validation_failed invalid_length@schema.relationships.0.name'],
    ['an index name of 48 characters', manifest([entity('a')], { indices: [{ name: 'i'.repeat(48), entity: 'a', fields: ['id'] }] }), 'ok'],
    ['an index name of 49 characters', manifest([entity('a')], { indices: [{ name: 'i'.repeat(49), entity: 'a', fields: ['id'] }] }), 'validation_failed invalid_length@schema.indices.0.name'],
    ['8 index fields', manifest([entity('a', many(8, (i) => attr(`f${i}`, 'string')))], { indices: [{ name: 'i', entity: 'a', fields: many(8, (i) => `f${i}`) }] }), 'ok'],
    ['9 index fields', manifest([entity('a', many(9, (i) => attr(`f${i}`, 'string')))], { indices: [{ name: 'i', entity: 'a', fields: many(9, (i) => `f${i}`) }] }), 'validation_failed invalid_length@schema.indices.0.fields'],
    ['64 facets', manifest([entity('a', many(58, (i) => attr(`f${i}`, 'string'))), entity('b', many(6, (i) => attr(`f${i}`, 'string')))], { discovery_facets: [...many(58, (i) => ({ entity: 'a', field: `f${i}` })), ...many(6, (i) => ({ entity: 'b', field: `f${i}` }))] }), 'ok'],
    ['65 facets', manifest([entity('a', many(58, (i) => attr(`f${i}`, 'string'))), entity('b', many(7, (i) => attr(`f${i}`, 'string')))], { discovery_facets: [...many(58, (i) => ({ entity: 'a', field: `f${i}` })), ...many(7, (i) => ({ entity: 'b', field: `f${i}` }))] }), 'validation_failed invalid_length@schema.discovery_facets'],
    ['32 query patterns of 240 characters', manifest([entity('a')], { query_patterns: many(32, () => 'q'.repeat(240)) }), 'ok'],
    ['33 query patterns', manifest([entity('a')], { query_patterns: many(33, () => 'q') }), 'validation_failed invalid_length@schema.query_patterns'],
    ['a query pattern of 241 characters', manifest([entity('a')], { query_patterns: ['q'.repeat(241)] }), 'validation_failed invalid_length@schema.query_patterns.0'],
    ['a blank query pattern', manifest([entity('a')], { query_patterns: ['   '] }), 'validation_failed invalid_length@schema.query_patterns.0'],
    ['guidance of 2000 astral characters', manifest([entity('a')], { retrieval_guidance: '😀'.repeat(2000) }), 'ok'],
    ['guidance of 2001 characters', manifest([entity('a')], { retrieval_guidance: 'g'.repeat(2001) }), 'validation_failed invalid_length@schema.retrieval_guidance'],
  ];

  it.each(cases)('%s', async (_label, schema, expected) => {
    expect(outcome(await design(await seed(), schema))).toBe(expected);
  });
});

describe('design: every cross-field rule once broken (contract §4.1–§4.7)', () => {
  onServer(sqliteProfile);
  const two = (relationships: Json[]): Json =>
    manifest([entity('a', [attr('b_id', 'uuid'), attr('a_id', 'uuid'), attr('rb', 'uuid', { required: true }), attr('s', 'string')]), entity('b', [attr('ra', 'uuid', { required: true })])], { relationships });
  const indexed = (indices: Json[], facets: Json[] = []): Json =>
    manifest([entity('a', [attr('s', 'string'), attr('l', 'string_list'), attr('n', 'string', { retrieval_mode: 'annotation' })])], { indices, discovery_facets: facets });
  const cases: [string, Json, string][] = [
    ['a duplicate entity name', manifest([entity('a'), entity('a')]), 'validation_failed invalid_value@schema'],
    ['an entity named sqlite_*', manifest([entity('sqlite_x')]), 'validation_failed invalid_value@schema'],
    ['a duplicate attribute name', manifest([entity('a', [attr('x', 'string'), attr('x', 'integer')])]), 'validation_failed invalid_value@schema.entities.0'],
    ['a primary key other than id', manifest([entity('a', [attr('x', 'uuid', { required: true, primary_key: true })])]), 'validation_failed invalid_value@schema.entities.0'],
    ['a server-managed field with a description', manifest([{ name: 'a', attributes: serverManaged().map((a, i) => (i === 1 ? { ...a, description: 'x' } : a)) }]), 'validation_failed invalid_value@schema.entities.0'],
    ['allowed values 1 and 1 again', manifest([entity('a', [attr('x', 'number', { allowed_values: [1, 2, 1] })])]), 'validation_failed invalid_value@schema.entities.0.attributes.6'],
    ['allowed values on a datetime', manifest([entity('a', [attr('x', 'datetime', { allowed_values: ['2030-01-01T00:00:00Z'] })])]), 'validation_failed invalid_value@schema.entities.0.attributes.6'],
    ['a number allowed value beyond 2^53', manifest([entity('a', [attr('x', 'number', { allowed_values: [2 ** 53 + 2] })])]), 'validation_failed invalid_value@schema.entities.0.attributes.6'],
    ['annotation on a string_list', manifest([entity('a', [attr('x', 'string_list', { retrieval_mode: 'annotation' })])]), 'validation_failed invalid_value@schema.entities.0.attributes.6'],
    ['membership on a string', manifest([entity('a', [attr('x', 'string', { retrieval_mode: 'membership' })])]), 'validation_failed invalid_value@schema.entities.0.attributes.6'],
    ['a relationship from a string field', two([rel('r', 'a', 's', 'b')]), 'validation_failed invalid_value@schema'],
    ['a relationship from a server-managed field', two([rel('r', 'a', 'owner_id', 'b')]), 'validation_failed invalid_value@schema'],
    ['a relationship to a missing entity', two([rel('r', 'a', 'b_id', 'zz')]), 'validation_failed invalid_value@schema'],
    ['a relationship to a field other than id', two([{ ...rel('r', 'a', 'b_id', 'b'), to: { entity: 'b', field: 'ra' } }]), 'validation_failed invalid_value@schema'],
    ['on_delete cascade', two([{ ...rel('r', 'a', 'b_id', 'b'), on_delete: 'cascade' }]), 'validation_failed invalid_value@schema.relationships.0.on_delete'],
    ['two relationships from one source', two([rel('r1', 'a', 'b_id', 'b'), rel('r2', 'a', 'b_id', 'a')]), 'validation_failed invalid_value@schema'],
    ['an identical relationship definition', two([rel('r1', 'a', 'b_id', 'b'), rel('r2', 'a', 'b_id', 'b')]), 'validation_failed invalid_value@schema'],
    ['a required self-reference', two([rel('r', 'a', 'rb', 'a')]), 'validation_failed invalid_value@schema'],
    ['a cycle of required references', two([rel('r1', 'a', 'rb', 'b'), rel('r2', 'b', 'ra', 'a')]), 'validation_failed invalid_value@schema'],
    ['a cycle through a nullable reference', two([rel('r1', 'a', 'rb', 'b'), rel('r2', 'b', 'ra', 'a')].map((r, i) => (i === 0 ? { ...r, from: { entity: 'a', field: 'b_id' } } : r))), 'ok'],
    ['an index over a string_list', indexed([{ name: 'i', entity: 'a', fields: ['l'] }]), 'validation_failed invalid_value@schema'],
    ['an index over an annotation and server-managed fields', indexed([{ name: 'i', entity: 'a', fields: ['n', 'created_at'] }]), 'ok'],
    ['an index named like an entity', indexed([{ name: 'a', entity: 'a', fields: ['s'] }]), 'validation_failed invalid_value@schema'],
    ['an index repeating a field', indexed([{ name: 'i', entity: 'a', fields: ['s', 's'] }]), 'validation_failed invalid_value@schema.indices.0'],
    ['two indexes with one definition', indexed([{ name: 'i', entity: 'a', fields: ['s'] }, { name: 'j', entity: 'a', fields: ['s'], unique: false }]), 'validation_failed invalid_value@schema'],
    ['a facet written as a string', indexed([], ['a.s' as unknown as Json]), 'validation_failed invalid_value@schema.discovery_facets.0'],
    ['a facet on an unknown field', indexed([], [{ entity: 'a', field: 'zz' }]), 'validation_failed invalid_value@schema'],
    ['a repeated facet', indexed([], [{ entity: 'a', field: 's' }, { entity: 'a', field: 's' }]), 'validation_failed invalid_value@schema'],
    ['a facet on a server-managed field', indexed([], [{ entity: 'a', field: 'owner_id' }]), 'ok'],
  ];

  it.each(cases)('%s', async (_label, schema, expected) => {
    expect(outcome(await design(await seed(), schema))).toBe(expected);
  });

  it('answers retired keys, legacy and unsupported versions before validating, in that order', async () => {
    const serviceId = await seed();
    const base = manifest([entity('a')]);
    expect(outcome(await design(serviceId, { ...base, entities: [{ ...entity('a'), materialization: 1 }] }))).toBe('retired_field');
    expect(outcome(await design(serviceId, { ...base, manifest_version: 1, dsn: 'x' }))).toBe('retired_field');
    expect(outcome(await design(serviceId, { ...base, manifest_version: 1, entities: [] }))).toBe('legacy_import_required');
    expect(outcome(await design(serviceId, { ...base, manifest_version: 3, entities: [] }))).toBe('manifest_version_unsupported');
    const named = await design(serviceId, manifest([entity('a', [attr('endpoint', 'string')])]));
    expect(outcome(named)).toBe('ok');
  });
});

describe.each(profiles)('registry idempotency across seed, design, materialise and evolve (contract §5.2) on $name', (profile) => {
  onServer(profile);
  const base = (): Json => manifest([entity('a', [attr('s', 'string')])]);
  const next = (patterns: string[]): Json => ({ ...base(), schema_version: 2, migration_history: [{ from_schema_version: 1, to_schema_version: 2, operations: ['o'] }], query_patterns: patterns });

  it('lets no refused request consume its key, and replays each completed one as it was', async () => {
    const serviceId = await seed();
    // validation_failed, not_found and a stale materialise leave the keys free.
    expect(outcome(await design(serviceId, { ...base(), entities: [] }, 'walk-design'))).toBe('validation_failed invalid_length@schema.entities');
    expect(outcome(await design('11111111-1111-4111-8111-111111111111', base(), 'walk-design'))).toBe('not_found');
    expect(outcome(await materialise(serviceId, 1, 'walk-mat'))).toBe('stale_revision');
    expect(outcome(await evolve(serviceId, next(['q']), 1, 1, 'walk-evolve'))).toBe('stale_revision');
    const designed = await design(serviceId, base(), 'walk-design');
    expect((designed.result as Json)['service_revision']).toBe(2);
    // invalid_state does not consume a key either: the next seed may use it.
    expect(outcome(await design(serviceId, base(), 'walk-spare'))).toBe('invalid_state');
    expect(outcome(await materialise(serviceId, 3, 'walk-mat'))).toBe('stale_revision');
    expect(outcome(await materialise(serviceId, 2, 'walk-mat'))).toBe('ok');
    expect(outcome(await materialise(serviceId, 3, 'walk-spare'))).toBe('unsupported_transition');
    expect(outcome(await evolve(serviceId, next([]), 3, 1, 'walk-evolve'))).toBe('unsupported_transition');
    const evolved = await evolve(serviceId, next(['q']), 3, 1, 'walk-evolve');
    expect(evolved.result).toMatchObject({ service_revision: 4, schema_version: 2 });

    // Replays return the snapshot of their own completion.
    const replayedDesign = await design(serviceId, base(), 'walk-design');
    expect(replayedDesign.result).toMatchObject({ service_revision: 2, design_state: 'seeded', storage: null });
    const replayedMaterialise = await materialise(serviceId, 2, 'walk-mat');
    expect(replayedMaterialise.result).toMatchObject({ service_revision: 3, schema_version: 1, design_state: 'materialised', recovery_state: 'clear' });
    expect((await evolve(serviceId, next(['q']), 3, 1, 'walk-evolve')).result).toEqual(evolved.result);

    // One namespace: seed and design answer conflict, materialise and evolve changed_fingerprint.
    expect(outcome(await design(serviceId, base(), 'walk-mat'))).toBe('conflict');
    expect(outcome(await aipcs.call('aipcs_service_seed', { domain_name: 'walk_other', domain_class: 'c', intent_description: 'i', idempotency_key: 'walk-evolve' }))).toBe('conflict');
    expect(outcome(await materialise(serviceId, 2, 'walk-design'))).toBe('changed_fingerprint');
    expect(outcome(await evolve(serviceId, next(['q']), 3, 1, 'walk-mat'))).toBe('changed_fingerprint');
    expect(outcome(await evolve(serviceId, next(['r']), 3, 1, 'walk-evolve'))).toBe('changed_fingerprint');
    const spare = await aipcs.call('aipcs_service_seed', { domain_name: 'walk_spare', domain_class: 'c', intent_description: 'i', idempotency_key: 'walk-spare' });
    expect((spare.result as Json)['service_revision']).toBe(1);
  });

  it('fingerprints the normalised manifest: spelled-out defaults replay, 1.0 for 1 conflicts', async () => {
    const serviceId = await seed();
    const first = manifest([entity('a', [attr('x', 'number', { allowed_values: [1, 2.5] })])]);
    expect(outcome(await design(serviceId, first, 'walk-fp'))).toBe('ok');
    const spelled = manifest([{ ...entity(' a '), description: null, attributes: [...serverManaged(), attr('x', 'number', { allowed_values: [1, 2.5], required: false, description: null, retrieval_mode: null })] }], {
      relationships: [],
      indices: [],
      retrieval_guidance: null,
      migration_history: [],
    });
    expect(outcome(await design(serviceId, spelled, 'walk-fp'))).toBe('ok');
  });
});

describe.each(profiles)('adjacent additive evolution (contract §4.11) on $name', (profile) => {
  onServer(profile);
  const current = (): Json =>
    manifest(
      [
        { ...entity('a', [attr('s', 'string', { description: 'd' }), attr('n', 'number', { allowed_values: [1, 2.5] }), attr('b_id', 'uuid'), attr('tags', 'string_list', { retrieval_mode: 'membership' })]), description: 'A' },
        entity('b', [attr('t', 'string', { required: true })]),
      ],
      {
        relationships: [rel('a_b', 'a', 'b_id', 'b')],
        indices: [{ name: 'a_s', entity: 'a', fields: ['s', 'n'], unique: false }],
        query_patterns: ['q1', 'q2'],
        discovery_facets: [{ entity: 'a', field: 's' }],
        retrieval_guidance: 'g',
      },
    );
  const target = (change: (m: { entities: Json[]; relationships: Json[]; indices: Json[] } & Json) => void): Json => {
    const m = structuredClone(current()) as { entities: Json[]; relationships: Json[]; indices: Json[] } & Json;
    m['schema_version'] = 2;
    m['migration_history'] = [{ from_schema_version: 1, to_schema_version: 2, operations: ['step'] }];
    change(m);
    return m;
  };
  const attributesOf = (m: { entities: Json[] }, index: number): Json[] => m.entities[index]?.['attributes'] as Json[];

  const cases: [string, Json, string][] = [
    ['nothing changed', target(() => undefined), 'unsupported_transition'],
    ['only the entity order changed', target((m) => m.entities.reverse()), 'unsupported_transition'],
    ['the facets removed', target((m) => (m['discovery_facets'] = [])), 'ok'],
    ['query patterns reordered', target((m) => (m['query_patterns'] = ['q2', 'q1'])), 'ok'],
    ['guidance removed', target((m) => (m['retrieval_guidance'] = null)), 'ok'],
    ['an entity description changed', target((m) => (m.entities[0] = { ...m.entities[0], description: 'B' })), 'ok'],
    ['a retrieval mode removed', target((m) => (attributesOf(m, 0)[9] = { ...attributesOf(m, 0)[9], retrieval_mode: null })), 'ok'],
    ['allowed values expanded', target((m) => (attributesOf(m, 0)[7] = { ...attributesOf(m, 0)[7], allowed_values: [2.5, 1, 3] })), 'ok'],
    ['allowed values only reordered', target((m) => (attributesOf(m, 0)[7] = { ...attributesOf(m, 0)[7], allowed_values: [2.5, 1] })), 'unsupported_transition'],
    ['allowed values narrowed', target((m) => (attributesOf(m, 0)[7] = { ...attributesOf(m, 0)[7], allowed_values: [1] })), 'unsupported_transition'],
    ['allowed values added to a free field', target((m) => (attributesOf(m, 0)[6] = { ...attributesOf(m, 0)[6], allowed_values: ['x'] })), 'unsupported_transition'],
    ['an optional field appended', target((m) => attributesOf(m, 0).push(attr('z', 'integer'))), 'ok'],
    ['a required field appended', target((m) => attributesOf(m, 0).push(attr('z', 'integer', { required: true }))), 'unsupported_transition'],
    ['a field inserted before existing ones', target((m) => attributesOf(m, 0).splice(6, 0, attr('z', 'integer'))), 'unsupported_transition'],
    ['two server-managed fields swapped', target((m) => attributesOf(m, 1).splice(1, 2, attributesOf(m, 1)[2] as Json, attributesOf(m, 1)[1] as Json)), 'unsupported_transition'],
    ['a field type changed', target((m) => (attributesOf(m, 0)[6] = { ...attributesOf(m, 0)[6], type: 'integer' })), 'unsupported_transition'],
    ['a required field relaxed', target((m) => (attributesOf(m, 1)[6] = { ...attributesOf(m, 1)[6], required: false })), 'unsupported_transition'],
    ['an entity removed', target((m) => ((m.entities = [m.entities[0] as Json]), (m.relationships = []))), 'unsupported_transition'],
    ['a new entity with a required reference', target((m) => (m.entities.push(entity('c', [attr('a_id', 'uuid', { required: true })])), m.relationships.push(rel('c_a', 'c', 'a_id', 'a')))), 'ok'],
    ['a relationship from an existing entity', target((m) => (attributesOf(m, 0).push(attr('z', 'uuid')), m.relationships.push(rel('a_z', 'a', 'z', 'b')))), 'unsupported_transition'],
    ['a relationship renamed', target((m) => (m.relationships[0] = { ...m.relationships[0], name: 'a_b2' })), 'unsupported_transition'],
    ['a unique index added on an existing entity', target((m) => m.indices.push({ name: 'b_t', entity: 'b', fields: ['t'], unique: true })), 'ok'],
    ['an index made unique', target((m) => (m.indices[0] = { ...m.indices[0], unique: true })), 'unsupported_transition'],
    ['an index field order changed', target((m) => (m.indices[0] = { ...m.indices[0], fields: ['n', 's'] })), 'unsupported_transition'],
  ];

  it.each(cases)('%s', async (_label, schema, expected) => {
    const serviceId = await seed();
    expect(outcome(await design(serviceId, current()))).toBe('ok');
    expect(outcome(await materialise(serviceId, 2))).toBe('ok');
    const evolved = await evolve(serviceId, schema);
    expect(outcome(evolved)).toBe(expected);
    if (evolved.ok) expect(evolved.result).toMatchObject({ schema_version: 2, service_revision: 4, schema });
  });

  it('keeps the earlier history: a changed past entry is refused, a padded one is the same', async () => {
    const serviceId = await seed();
    await design(serviceId, current());
    await materialise(serviceId, 2);
    expect(outcome(await evolve(serviceId, target((m) => (m['query_patterns'] = ['x']))))).toBe('ok');
    const third = (operations: string[]): Json => ({
      ...target((m) => (m['query_patterns'] = ['y'])),
      schema_version: 3,
      migration_history: [
        { from_schema_version: 1, to_schema_version: 2, operations },
        { from_schema_version: 2, to_schema_version: 3, operations: ['next'] },
      ],
    });
    expect(outcome(await evolve(serviceId, third(['other']), 4, 2))).toBe('unsupported_transition');
    expect(outcome(await evolve(serviceId, third(['  step ']), 4, 2))).toBe('ok');
  });
});
