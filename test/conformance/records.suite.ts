// Conformance: record rules of contract §6 over any adapter — creation,
// validation, bounds measured the contract's way, optimistic concurrency,
// idempotent replay, search semantics, cursors and history.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../src/aipcs/core/application.js';
import type { JsonObject, JsonValue } from '../../src/common/json.js';
import { encodeCursor } from '../../src/aipcs/core/cursor.js';
import { PAGE_TEXT_BUDGET } from '../../src/aipcs/core/records.js';
import { renderContractJson } from '../../src/aipcs/contract/envelope.js';
import { storeLayoutOf } from '../../src/aipcs/core/layout.js';
import { notesManifest, notesManifestV2, serverManaged, systemColumnNamesManifest } from '../support/manifests.js';
import { appOver, manifest, materialisedNotes, sha256, type StorageHarness, type StorageLocation, type TestApp } from './harness.js';

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

export function recordsSuite(harness: StorageHarness): void {
  describe(`records conformance (${harness.name})`, () => {
    let location: StorageLocation;
    let storage: StoragePorts;
    let app: TestApp;
    let serviceId: string;
    let keyCounter = 0;
    const key = () => `key-${++keyCounter}`;

    beforeEach(async () => {
      location = await harness.create();
      storage = await location.open();
      app = appOver(storage);
      const seeded = await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' });
      serviceId = seeded['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
      await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    });

    afterEach(async () => {
      await storage.close();
      await location.destroy();
    });

    const create = async (record: JsonObject, entityName = 'note', idempotencyKey = key()) =>
      (await app.records.create({ serviceId, entityName, record, idempotencyKey }))['record'] as JsonObject;

    describe('create and get', () => {
      it('creates a record with server-managed fields and every domain field', async () => {
        const record = await create({ title: '  Release decision  ', confidence: 1n, tags: ['release'], status: 'complete' });
        expect(Object.keys(record)).toEqual(['entity_name', 'id', 'record_version', 'created_at', 'updated_at', 'created_via', 'fields']);
        expect(record).toMatchObject({ entity_name: 'note', record_version: 1n, created_via: 'mcp' });
        const fields = record['fields'] as JsonObject;
        expect(Object.keys(fields)).toEqual(['aliases', 'confidence', 'detail', 'due_at', 'pinned', 'priority', 'project_id', 'status', 'tags', 'title']);
        expect(fields['title']).toBe('Release decision');
        expect(fields['confidence']).toBe(1);
        expect(typeof fields['confidence']).toBe('number');
        expect(fields['detail']).toBeNull();
        expect(await app.records.get(serviceId, 'note', record['id'] as string)).toEqual(record);
        expect(record['updated_at']).toBe(record['created_at']);
      });

      it('rejects undeclared, server-managed and missing required fields, wrong types and disallowed values', async () => {
        const bad: JsonObject[] = [
          { title: 'x', unknown: 1n },
          { detail: 'no title' },
          { title: null },
          { title: 5n },
          { title: 'x', priority: 1.0 },
          { title: 'x', priority: true },
          { title: 'x', priority: 9223372036854775808n },
          { title: 'x', confidence: 9007199254740993n },
          { title: 'x', pinned: 1n },
          { title: 'x', due_at: '2030-01-01T00:00:00+01:00' },
          { title: 'x', due_at: '2030-01-01' },
          { title: 'x', project_id: 'not-a-uuid' },
          { title: 'x', tags: ['a', 'a'] },
          { title: 'x', tags: [''] },
          { title: 'x', status: 'unknown' },
          { title: 'nul\u0000' },
        ];
        for (const record of bad) await rejects(app.records.create({ serviceId, entityName: 'note', record, idempotencyKey: key() }), 'validation_failed');
        await rejects(app.records.create({ serviceId, entityName: 'nothing', record: { title: 'x' }, idempotencyKey: key() }), 'validation_failed');
      });

      it('accepts zero-offset datetimes verbatim', async () => {
        for (const due of ['2030-01-01T00:00:00Z', '2030-01-01T00:00:00+00:00', '2030-01-01 00:00:00Z', '2030-01-01t00:00:00Z', '2030-01-01T00:00:00.123456789Z', '20300101T000000Z', '2011-W01-2T00:05:23Z']) {
          const record = await create({ title: 'x', due_at: due });
          expect((record['fields'] as JsonObject)['due_at']).toBe(due);
        }
      });

      it('enforces relationships and unique indexes', async () => {
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'x', project_id: '22222222-2222-4222-8222-222222222222' }, idempotencyKey: key() }), 'constraint_violation');
        const project = await create({ name: 'P', code: 'P1' }, 'project');
        await create({ title: 'x', project_id: project['id'] as string });
        await rejects(app.records.create({ serviceId, entityName: 'project', record: { name: 'Q', code: 'P1' }, idempotencyKey: key() }), 'constraint_violation');
        await rejects(app.records.delete({ serviceId, entityName: 'project', recordId: project['id'] as string, expectedRecordVersion: 1n, idempotencyKey: key() }), 'constraint_violation');
      });

      it('deletes a record that references only itself, but not one another record references (contract §6.10)', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'trees', domainClass: 'knowledge', intentDescription: 'Trees.', idempotencyKey: 'trees-s' });
        const trees = seeded['service_id'] as string;
        const document = {
          manifest_version: 2n,
          schema_version: 1n,
          entities: [{ name: 'node', attributes: [...serverManaged(), { name: 'label', type: 'string' }, { name: 'parent_id', type: 'uuid' }] }],
          relationships: [{ name: 'node_parent', from: { entity: 'node', field: 'parent_id' }, to: { entity: 'node', field: 'id' }, on_delete: 'restrict' }],
        };
        await app.lifecycle.design({ serviceId: trees, manifest: manifest(document), idempotencyKey: 'trees-d' });
        await app.lifecycle.materialise({ serviceId: trees, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'trees-m' });
        const node = async (record: JsonObject) => ((await app.records.create({ serviceId: trees, entityName: 'node', record, idempotencyKey: key() }))['record'] as JsonObject)['id'] as string;
        const loop = await node({ label: 'loop' });
        await app.records.update({ serviceId: trees, entityName: 'node', recordId: loop, updates: { parent_id: loop }, expectedRecordVersion: 1n, idempotencyKey: key() });
        const parent = await node({ label: 'parent' });
        await app.records.update({ serviceId: trees, entityName: 'node', recordId: parent, updates: { parent_id: parent }, expectedRecordVersion: 1n, idempotencyKey: key() });
        await node({ label: 'child', parent_id: parent });
        expect(await app.records.delete({ serviceId: trees, entityName: 'node', recordId: loop, expectedRecordVersion: 2n, idempotencyKey: key() })).toEqual({ id: loop, record_version: 3n, replayed: false });
        await rejects(app.records.get(trees, 'node', loop), 'not_found');
        await rejects(app.records.delete({ serviceId: trees, entityName: 'node', recordId: parent, expectedRecordVersion: 2n, idempotencyKey: key() }), 'constraint_violation');
      });

      it('refuses to delete a record referenced through any of several relationships', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'links', domainClass: 'knowledge', intentDescription: 'Links.', idempotencyKey: 'links-s' });
        const links = seeded['service_id'] as string;
        const document = {
          manifest_version: 2n,
          schema_version: 1n,
          entities: [
            { name: 'node', attributes: [...serverManaged(), { name: 'label', type: 'string' }, { name: 'parent_id', type: 'uuid' }] },
            { name: 'pin', attributes: [...serverManaged(), { name: 'node_id', type: 'uuid' }] },
          ],
          relationships: [
            { name: 'node_parent', from: { entity: 'node', field: 'parent_id' }, to: { entity: 'node', field: 'id' }, on_delete: 'restrict' },
            { name: 'pin_node', from: { entity: 'pin', field: 'node_id' }, to: { entity: 'node', field: 'id' }, on_delete: 'restrict' },
          ],
        };
        await app.lifecycle.design({ serviceId: links, manifest: manifest(document), idempotencyKey: 'links-d' });
        await app.lifecycle.materialise({ serviceId: links, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'links-m' });
        const make = async (entityName: string, record: JsonObject) => ((await app.records.create({ serviceId: links, entityName, record, idempotencyKey: key() }))['record'] as JsonObject)['id'] as string;
        // Each node is referenced through one relationship only, the first or the second.
        const parent = await make('node', { label: 'parent' });
        const pinned = await make('node', { label: 'pinned' });
        await make('node', { label: 'child', parent_id: parent });
        await make('pin', { node_id: pinned });
        for (const recordId of [parent, pinned]) {
          await rejects(app.records.delete({ serviceId: links, entityName: 'node', recordId, expectedRecordVersion: 1n, idempotencyKey: key() }), 'constraint_violation');
        }
        // The port's own answer too: a foreign key behind it would refuse the delete anyway.
        const locator = { backend: storage.backend, namespace: `svc_${links.replaceAll('-', '')}` };
        const sources = [{ entity: 'node', column: 'parent_id' }, { entity: 'pin', column: 'node_id' }];
        const referenced = await storage.data.write(locator, 'agent-a', async (tx) => [await tx.isReferenced({ entity: 'node', id: parent }, sources), await tx.isReferenced({ entity: 'node', id: pinned }, sources)]);
        expect(referenced).toEqual([true, true]);
      });

      it('answers not_found for unknown records, records of another entity and unknown services', async () => {
        const record = await create({ title: 'x' });
        await rejects(app.records.get(serviceId, 'note', '33333333-3333-4333-8333-333333333333'), 'not_found');
        await rejects(app.records.get(serviceId, 'project', record['id'] as string), 'not_found');
        await rejects(app.records.get('33333333-3333-4333-8333-333333333333', 'note', record['id'] as string), 'not_found');
      });

      it('refuses data tools on a service that is not materialised', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'other', domainClass: 'k', intentDescription: 'i', idempotencyKey: 's2' });
        await rejects(app.records.create({ serviceId: seeded['service_id'] as string, entityName: 'note', record: { title: 'x' }, idempotencyKey: key() }), 'storage_unavailable');
      });
    });

    describe('bounds', () => {
      it('accepts an integer literal of exactly +-2^53 in a number field, stored as a float, and rejects one more', async () => {
        for (const value of [2n ** 53n, -(2n ** 53n)]) expect((await create({ title: 'n', confidence: value }))['fields']).toMatchObject({ confidence: Number(value) });
        for (const value of [2n ** 53n + 1n, -(2n ** 53n) - 1n]) await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'n', confidence: value }, idempotencyKey: key() }), 'validation_failed');
      });

      it('accepts an integer field from -2^63 to 2^63-1 and rejects one beyond either end', async () => {
        for (const value of [-(2n ** 63n), 2n ** 63n - 1n]) expect((await create({ title: 'n', priority: value }))['fields']).toMatchObject({ priority: value });
        for (const value of [-(2n ** 63n) - 1n, 2n ** 63n]) await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'n', priority: value }, idempotencyKey: key() }), 'validation_failed');
      });

      it('stores and answers -0.0 in a number field as 0.0', async () => {
        const created = await create({ title: 'n', confidence: -0 });
        expect(Object.is((created['fields'] as JsonObject)['confidence'], 0)).toBe(true);
        const read = await app.records.get(serviceId, 'note', created['id'] as string);
        expect(Object.is((read['fields'] as JsonObject)['confidence'], 0)).toBe(true);
      });

      it('accepts a string of exactly 16384 UTF-8 bytes and rejects one more', async () => {
        await create({ title: 'é'.repeat(8192) });
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'é'.repeat(8192) + 'a' }, idempotencyKey: key() }), 'validation_failed');
      });

      it('stores, finds and keeps unique 16 KiB strings that do not compress', async () => {
        // Text no compressor shrinks: a btree entry of it would not fit a database page.
        const noise = (seed: string) => {
          let text = '';
          for (let i = 0; text.length < 16384; i++) text += sha256(`${seed}-${i}`);
          return [...text.slice(0, 16384)].map((c, i) => (i % 3 === 0 ? c.toUpperCase() : c)).join('');
        };
        const title = noise('title');
        const note = await create({ title, status: 'draft' });
        await app.records.update({ serviceId, entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 1n, updates: { title: noise('other') }, idempotencyKey: key() });
        await create({ title });
        const found = await app.records.list({ serviceId, entityName: 'note', filters: { title }, branch: null, limit: 10, cursor: null });
        expect((found['records'] as JsonObject[]).length).toBe(1);
        const code = noise('code');
        await create({ name: 'P', code }, 'project');
        await rejects(app.records.create({ serviceId, entityName: 'project', record: { name: 'Q', code }, idempotencyKey: key() }), 'constraint_violation');
        await create({ name: 'R', code: `${code.slice(0, -1)}!` }, 'project');
      });

      it('bounds string lists to 256 distinct items of at most 256 characters', async () => {
        const items = Array.from({ length: 256 }, (_, i) => `t${i}`);
        await create({ title: 'x', tags: items });
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'x', tags: [...items, 'one-more'] }, idempotencyKey: key() }), 'validation_failed');
        await create({ title: 'x', tags: ['😀'.repeat(256)] });
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'x', tags: ['😀'.repeat(257)] }, idempotencyKey: key() }), 'validation_failed');
      });

      it('bounds the complete record to 65536 bytes measured as compact sorted JSON', async () => {
        // {"aliases":[...]} etc: fill list members to approach the limit exactly.
        const fill = (n: number): JsonObject => {
          const title = 'x'.repeat(16000);
          return { title, detail: 'y'.repeat(16000), status: 'draft', aliases: Array.from({ length: n }, (_, i) => `${String(i).padStart(3, '0')}${'z'.repeat(253)}`) };
        };
        const size = (record: JsonObject) => {
          const full = { aliases: null, confidence: null, detail: null, due_at: null, pinned: null, priority: null, project_id: null, status: null, tags: null, title: null, ...record };
          return Buffer.byteLength(JSON.stringify(Object.fromEntries(Object.entries(full).sort(([a], [b]) => (a < b ? -1 : 1)))), 'utf8');
        };
        let n = 0;
        while (size(fill(n + 1)) <= 65536) n++;
        const base = fill(n);
        const slack = 65536 - size(base);
        const atLimit = { ...base, title: (base['title'] as string) + 'x'.repeat(slack) };
        expect(size(atLimit)).toBe(65536);
        await create(atLimit);
        const over = { ...base, title: (base['title'] as string) + 'x'.repeat(slack + 1) };
        await rejects(app.records.create({ serviceId, entityName: 'note', record: over, idempotencyKey: key() }), 'validation_failed');
      });
      it('measures non-ASCII text as its UTF-8 bytes, not as escapes', async () => {
        // About 33 KB as UTF-8, about 82 KB were each character written as a \u escape.
        await create({ title: 'é'.repeat(8192), detail: '€'.repeat(5461) });
      });

      it('measures a number field the way it is stored: an integer literal counts as a float (1.0)', async () => {
        const fill = (n: number): JsonObject => ({ title: 'x'.repeat(16000), detail: 'y'.repeat(16000), status: 'draft', aliases: Array.from({ length: n }, (_, i) => `${String(i).padStart(3, '0')}${'z'.repeat(253)}`) });
        // JSON.stringify writes the confidence 1 as `1`; the stored float is `1.0`, two bytes more.
        const size = (record: JsonObject) => {
          const full = { aliases: null, confidence: 1, detail: null, due_at: null, pinned: null, priority: null, project_id: null, status: null, tags: null, title: null, ...record };
          return Buffer.byteLength(JSON.stringify(Object.fromEntries(Object.entries(full).sort(([a], [b]) => (a < b ? -1 : 1)))), 'utf8') + 2;
        };
        let n = 0;
        while (size(fill(n + 1)) <= 65536) n++;
        const base = fill(n);
        const padded = (extra: number): JsonObject => ({ ...base, title: (base['title'] as string) + 'x'.repeat(65536 - size(base) + extra) });
        expect(size(padded(0))).toBe(65536);
        await create({ ...padded(0), confidence: 1n });
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { ...padded(1), confidence: 1n }, idempotencyKey: key() }), 'validation_failed');
      });
    });

    describe('allowed values and the complete record after an update', () => {
      it('checks allowed values on every string_list member, and compares allowed numbers by value (1.0 is the allowed integer literal 1)', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'palette', domainClass: 'knowledge', intentDescription: 'Colours.', idempotencyKey: 'seed-palette' });
        const palette = seeded['service_id'] as string;
        const attributes = [...serverManaged(), { name: 'colours', type: 'string_list', allowed_values: ['red', 'green'] }, { name: 'weight', type: 'number', allowed_values: [1n, 2.5] }];
        const document: JsonObject = { manifest_version: 2n, schema_version: 1n, entities: [{ name: 'swatch', attributes }], relationships: [], indices: [], query_patterns: [], discovery_facets: [], retrieval_guidance: null };
        await app.lifecycle.design({ serviceId: palette, manifest: manifest(document), idempotencyKey: 'design-palette' });
        await app.lifecycle.materialise({ serviceId: palette, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'mat-palette' });
        const make = (record: JsonObject) => app.records.create({ serviceId: palette, entityName: 'swatch', record, idempotencyKey: key() });
        expect(((await make({ colours: ['green', 'red'], weight: 1n }))['record'] as JsonObject)['fields']).toEqual({ colours: ['green', 'red'], weight: 1 });
        await make({ weight: 1 });
        await make({ weight: 2.5 });
        await rejects(make({ colours: ['red', 'blue'] }), 'validation_failed');
        await rejects(make({ weight: 2n }), 'validation_failed');
      });

      it('refuses an update whose complete record would pass 65536 bytes, and writes nothing', async () => {
        const items = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, '0')}${'z'.repeat(246)}`);
        const record = await create({ title: 'x'.repeat(16000), detail: 'y'.repeat(16000), aliases: items('a', 60) });
        const id = record['id'] as string;
        // Each request is well under the bound; the merged record is not.
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { tags: items('t', 80) }, expectedRecordVersion: 1n, idempotencyKey: key() }), 'validation_failed');
        expect(await app.records.get(serviceId, 'note', id)).toEqual(record);
        await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { tags: items('t', 10) }, expectedRecordVersion: 1n, idempotencyKey: key() });
      });
    });

    describe('update, delete and idempotency', () => {
      it('updates with the exact version, bumping it even without a change', async () => {
        const record = await create({ title: 'x', priority: 1n });
        const id = record['id'] as string;
        const updated = (await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { priority: 1n }, expectedRecordVersion: 1n, idempotencyKey: key() }))['record'] as JsonObject;
        expect(updated['record_version']).toBe(2n);
        expect(updated['created_at']).toBe(record['created_at']);
        expect(updated['updated_at']).not.toBe(record['updated_at']);
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { priority: 2n }, expectedRecordVersion: 1n, idempotencyKey: key() }), 'stale_record_version');
        const cleared = (await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { priority: null }, expectedRecordVersion: 2n, idempotencyKey: key() }))['record'] as JsonObject;
        expect((cleared['fields'] as JsonObject)['priority']).toBeNull();
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: null }, expectedRecordVersion: 3n, idempotencyKey: key() }), 'validation_failed');
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: '44444444-4444-4444-8444-444444444444', updates: { title: 'y' }, expectedRecordVersion: 1n, idempotencyKey: key() }), 'not_found');
        // Clearing a required field is refused before any state is read: not_found and stale_record_version do not come first.
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: '44444444-4444-4444-8444-444444444444', updates: { title: null }, expectedRecordVersion: 1n, idempotencyKey: key() }), 'validation_failed');
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: null }, expectedRecordVersion: 1n, idempotencyKey: key() }), 'validation_failed');
      });

      it('replays an exact retry without writing, and refuses a changed request under the key', async () => {
        const command = { serviceId, entityName: 'note', record: { title: 'x', confidence: 1n } as JsonObject, idempotencyKey: 'create-once' };
        const first = await app.records.create(command);
        const again = await app.records.create({ ...command, record: { title: 'x', confidence: 1.0, detail: null } });
        expect(again).toEqual({ ...first, replayed: true });
        const listed = await app.records.list({ serviceId, entityName: 'note', limit: 100, cursor: null, branch: null });
        expect((listed['records'] as JsonObject[]).length).toBe(1);
        await rejects(app.records.create({ ...command, record: { title: 'y' } }), 'changed_fingerprint');
        const id = (first['record'] as JsonObject)['id'] as string;
        await rejects(app.records.delete({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 1n, idempotencyKey: 'create-once' }), 'changed_fingerprint');
      });

      it('refuses a key reused for an update or delete that differs only in expected_record_version', async () => {
        const id = (await create({ title: 'x' }))['id'] as string;
        const update = { serviceId, entityName: 'note', recordId: id, updates: { title: 'y' }, expectedRecordVersion: 1n, idempotencyKey: 'update-once' };
        await app.records.update(update);
        await rejects(app.records.update({ ...update, expectedRecordVersion: 2n }), 'changed_fingerprint');
        const remove = { serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 2n, idempotencyKey: 'delete-once' };
        await app.records.delete(remove);
        await rejects(app.records.delete({ ...remove, expectedRecordVersion: 3n }), 'changed_fingerprint');
      });

      it('refuses a create key reused for another entity with the same fields', async () => {
        const twins = (await app.lifecycle.seed({ domainName: 'twins', domainClass: 'knowledge', intentDescription: 'Twins.', idempotencyKey: 'twins-s' }))['service_id'] as string;
        const twin = (name: string): JsonObject => ({ name, attributes: [...serverManaged(), { name: 'title', type: 'string' }] });
        await app.lifecycle.design({ serviceId: twins, manifest: manifest({ manifest_version: 2n, schema_version: 1n, entities: [twin('left'), twin('right')] }), idempotencyKey: 'twins-d' });
        await app.lifecycle.materialise({ serviceId: twins, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'twins-m' });
        const command = { serviceId: twins, entityName: 'left', record: { title: 'same' }, idempotencyKey: 'twin-create' };
        await app.records.create(command);
        await rejects(app.records.create({ ...command, entityName: 'right' }), 'changed_fingerprint');
      });

      it('does not consume a key on failure', async () => {
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { detail: 'no title' }, idempotencyKey: 'k' }), 'validation_failed');
        const created = await app.records.create({ serviceId, entityName: 'note', record: { title: 'ok' }, idempotencyKey: 'k' });
        expect(created['replayed']).toBe(false);
      });

      it('refuses a delete at a stale version, and an update pointing a relationship at a missing record, writing nothing', async () => {
        const record = await create({ title: 'x' });
        const id = record['id'] as string;
        await rejects(app.records.delete({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 2n, idempotencyKey: key() }), 'stale_record_version');
        const missing = '44444444-4444-4444-8444-444444444444';
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { project_id: missing }, expectedRecordVersion: 1n, idempotencyKey: key() }), 'constraint_violation');
        expect(await app.records.get(serviceId, 'note', id)).toEqual(record);
      });

      it('hard-deletes, keeps history, and replays the delete result', async () => {
        const record = await create({ title: 'x' });
        const id = record['id'] as string;
        const command = { serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 1n, idempotencyKey: 'del' };
        expect(await app.records.delete(command)).toEqual({ id, record_version: 2n, replayed: false });
        expect(await app.records.delete(command)).toEqual({ id, record_version: 2n, replayed: true });
        await rejects(app.records.get(serviceId, 'note', id), 'not_found');
        await rejects(app.records.delete({ ...command, expectedRecordVersion: 2n, idempotencyKey: 'del2' }), 'not_found');
        const history = await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 50, cursor: null });
        expect((history['events'] as JsonObject[]).map((event) => [event['kind'], event['record_version']])).toEqual([
          ['create', 1n],
          ['delete', 2n],
        ]);
        // The delete event keeps the record's last fields as its before snapshot (contract 6.11).
        const deleted = (history['events'] as JsonObject[])[1] as JsonObject;
        expect(deleted['before']).toEqual({ fields: record['fields'] as JsonObject });
        expect(deleted['after']).toBeNull();
      });

      it('dates an update and a delete after the record it changes, even when the clock steps back', async () => {
        const record = await create({ title: 'x' });
        const id = record['id'] as string;
        app.clock.advance(-1_000_000n);
        const updated = (await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: 'y' }, expectedRecordVersion: 1n, idempotencyKey: key() }))['record'] as JsonObject;
        app.clock.advance(-1_000_000n);
        await app.records.delete({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 2n, idempotencyKey: key() });
        const events = (await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 10, cursor: null }))['events'] as JsonObject[];
        // All in the clock's first second with six fraction digits: text order is time order.
        const times = [record['updated_at'], updated['updated_at'], events[2]?.['occurred_at']] as string[];
        for (const time of times) expect(time).toMatch(/^2027-01-15T08:00:00\.\d{6}Z$/);
        expect(new Set(times).size).toBe(3);
        expect([...times].sort()).toEqual(times);
        expect(events.map((event) => event['occurred_at'])).toEqual([record['created_at'], updated['updated_at'], times[2]]);
      });

      it('serialises concurrent updates: exactly one winner per version', async () => {
        const record = await create({ title: 'x', priority: 0n });
        const id = record['id'] as string;
        const attempts = Array.from({ length: 5 }, (_, i) => app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { priority: BigInt(i + 1) }, expectedRecordVersion: 1n, idempotencyKey: `u${i}` }));
        const outcomes = await Promise.allSettled(attempts);
        expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
        for (const outcome of outcomes) if (outcome.status === 'rejected') expect((outcome.reason as { code: string }).code).toBe('stale_record_version');
        const history = await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 50, cursor: null });
        expect((history['events'] as JsonObject[]).map((event) => event['record_version'])).toEqual([1n, 2n]);
      });
    });

    describe('search, list and cursors', () => {
      it('matches scalar equality and list membership, and rejects unfilterable fields', async () => {
        const a = await create({ title: 'A', status: 'draft', tags: ['x', 'y'], confidence: 0.5, pinned: true });
        await create({ title: 'B', status: 'complete', tags: ['y'], confidence: 1n, pinned: false });
        const search = async (filters: JsonObject) =>
          ((await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters }))['records'] as JsonObject[]).map((r) => (r['fields'] as JsonObject)['title']);
        expect(await search({ status: 'draft' })).toEqual(['A']);
        expect(await search({ tags: 'y' })).toEqual(['A', 'B']);
        expect(await search({ tags: 'x', status: 'draft' })).toEqual(['A']);
        expect(await search({ confidence: 1.0 })).toEqual(['B']);
        expect(await search({ confidence: 1n })).toEqual(['B']);
        expect(await search({ pinned: true })).toEqual(['A']);
        expect(await search({ status: 'not-allowed-but-fine' })).toEqual([]);
        // A member of another list field (aliases) is no member of tags.
        await create({ title: 'D', tags: ['w'], aliases: ['z', 'y'] });
        expect(await search({ tags: 'z' })).toEqual([]);
        expect(await search({ tags: 'y' })).toEqual(['A', 'B']);
        // A member filter is 1..256 characters (code points), like a stored member.
        const longest = '\u{1F600}'.repeat(256);
        await create({ title: 'C', tags: [longest] });
        expect(await search({ tags: longest })).toEqual(['C']);
        for (const filters of [{ detail: 'x' }, { aliases: 'x' }, { id: a['id'] as string }, { nothing: 'x' }, { priority: '1' }, { priority: 1.5 }, { tags: '' }, { tags: 'x'.repeat(257) }] as JsonObject[]) {
          await rejects(app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters }), 'validation_failed');
        }
      });

      it('finds untrimmed stored values by the untrimmed filter and returns them trimmed', async () => {
        await create({ title: '  A  ' });
        const search = async (title: string) => (await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters: { title } }))['records'] as JsonObject[];
        expect(await search('A')).toEqual([]);
        const found = await search('  A  ');
        expect((found[0]?.['fields'] as JsonObject)['title']).toBe('A');
      });

      it('refuses a member filter holding U+0000, as an equality filter on a string, on every backend', async () => {
        await create({ title: 'A', tags: ['a'] });
        for (const filters of [{ tags: 'a\u0000' }, { tags: 'a\u0000', title: 'A' }, { title: 'A\u0000' }] as JsonObject[]) {
          await rejects(app.records.list({ serviceId, entityName: 'note', limit: 5, cursor: null, branch: null, filters }), 'validation_failed');
        }
      });

      it('agrees with a plain filter over combinations of up to three filters (untrimmed, 1 vs 1.0, 0 vs -0, datetime forms, nulls), branch scopes and page sizes', async () => {
        // A fixed linear congruential sequence (high bits): the same records and queries on every run.
        let seed = 7;
        const rand = (n: number) => {
          seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
          return (seed >>> 16) % n;
        };
        const pick = <T>(values: readonly T[]): T => values[rand(values.length)] as T;
        const p1 = (await create({ name: 'p1' }, 'project'))['id'] as string;
        const p2 = (await create({ name: 'p2' }, 'project'))['id'] as string;
        const branch = (await app.branches.create({ serviceId, slug: 'b', title: 'B', intent: 'B.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject;
        const branchId = branch['id'] as string;
        const statuses = ['draft', 'complete', 'superseded', null] as const;
        const titles = ['t1', ' t1', 't1 ', 't2'];
        const confidences: JsonValue[] = [0.5, 1n, 1.0, -0, 0n, null];
        const pins = [true, false, null];
        const dues = ['2030-01-01T00:00:00Z', '2030-01-01T00:00:00+00:00', null];
        const tagPool = ['x', ' x', 'x ', 'y'];
        const projects = [p1, p2, null];
        const priorities = [1n, 2n, -0n, null];
        const model: { id: string; fields: JsonObject; role: string | null }[] = [];
        for (let i = 0; i < 48; i++) {
          const tags = tagPool.filter(() => rand(2) === 0);
          const fields: JsonObject = { title: pick(titles), status: pick(statuses), confidence: pick(confidences), pinned: pick(pins), due_at: pick(dues), tags, project_id: pick(projects), priority: pick(priorities) };
          const record = await create(fields);
          const role = pick(['primary', 'related', null] as const);
          if (role !== null) {
            await app.branches.assign({ serviceId, branchId, role, operation: 'assign', records: [{ entityName: 'note', recordId: record['id'] as string, expectedRecordVersion: 1n }], idempotencyKey: key() });
          }
          model.push({ id: record['id'] as string, fields, role });
        }
        const candidates: [string, JsonValue][] = [
          ['status', 'draft'], ['status', 'superseded'], ['status', 'complete'],
          ['confidence', 1n], ['confidence', 1.0], ['confidence', 0n], ['confidence', -0], ['confidence', 0.5],
          ['pinned', true], ['pinned', false],
          ['due_at', '2030-01-01T00:00:00Z'], ['due_at', '2030-01-01T00:00:00+00:00'],
          ['tags', 'x'], ['tags', ' x'], ['tags', 'x '], ['tags', 'y'],
          ['project_id', p1], ['project_id', p2], ['priority', 1n], ['priority', 0n], ['title', 't1'], ['title', ' t1'], ['title', 't2'],
        ];
        const matches = (fields: JsonObject, field: string, value: JsonValue) => {
          const stored = fields[field] ?? null;
          if (stored === null) return false;
          if (Array.isArray(stored)) return stored.includes(value as string);
          if (typeof stored === 'bigint' || typeof stored === 'number') return Number(stored) === Number(value);
          return stored === value;
        };
        let paged = 0;
        for (let q = 0; q < 60; q++) {
          const filters: JsonObject = {};
          const n = 1 + rand(3);
          for (let k = 0; k < n; k++) {
            const [field, value] = pick(candidates);
            filters[field] = value;
          }
          const role = pick(['primary', 'related', null] as const);
          const scope = role === null ? null : { branchId, role };
          const expected = model
            .filter((row) => Object.entries(filters).every(([field, value]) => matches(row.fields, field, value as JsonValue)) && (role === null || row.role === role))
            .map((row) => row.id)
            .sort();
          const seen: string[] = [];
          let cursor: string | null = null;
          do {
            const page: JsonObject = await app.records.list({ serviceId, entityName: 'note', limit: 1 + rand(4), cursor, branch: scope, filters });
            seen.push(...(page['records'] as JsonObject[]).map((record) => record['id'] as string));
            cursor = page['next_cursor'] as string | null;
          } while (cursor !== null);
          expect({ filters, role, seen }).toEqual({ filters, role, seen: expected });
          if (expected.length > 4) paged++;
        }
        // The walk reached multi-page answers, not only empty ones.
        expect(paged).toBeGreaterThan(5);
      });

      it('gives no cursor when a page ends exactly at the last record', async () => {
        for (const title of ['A', 'B']) await create({ title });
        const full = await app.records.list({ serviceId, entityName: 'note', limit: 2, cursor: null, branch: null });
        expect([(full['records'] as JsonObject[]).length, full['next_cursor']]).toEqual([2, null]);
        const first = await app.records.list({ serviceId, entityName: 'note', limit: 1, cursor: null, branch: null });
        const rest = await app.records.list({ serviceId, entityName: 'note', limit: 1, cursor: first['next_cursor'] as string, branch: null });
        expect([(rest['records'] as JsonObject[]).length, rest['next_cursor']]).toEqual([1, null]);
      });

      // Ids ascend in creation order here: large records first, then small ones the page could still hold.
      it('cuts a list page at the text budget before the first record that does not fit, with a cursor to it', { timeout: 60_000 }, async () => {
        // About 188,000 characters each as contract text (every emoji is two \uXXXX escapes) within the 65,536-byte bound.
        const emoji = (n: number) => '\u{1F600}'.repeat(n);
        const large = { title: emoji(4000), detail: emoji(4000), aliases: Array.from({ length: 30 }, (_, i) => `${String(i).padStart(2, '0')}${emoji(254)}`) };
        const ids: string[] = [];
        for (let i = 0; i < 20; i++) ids.push((await create(large))['id'] as string);
        for (let i = 0; i < 3; i++) ids.push((await create({ title: `small ${i}` }))['id'] as string);
        const pages: string[][] = [];
        let cursor: string | null = null;
        do {
          const page: JsonObject = await app.records.list({ serviceId, entityName: 'note', limit: 100, cursor, branch: null });
          const records = page['records'] as JsonObject[];
          expect(renderContractJson(records).length).toBeLessThanOrEqual(PAGE_TEXT_BUDGET + 2);
          pages.push(records.map((record) => record['id'] as string));
          cursor = page['next_cursor'] as string | null;
        } while (cursor !== null);
        expect(pages.length).toBe(2);
        expect(pages.flat()).toEqual(ids);
        expect(pages[0]!.length).toBeLessThan(20);
      });

      it('pages in id order without skipping or repeating while others insert', async () => {
        for (let i = 0; i < 7; i++) await create({ title: `t${i}` });
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page: JsonObject = await app.records.list({ serviceId, entityName: 'note', limit: 3, cursor, branch: null });
          for (const record of page['records'] as JsonObject[]) seen.push(record['id'] as string);
          cursor = page['next_cursor'] as string | null;
          if (pages++ === 0) await create({ title: 'late' });
        } while (cursor !== null);
        expect(new Set(seen).size).toBe(seen.length);
        expect([...seen].sort()).toEqual(seen);
        expect(seen.length).toBe(8);
      });

      it('binds cursors to their query, service and schema version and rejects tampering', async () => {
        for (let i = 0; i < 3; i++) await create({ title: 't', status: 'draft' });
        const first = await app.records.list({ serviceId, entityName: 'note', limit: 1, cursor: null, branch: null, filters: { status: 'draft' } });
        const cursor = first['next_cursor'] as string;
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        await expect(app.records.list({ serviceId, entityName: 'note', limit: 2, cursor, branch: null, filters: { status: 'draft' } })).resolves.toBeDefined();
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 1, cursor, branch: null, filters: { status: 'complete' } }), 'validation_failed');
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 1, cursor, branch: null }), 'validation_failed');
        await rejects(app.records.history({ serviceId, entityName: 'note', recordId: null, limit: 1, cursor }), 'validation_failed');
        const flipped = cursor.slice(0, 10) + (cursor[10] === 'A' ? 'B' : 'A') + cursor.slice(11);
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 1, cursor: flipped, branch: null, filters: { status: 'draft' } }), 'validation_failed');
        // Another well-formed position under the same query and check value: the check value refuses it.
        const text = Buffer.from(cursor, 'base64url').toString('utf8');
        const position = (JSON.parse(text) as { position: string }).position;
        const moved = text.replace(position, '0190a4a4-0000-7000-8000-00000000abcd');
        expect(moved).not.toBe(text);
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 1, cursor: Buffer.from(moved, 'utf8').toString('base64url'), branch: null, filters: { status: 'draft' } }), 'validation_failed');
        // Characters outside the cursor alphabet: a bad cursor like any other (contract §3.3: empty
        // issues; the reference fails internally), judged after the service is located.
        for (const bad of ['not+base64', 'a$b', 'ü'] as const) {
          await expect(app.records.list({ serviceId, entityName: 'note', limit: 1, cursor: bad, branch: null, filters: { status: 'draft' } })).rejects.toMatchObject({ code: 'validation_failed', issues: [] });
          await expect(app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit: 1, cursor: bad })).rejects.toMatchObject({ code: 'validation_failed', issues: [] });
        }
        await rejects(app.records.list({ serviceId: '0190a4a4-0000-7000-8000-00000000abcd', entityName: 'note', limit: 1, cursor: 'a$b', branch: null }), 'not_found');
        // The same query on another service of the same principal and schema version.
        const twin = await materialisedNotes(storage, 'twin_notes');
        await rejects(twin.app.records.list({ serviceId: twin.serviceId, entityName: 'note', limit: 1, cursor, branch: null, filters: { status: 'draft' } }), 'validation_failed');
        const other = appOver(storage, { principalId: 'agent-b' });
        await rejects(other.records.list({ serviceId, entityName: 'note', limit: 1, cursor, branch: null, filters: { status: 'draft' } }), 'not_found');
        await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e' });
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 1, cursor, branch: null, filters: { status: 'draft' } }), 'validation_failed');
      });

      it('binds a list cursor to its entity and branch scope, and a history cursor to its entity', async () => {
        const branch = async (slug: string) =>
          ((await app.branches.create({ serviceId, slug, title: slug, intent: 'B.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject)['id'] as string;
        const here = await branch('here');
        const there = await branch('there');
        const notes = [await create({ title: 'a' }), await create({ title: 'b' })];
        for (let i = 0; i < 2; i++) await create({ name: `p${i}` }, 'project');
        const targets = notes.map((note) => ({ entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 1n }));
        await app.branches.assign({ serviceId, branchId: here, role: 'primary', operation: 'assign', records: targets, idempotencyKey: key() });
        const list = (entityName: string, scope: { branchId: string; role: 'primary' | 'related' } | null, cursor: string | null) => app.records.list({ serviceId, entityName, limit: 1, cursor, branch: scope });

        const unscoped = (await list('note', null, null))['next_cursor'] as string;
        expect(((await list('note', null, unscoped))['records'] as JsonObject[]).length).toBe(1);
        await rejects(list('project', null, unscoped), 'validation_failed');
        const scoped = (await list('note', { branchId: here, role: 'primary' }, null))['next_cursor'] as string;
        expect(((await list('note', { branchId: here, role: 'primary' }, scoped))['records'] as JsonObject[]).length).toBe(1);
        await rejects(list('note', { branchId: here, role: 'related' }, scoped), 'validation_failed');
        await rejects(list('note', { branchId: there, role: 'primary' }, scoped), 'validation_failed');
        await rejects(list('note', null, scoped), 'validation_failed');

        const history = (entityName: string, cursor: string | null) => app.records.history({ serviceId, entityName, recordId: null, limit: 1, cursor });
        const events = (await history('note', null))['next_cursor'] as string;
        expect(((await history('note', events))['events'] as JsonObject[]).length).toBe(1);
        await rejects(history('project', events), 'validation_failed');
      });

      it('reads appended fields as null after an evolve', async () => {
        const record = await create({ title: 'before' });
        await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e' });
        const fields = (await app.records.get(serviceId, 'note', record['id'] as string))['fields'] as JsonObject;
        expect(fields['summary']).toBeNull();
        // History snapshots are complete field sets too, read against the current manifest.
        const history = await app.records.history({ serviceId, entityName: 'note', recordId: record['id'] as string, limit: 10, cursor: null });
        const after = ((history['events'] as JsonObject[])[0]?.['after'] as JsonObject)['fields'] as JsonObject;
        expect(Object.keys(after)).toEqual(Object.keys(fields));
        expect(after['summary']).toBeNull();
      });
    });

    describe('a write admitted before an evolve', () => {
      // Admission reads the manifest and the store's fence; the write unit
      // runs later. An evolve in between moved the layout under it: the write
      // committed the old layout's fields and answered without the new ones.
      // The evolve moves the fence's generation, and the write is admitted
      // again under the new schema version.
      it('is admitted again and written under the evolved schema', async () => {
        const record = await create({ title: 'before' });
        const id = record['id'] as string;
        const admitMutation = app.lifecycle.admitMutation.bind(app.lifecycle);
        let admissions = 0;
        app.lifecycle.admitMutation = async (service) => {
          const admission = await admitMutation(service);
          if (++admissions === 1) {
            await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e' });
          }
          return admission;
        };
        const updated = (await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: 'after' }, expectedRecordVersion: 1n, idempotencyKey: key() }))['record'] as JsonObject;
        expect(admissions).toBe(2);
        expect(updated['fields']).toMatchObject({ title: 'after', summary: null });
        const history = await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 10, cursor: null });
        const events = history['events'] as JsonObject[];
        expect(events.map((event) => event['record_version'])).toEqual([1n, 2n]);
        expect(Object.keys((events[1]?.['after'] as JsonObject)['fields'] as JsonObject)).toContain('summary');
        // A write admitted after the evolve is not admitted twice.
        await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { summary: 'x' }, expectedRecordVersion: 2n, idempotencyKey: key() });
        expect(admissions).toBe(3);
      });
    });

    describe('history', () => {
      it('records before and after snapshots in sequence, paged by cursor, including deleted records', async () => {
        const record = await create({ title: 'v1' });
        const id = record['id'] as string;
        await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: 'v2' }, expectedRecordVersion: 1n, idempotencyKey: key() });
        await app.records.delete({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 2n, idempotencyKey: key() });
        const events: JsonObject[] = [];
        let cursor: string | null = null;
        do {
          const page: JsonObject = await app.records.history({ serviceId, entityName: 'note', recordId: null, limit: 2, cursor });
          events.push(...(page['events'] as JsonObject[]));
          cursor = page['next_cursor'] as string | null;
        } while (cursor !== null);
        expect(events.map((event) => event['kind'])).toEqual(['create', 'update', 'delete']);
        expect(Object.keys(events[1] as JsonObject)).toEqual(['entity_name', 'id', 'record_version', 'kind', 'occurred_at', 'before', 'after']);
        const titleOf = (snapshot: JsonValue) => ((snapshot as JsonObject)['fields'] as JsonObject)['title'];
        expect(titleOf((events[1] as JsonObject)['before'] as JsonValue)).toBe('v1');
        expect(titleOf((events[1] as JsonObject)['after'] as JsonValue)).toBe('v2');
        expect((events[0] as JsonObject)['before']).toBeNull();
        expect((events[2] as JsonObject)['after']).toBeNull();
        const unknown = await app.records.history({ serviceId, entityName: 'note', recordId: '55555555-5555-4555-8555-555555555555', limit: 10, cursor: null });
        expect(unknown['events']).toEqual([]);
      });

      it("lists in an entity's history only that entity's events", async () => {
        const note = (await create({ title: 'n' }))['id'] as string;
        const project = (await create({ name: 'p' }, 'project'))['id'] as string;
        const events = async (entityName: string) =>
          ((await app.records.history({ serviceId, entityName, recordId: null, limit: 50, cursor: null }))['events'] as JsonObject[]).map((event) => [event['entity_name'], event['id']]);
        expect(await events('note')).toEqual([['note', note]]);
        expect(await events('project')).toEqual([['project', project]]);
      });

      // The cursor's check value is a plain hash: a client can build one with any position.
      it('refuses a well-formed cursor whose position no page could have issued (not a canonical id or sequence, beyond a signed 64-bit sequence, or holding U+0000)', async () => {
        await create({ title: 'one' });
        const identity = (tool: string, query: JsonObject) => ({ principal: 'agent-a', service_id: serviceId, schema_version: 1n, tool, query });
        const historyAt = (position: string) =>
          app.records.history({ serviceId, entityName: 'note', recordId: null, limit: 5, cursor: encodeCursor({ sha256 }, 'history', position, identity('history', { entity_name: 'note', record_id: null })) });
        expect(((await historyAt('9223372036854775807'))['events'] as JsonObject[]).length).toBe(0);
        expect(((await historyAt('1'))['events'] as JsonObject[]).length).toBe(0);
        for (const position of ['9223372036854775808', '9999999999999999999', '0', '00002', '-1', '', '1 ']) await rejects(historyAt(position), 'validation_failed');
        const listAt = (position: string) =>
          app.records.list({ serviceId, entityName: 'note', limit: 5, cursor: encodeCursor({ sha256 }, 'record', position, identity('list', { entity_name: 'note', filters: null, branch: null })), branch: null });
        expect(((await listAt('00000000-0000-4000-8000-000000000000'))['records'] as JsonObject[]).length).toBe(1);
        for (const position of ['0', '0\u0000', '', 'zzzz', "' OR 1=1 --", '00000000-0000-0000-0000-000000000000', 'AAAAAAAA-0000-4000-8000-000000000000']) await rejects(listAt(position), 'validation_failed');
      });

      it('stops reading history past a text budget, never before two events, and says it did', async () => {
        for (let i = 0; i < 5; i++) await create({ title: `${i}${'t'.repeat(999)}` });
        const locator = { backend: storage.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` };
        const read = (limit: number, textBudget?: number) => storage.data.read(locator, 'agent-a', (tx) => tx.history('note', null, null, limit, textBudget));
        const summary = async (limit: number, textBudget?: number) => {
          const rows = await read(limit, textBudget);
          return { versions: rows.events.map((event) => (event.after as Record<string, unknown>)['title']), cut: rows.cut };
        };
        const titles = Array.from({ length: 5 }, (_, i) => `${i}${'t'.repeat(999)}`);
        expect(await summary(10)).toEqual({ versions: titles, cut: false });
        expect(await summary(10, 1_000_000)).toEqual({ versions: titles, cut: false });
        // Each event holds 1000 characters of title and under 250 of the other (null) fields.
        expect(await summary(10, 2500)).toEqual({ versions: titles.slice(0, 3), cut: true });
        expect(await summary(10, 0)).toEqual({ versions: titles.slice(0, 2), cut: true });
        expect(await summary(2, 0)).toEqual({ versions: titles.slice(0, 2), cut: false });
      });

      it('gives a cursor to the rest when storage stopped reading for size, even though every event read fits the page', async () => {
        // Stored snapshots of 16 KiB of spaces, returned trimmed: storage stops at its text budget
        // (about 3 MiB) long before the page's rendered text is full.
        const padded = (i: number) => `${i}${' '.repeat(16000)}`;
        const id = (await create({ title: padded(0) }))['id'] as string;
        for (let version = 1n; version < 120n; version++) {
          await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title: padded(Number(version)) }, expectedRecordVersion: version, idempotencyKey: key() });
        }
        const seen: JsonObject[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page: JsonObject = await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 100, cursor });
          // The first page ends where storage stopped, short of the limit: the snapshots it read are not all held at once.
          if (pages === 0) expect((page['events'] as JsonObject[]).length).toBeLessThan(100);
          seen.push(...(page['events'] as JsonObject[]));
          cursor = page['next_cursor'] as string | null;
          pages++;
        } while (cursor !== null);
        expect(pages).toBeGreaterThan(1);
        expect(seen.map((event) => event['record_version'])).toEqual(Array.from({ length: 120 }, (_, i) => BigInt(i + 1)));
      });

      // Cursors are not secret (a plain hash check): one record's history may be asked to resume at another record's event.
      it("resumes one record's history after a sequence taken from another record's event by that sequence alone", async () => {
        const one = (await create({ title: 'one' }))['id'] as string;
        const two = (await create({ title: 'two' }))['id'] as string;
        for (const [id, title, version] of [[one, 'one v2', 1n], [one, 'one v3', 2n], [two, 'two v2', 1n]] as const) {
          await app.records.update({ serviceId, entityName: 'note', recordId: id, updates: { title }, expectedRecordVersion: version, idempotencyKey: key() });
        }
        // Sequences: one v1, two v1, one v2, one v3, two v2. Resume record two after one's v2 (its third event).
        const firstTwo = await app.records.history({ serviceId, entityName: 'note', recordId: null, limit: 3, cursor: null });
        expect((firstTwo['events'] as JsonObject[]).map((event) => [event['id'], event['record_version']])).toEqual([[one, 1n], [two, 1n], [one, 2n]]);
        const position = (JSON.parse(Buffer.from(firstTwo['next_cursor'] as string, 'base64url').toString('utf8')) as { position: string }).position;
        const identity = { principal: 'agent-a', service_id: serviceId, schema_version: 1n, tool: 'history', query: { entity_name: 'note', record_id: two } };
        const page = await app.records.history({ serviceId, entityName: 'note', recordId: two, limit: 10, cursor: encodeCursor({ sha256 }, 'history', position, identity) });
        expect((page['events'] as JsonObject[]).map((event) => [event['id'], event['record_version']])).toEqual([[two, 2n]]);
        expect(page['next_cursor']).toBeNull();
      });

      it('binds a history cursor to its record id (null = the whole entity is another query)', async () => {
        const one = (await create({ title: 'one' }))['id'] as string;
        const two = (await create({ title: 'two' }))['id'] as string;
        await app.records.update({ serviceId, entityName: 'note', recordId: one, updates: { title: 'one again' }, expectedRecordVersion: 1n, idempotencyKey: key() });
        const history = (recordId: string | null, cursor: string | null) => app.records.history({ serviceId, entityName: 'note', recordId, limit: 1, cursor });
        const cursor = (await history(one, null))['next_cursor'] as string;
        expect(((await history(one, cursor))['events'] as JsonObject[]).length).toBe(1);
        await rejects(history(two, cursor), 'validation_failed');
        await rejects(history(null, cursor), 'validation_failed');
      });
    });

    describe('data port edges the services never reach', () => {
      // The services ask neither question at these edges (evolve also fails its DDL on duplicates; a
      // branch's own id is refused as its parent before the walk), so the port's own word is checked.
      it('finds duplicates only among two equal non-null values, and a branch reaches itself and its ancestors', async () => {
        const locator = { backend: storage.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` };
        const port = <T>(work: Parameters<typeof storage.data.read<T>>[2]) => storage.data.read(locator, 'agent-a', work);
        await create({ title: 'same', status: 'draft' });
        expect(await port((tx) => tx.hasDuplicates('note', ['title']))).toBe(false);
        await create({ title: 'same' });
        expect(await port((tx) => tx.hasDuplicates('note', ['title']))).toBe(true);
        // Two nulls (detail), or a value and a null (status), never collide.
        expect(await port((tx) => tx.hasDuplicates('note', ['detail']))).toBe(false);
        expect(await port((tx) => tx.hasDuplicates('note', ['title', 'status']))).toBe(false);
        const branch = async (slug: string, parentBranchId: string | null) =>
          ((await app.branches.create({ serviceId, slug, title: slug, intent: 'B.', branchType: null, parentBranchId, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject)['id'] as string;
        const parent = await branch('parent', null);
        const child = await branch('child', parent);
        expect(await port((tx) => tx.branchReachesByParents(child, child))).toBe(true);
        expect(await port((tx) => tx.branchReachesByParents(child, parent))).toBe(true);
        expect(await port((tx) => tx.branchReachesByParents(parent, child))).toBe(false);
      });

      // The services ask for one record more than a page to learn whether more follow, so a
      // port page longer than its limit would pass unseen through them.
      it('a record page holds at most its limit, past afterId in id order, with or without a driving range', async () => {
        const locator = { backend: storage.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` };
        const note = storeLayoutOf(manifest(notesManifest())).entities.find((entity) => entity.name === 'note')!;
        const ids: string[] = [];
        for (let i = 0; i < 4; i++) ids.push((await create({ title: 't', status: 'draft', tags: ['a', 'b'] }))['id'] as string);
        ids.sort();
        const filterSets = [[], [{ kind: 'equals', field: 'status', value: 'draft' }], [{ kind: 'member', field: 'tags', value: 'a' }], [{ kind: 'member', field: 'tags', value: 'a' }, { kind: 'member', field: 'tags', value: 'b' }]] as const;
        for (const filters of filterSets) {
          const page = (afterId: string | null, limit: number) =>
            storage.data.read(locator, 'agent-a', async (tx) => (await tx.queryRecords(note, { filters, branch: null, afterId, limit })).map((record) => record.id));
          expect(await page(null, 2)).toEqual(ids.slice(0, 2));
          expect(await page(ids[0]!, 2)).toEqual(ids.slice(1, 3));
          expect(await page(ids[1]!, 10)).toEqual(ids.slice(2));
        }
      });

      // A store holds one principal's rows, so the services never ask another principal's
      // question of it; record lookups, pages, history and scans still answer it with nothing
      // (the aggregates, counts and facets, may leave the owner check out, and do on SQLite).
      it('scopes record reads and writes to the principal', async () => {
        const locator = { backend: storage.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` };
        const layout = storeLayoutOf(manifest(notesManifest()));
        const note = layout.entities.find((entity) => entity.name === 'note')!;
        const first = await create({ title: 'same', status: 'draft', tags: ['t'] });
        await create({ title: 'same', status: 'draft', tags: ['t'] });
        const id = first['id'] as string;
        const reads = (principal: string) =>
          storage.data.read(locator, principal, async (tx) => ({
            got: (await tx.getRecord(note, id))?.id,
            listed: (await tx.queryRecords(note, { filters: [], branch: null, afterId: null, limit: 10 })).length,
            byStatus: (await tx.queryRecords(note, { filters: [{ kind: 'equals', field: 'status', value: 'draft' }], branch: null, afterId: null, limit: 10 })).length,
            byTag: (await tx.queryRecords(note, { filters: [{ kind: 'member', field: 'tags', value: 't' }], branch: null, afterId: null, limit: 10 })).length,
            history: (await tx.history('note', null, null, 10)).events.length,
            recordHistory: (await tx.history('note', id, null, 10)).events.length,
            scanned: (await tx.scanRecords(note, { memberOf: null, afterId: null, limit: 10 })).length,
            duplicates: (await tx.duplicateValues(note, 'title', null, 10)).length,
          }));
        const mine = { got: id, listed: 2, byStatus: 2, byTag: 2, history: 2, recordHistory: 1, scanned: 2, duplicates: 2 };
        expect(await reads('agent-a')).toEqual(mine);
        expect(await reads('agent-b')).toEqual({ got: undefined, listed: 0, byStatus: 0, byTag: 0, history: 0, recordHistory: 0, scanned: 0, duplicates: 0 });
        const stored = await storage.data.read(locator, 'agent-a', (tx) => tx.getRecord(note, id));
        if (!stored) throw new Error('no record');
        await expect(storage.data.write(locator, 'agent-b', (tx) => tx.updateRecord(note, { ...stored, recordVersion: 2n, fields: { ...stored.fields, title: 'theirs' } }))).rejects.toThrow();
        await storage.data.write(locator, 'agent-b', (tx) => tx.deleteRecord(note, id));
        // The record itself stays (SQLite's delete leaves the list member rows to the store's one principal).
        expect(await reads('agent-a')).toMatchObject({ got: id, listed: 2, byStatus: 2 });
      });
    });

    describe('field names a backend reserves', () => {
      // PostgreSQL refuses its system column names even quoted; the manifest allows them.
      it('stores, searches, indexes, references and evolves fields named tableoid, xmin, cmin, xmax, cmax and ctid', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'system_names', domainClass: 'test', intentDescription: 'System column names.', idempotencyKey: 'sys-s' });
        const id = seeded['service_id'] as string;
        await app.lifecycle.design({ serviceId: id, manifest: manifest(systemColumnNamesManifest(false)), idempotencyKey: 'sys-d' });
        await app.lifecycle.materialise({ serviceId: id, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'sys-m' });
        const make = async (entityName: string, record: JsonObject) => (await app.records.create({ serviceId: id, entityName, record, idempotencyKey: key() }))['record'] as JsonObject;
        const anchor = await make('anchor', { xmin: 'root' });
        const item = await make('item', { xmin: 'one', xmax: 7n, cmin: 'a', cmax: 0.5, ctid: ['p', 'q'], tableoid: anchor['id'] as string });
        expect(item['fields']).toEqual({ cmax: 0.5, cmin: 'a', ctid: ['p', 'q'], tableoid: anchor['id'], xmax: 7n, xmin: 'one' });
        expect(await app.records.get(id, 'item', item['id'] as string)).toEqual(item);
        const titles = async (filters: JsonObject) =>
          ((await app.records.list({ serviceId: id, entityName: 'item', limit: 50, cursor: null, branch: null, filters }))['records'] as JsonObject[]).map((r) => (r['fields'] as JsonObject)['xmin']);
        expect(await titles({ xmin: 'one' })).toEqual(['one']);
        expect(await titles({ ctid: 'q', xmax: 7n, cmin: 'a', cmax: 0.5 })).toEqual(['one']);
        await rejects(make('item', { xmin: 'two', xmax: 7n }), 'constraint_violation');
        await rejects(make('item', { xmin: 'two', tableoid: '55555555-5555-4555-8555-555555555555' }), 'constraint_violation');
        await rejects(app.records.delete({ serviceId: id, entityName: 'anchor', recordId: anchor['id'] as string, expectedRecordVersion: 1n, idempotencyKey: key() }), 'constraint_violation');
        const updated = await app.records.update({ serviceId: id, entityName: 'item', recordId: item['id'] as string, updates: { xmax: 8n, ctid: ['r'] }, expectedRecordVersion: 1n, idempotencyKey: key() });
        expect(((updated['record'] as JsonObject)['fields'] as JsonObject)['ctid']).toEqual(['r']);
        expect(await titles({ ctid: 'r' })).toEqual(['one']);
        const facets = (await app.discovery.summary({ serviceId: id, sample: 0 }))['facets'] as JsonObject[];
        expect(facets).toEqual([{ entity_name: 'item', field_name: 'cmin', values: [{ value: 'a', count: 1n }] }]);
        await app.lifecycle.evolve({ serviceId: id, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(systemColumnNamesManifest(true)), idempotencyKey: 'sys-e' });
        expect(((await app.records.get(id, 'item', item['id'] as string))['fields'] as JsonObject)['xmax']).toBe(8n);
        const history = await app.records.history({ serviceId: id, entityName: 'item', recordId: item['id'] as string, limit: 10, cursor: null });
        expect((history['events'] as JsonObject[]).map((event) => event['kind'])).toEqual(['create', 'update']);
      });
    });
  });
}
