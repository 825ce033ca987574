// A walk of the contract's data sections (§6 records, §8 discovery and
// maintenance) read literally, as a black-box test writer reads them, over
// raw JSON-RPC lines on stdio (so float literals such as 1.0 and -0.0 reach
// the server as written) on every storage profile.

import { describe, expect, it } from 'vitest';
import { serverProfiles } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';
import { rawLineSession } from '../../support/raw-stdio.js';

interface Envelope {
  ok: boolean;
  result: Record<string, unknown> | null;
  error: { code: string; issues: { code: string; path: string }[] } | null;
}

/** A raw stdio session: `call` sends the arguments as written and returns the envelope and its text. */
async function rawSession(args: string[], env: Record<string, string>) {
  const session = rawLineSession(['serve', ...args], env);
  await session.initialize();
  return {
    text: (name: string, argumentsText: string) => session.toolText(name, argumentsText),
    call: async (name: string, args: unknown) => JSON.parse(await session.toolText(name, JSON.stringify(args))) as Envelope,
    close: () => session.close(),
  };
}

type Session = Awaited<ReturnType<typeof rawSession>>;

async function materialise(session: Session, name: string, manifest: object): Promise<string> {
  const seeded = await session.call('aipcs_service_seed', { domain_name: name, domain_class: 'knowledge', intent_description: 'Spec walk.', idempotency_key: `s-${name}` });
  const serviceId = seeded.result?.['service_id'] as string;
  expect((await session.call('aipcs_service_design', { service_id: serviceId, schema: manifest, idempotency_key: `d-${name}` })).ok).toBe(true);
  expect((await session.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: `m-${name}` })).ok).toBe(true);
  return serviceId;
}

/** Compact JSON with sorted keys and non-ASCII unescaped, UTF-8 bytes: the §6.3 measure. */
function measured(fields: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1)))));
}

const sizeManifest = {
  manifest_version: 2,
  schema_version: 1,
  entities: [
    {
      name: 'blob',
      attributes: [...serverManaged(), ...['s1', 's2', 's3', 's4', 's5', 'spare'].map((name) => ({ name, type: 'string' })), { name: 'tags', type: 'string_list' }],
    },
  ],
};

/** A record whose complete field set (absent fields null) measures exactly `total` bytes, ending in `tail`. */
function recordOfSize(total: number, tail: string): Record<string, string> {
  const record: Record<string, string> = { s1: '', s2: '', s3: '', s4: '', s5: tail };
  const complete = (r: Record<string, string>) => measured({ spare: null, tags: null, ...r });
  let remaining = total - complete(record);
  for (const key of ['s1', 's2', 's3', 's4', 's5']) {
    const take = Math.min(16_000, remaining);
    record[key] = 'a'.repeat(take) + (record[key] ?? '');
    remaining -= take;
  }
  expect(complete(record)).toBe(total);
  return record;
}

for (const profile of await serverProfiles()) {
  describe(`contract §6 and §8 read literally (${profile.name})`, () => {
    it('bounds a record at 65536 bytes of compact sorted UTF-8 JSON, nulls of absent fields included, whatever the escapes', async () => {
      const storage = await profile.fresh();
      const session = await rawSession(storage.args, storage.env);
      try {
        const serviceId = await materialise(session, 'sizes', sizeManifest);
        let key = 0;
        const create = (record: object) => session.call('aipcs_record_create', { service_id: serviceId, entity_name: 'blob', record, idempotency_key: `k${++key}` });
        for (const tail of ['"', '\\', '\u0001', '\n', '\u2028', '\u007f', '/', '\u00e9', '\u{1F600}', '<>&']) {
          expect((await create(recordOfSize(65_536, tail))).ok, JSON.stringify(tail)).toBe(true);
          expect((await create(recordOfSize(65_537, tail))).error?.code, JSON.stringify(tail)).toBe('validation_failed');
        }
        // One string: 16384 UTF-8 bytes, not characters.
        expect((await create({ s1: '\u{1F600}'.repeat(4096) })).ok).toBe(true);
        expect((await create({ s1: `${'a'.repeat(16_383)}\u00e9` })).error?.issues[0]).toMatchObject({ code: 'invalid_length', path: 'record.s1' });
        // List members: 1..256 code points each, at most 256 distinct members.
        expect((await create({ tags: ['\u{1F600}'.repeat(256)] })).ok).toBe(true);
        expect((await create({ tags: ['\u{1F600}'.repeat(257)] })).error?.issues[0]).toMatchObject({ code: 'invalid_length', path: 'record.tags.0' });
        expect((await create({ tags: Array.from({ length: 256 }, (_, i) => `t${i}`) })).ok).toBe(true);
        expect((await create({ tags: Array.from({ length: 257 }, (_, i) => `t${i}`) })).error?.issues[0]).toMatchObject({ code: 'invalid_length', path: 'record.tags' });
      } finally {
        session.close();
        await storage.drop();
      }
    });

    it('compares numbers numerically in filters, unique indexes and fingerprints, and orders numeric facet values by number', async () => {
      const storage = await profile.fresh();
      const session = await rawSession(storage.args, storage.env);
      try {
        const serviceId = await materialise(session, 'numbers', {
          manifest_version: 2,
          schema_version: 1,
          entities: [{ name: 'm', attributes: [...serverManaged(), { name: 'n', type: 'number' }, { name: 'u', type: 'number' }, { name: 'i', type: 'integer' }] }],
          indices: [{ name: 'm_u', entity: 'm', fields: ['u'], unique: true }],
          discovery_facets: [{ entity: 'm', field: 'i' }],
        });
        const create = (record: string, key: string) => session.text('aipcs_record_create', `{"service_id":"${serviceId}","entity_name":"m","record":${record},"idempotency_key":"${key}"}`);
        const first = JSON.parse(await create('{"n":-0.0,"u":1}', 'a')) as Envelope;
        expect(first.ok).toBe(true);
        // §6.4: 1 and 1.0 in a number field replay each other.
        expect((JSON.parse(await create('{"n":-0.0,"u":1.0}', 'a')) as Envelope).result?.['replayed']).toBe(true);
        // Unique index: 1.0 equals the stored 1.
        expect((JSON.parse(await create('{"u":1.0}', 'b')) as Envelope).error?.code).toBe('constraint_violation');
        // Search: numeric equality, so 0 finds the stored -0.0.
        const found = JSON.parse(await session.text('aipcs_record_search', `{"service_id":"${serviceId}","entity_name":"m","filters":{"n":0}}`)) as Envelope;
        expect((found.result?.['records'] as unknown[]).length).toBe(1);
        for (const [index, value] of [10, 9, 2, -1, -20, 100, 2].entries()) expect(JSON.parse(await create(`{"i":${value}}`, `i${index}`)).ok).toBe(true);
        const summary = await session.call('aipcs_service_summary', { service_id: serviceId });
        const facets = summary.result?.['facets'] as { values: { value: number; count: number }[] }[];
        expect(facets[0]?.values).toEqual([
          { value: 2, count: 2 },
          { value: -20, count: 1 },
          { value: -1, count: 1 },
          { value: 9, count: 1 },
          { value: 10, count: 1 },
          { value: 100, count: 1 },
        ]);
        // §6.4 update: the updates object as supplied, so 1 and 1.0 differ.
        const id = (first.result?.['record'] as { id: string }).id;
        const update = (updates: string) =>
          session.text('aipcs_record_update', `{"service_id":"${serviceId}","entity_name":"m","record_id":"${id}","updates":${updates},"expected_record_version":1,"idempotency_key":"u"}`);
        expect((JSON.parse(await update('{"n":1}')) as Envelope).ok).toBe(true);
        expect((JSON.parse(await update('{"n":1.0}')) as Envelope).error?.code).toBe('changed_fingerprint');
      } finally {
        session.close();
        await storage.drop();
      }
    });

    it('finds duplicate authority only among present values of one entity (blank strings are absent)', async () => {
      const storage = await profile.fresh();
      const session = await rawSession(storage.args, storage.env);
      try {
        const authority = [...serverManaged(), { name: 'provenance_source', type: 'string' }, { name: 'source_ref', type: 'string' }];
        const serviceId = await materialise(session, 'authority', {
          manifest_version: 2,
          schema_version: 1,
          entities: [
            { name: 'note', attributes: authority },
            { name: 'other', attributes: authority },
          ],
        });
        let key = 0;
        const create = async (record: object, entity = 'note') =>
          ((await session.call('aipcs_record_create', { service_id: serviceId, entity_name: entity, record, idempotency_key: `k${++key}` })).result?.['record'] as { id: string }).id;
        await create({ provenance_source: '' });
        await create({ provenance_source: '' });
        await create({ provenance_source: '  ' });
        await create({ provenance_source: '  ' });
        await create({ provenance_source: 'Z' });
        await create({ provenance_source: 'Z' }, 'other');
        await create({ provenance_source: 'W ' });
        await create({ provenance_source: 'W' });
        const bySource = await create({ source_ref: 'X', provenance_source: 'Q' });
        const byRef = await create({ source_ref: 'X' });
        const byQ = await create({ provenance_source: 'Q' });
        const scan = await session.call('aipcs_maintenance_scan', { service_id: serviceId, scan_types: ['duplicate_authority'] });
        const candidates = (scan.result?.['candidates'] as { record: { id: string }; detail: object }[]).map((candidate) => [candidate.record.id, candidate.detail]);
        expect(candidates).toEqual(
          [
            [bySource, { duplicate_count: 2, field_name: 'provenance_source' }],
            [byRef, { duplicate_count: 2, field_name: 'source_ref' }],
            [byQ, { duplicate_count: 2, field_name: 'provenance_source' }],
          ].sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)),
        );
      } finally {
        session.close();
        await storage.drop();
      }
    });
  });
}
