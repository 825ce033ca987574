// Conformance: the advisory maintenance scan of contract §8.3 over any
// adapter — every signal and its detail, availability per entity, the
// deterministic order and bound, branch scope, and that it is read-only and
// never echoes record prose or authority values.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../src/aipcs/core/application.js';
import type { MaintenanceScanCommand } from '../../src/aipcs/core/maintenance.js';
import type { MaintenanceScanType } from '../../src/aipcs/contract/manifest/derived-model.js';
import { formatTimestamp } from '../../src/aipcs/core/time.js';
import { storeLayoutOf } from '../../src/aipcs/core/layout.js';
import type { RecordScan } from '../../src/aipcs/core/ports.js';
import { losslessJson, type JsonObject } from '../../src/common/json.js';
import { appOver, manifest, type StorageHarness, type StorageLocation, type TestApp } from './harness.js';
import { memoManifest } from './memo-manifest.js';
import { serverManaged } from '../support/manifests.js';

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

const ALL: MaintenanceScanType[] = ['expired', 'stale', 'low_confidence', 'superseded', 'missing_authority', 'unbranched', 'duplicate_authority', 'blob_candidate'];
const DAY = 86_400_000_000n;

export function maintenanceSuite(harness: StorageHarness): void {
  describe(`maintenance conformance (${harness.name})`, () => {
    let location: StorageLocation;
    let storage: StoragePorts;
    let app: TestApp;
    let serviceId: string;
    let keyCounter = 0;
    const key = () => `mkey-${++keyCounter}`;

    beforeEach(async () => {
      location = await harness.create();
      storage = await location.open();
      app = appOver(storage);
      const seeded = await app.lifecycle.seed({ domainName: 'memos', domainClass: 'knowledge', intentDescription: 'Memos.', idempotencyKey: 's' });
      serviceId = seeded['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(memoManifest()), idempotencyKey: 'd' });
      await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    });

    afterEach(async () => {
      await storage.close();
      await location.destroy();
    });

    // Every memo declares a status so that missing_authority stays out of the way unless a test wants it.
    const memo = async (record: JsonObject) => (await app.records.create({ serviceId, entityName: 'memo', record: { title: 'prose', status: 'ok', ...record }, idempotencyKey: key() }))['record'] as JsonObject;
    const plain = async (label: string) => (await app.records.create({ serviceId, entityName: 'plain', record: { label }, idempotencyKey: key() }))['record'] as JsonObject;
    const scan = (options: Partial<Omit<MaintenanceScanCommand, 'serviceId'>> = {}) =>
      app.maintenance.scan({ serviceId, entityName: null, branchId: null, scanTypes: ALL, staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50, ...options });
    const candidatesOf = async (scanType: MaintenanceScanType, options: Partial<Omit<MaintenanceScanCommand, 'serviceId'>> = {}) =>
      ((await scan({ scanTypes: [scanType], ...options }))['candidates'] as JsonObject[]).map((candidate) => ({ id: (candidate['record'] as JsonObject)['id'], detail: candidate['detail'] }));
    const sortedIds = (...records: JsonObject[]) => records.map((record) => record['id'] as string).sort();

    describe('availability', () => {
      it('reports types no selected entity supports as unavailable and evaluates the rest', async () => {
        await plain('p');
        const plainOnly = await scan({ entityName: 'plain' });
        expect(plainOnly['unavailable_scan_types']).toEqual(['blob_candidate', 'duplicate_authority', 'expired', 'low_confidence', 'missing_authority', 'superseded']);
        expect((plainOnly['candidates'] as JsonObject[]).map((candidate) => candidate['scan_type'])).toEqual(['unbranched']);
        const everything = await scan();
        expect(everything['unavailable_scan_types']).toEqual([]);
        const requested = await scan({ entityName: 'plain', scanTypes: ['superseded', 'expired'] });
        expect(requested).toEqual({ candidates: [], unavailable_scan_types: ['expired', 'superseded'] });
      });

      it('refuses an undeclared entity and follows data-tool admission', async () => {
        await rejects(scan({ entityName: 'nothing' }), 'validation_failed');
        await rejects(app.maintenance.scan({ serviceId: '99999999-9999-4999-8999-999999999999', entityName: null, branchId: null, scanTypes: ALL, staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50 }), 'not_found');
      });
    });

    describe('signals', () => {
      it('blob_candidate: an annotation over 1024 UTF-8 bytes', async () => {
        const big = await memo({ body: 'é'.repeat(513) });
        // 257 characters, 1025 bytes: just over, and only one character past the 256 that 1024 bytes can need.
        const astral = await memo({ body: `${'\u{1F600}'.repeat(256)}a` });
        await memo({ body: 'x'.repeat(1024) });
        await memo({ body: '\u{1F600}'.repeat(256) });
        await memo({ body: null });
        const bytes = new Map([[big['id'], 1026n], [astral['id'], 1025n]]);
        expect(await candidatesOf('blob_candidate')).toEqual(sortedIds(big, astral).map((id) => ({ id, detail: { byte_length: bytes.get(id), field_name: 'body', threshold_bytes: 1024n } })));
      });

      it('reads every field under its own name, whatever the adapter calls its own scan columns', async () => {
        // A manifest may name a field like a column the adapter adds to its scan (has_primary).
        const seeded = await app.lifecycle.seed({ domainName: 'flags', domainClass: 'knowledge', intentDescription: 'Flags.', idempotencyKey: 'flags-s' });
        const flags = seeded['service_id'] as string;
        const entities = [{ name: 'flagged', attributes: [...serverManaged(), { name: 'has_primary', type: 'string', retrieval_mode: 'annotation' }] }];
        await app.lifecycle.design({ serviceId: flags, manifest: manifest({ manifest_version: 2n, schema_version: 1n, entities }), idempotencyKey: 'flags-d' });
        await app.lifecycle.materialise({ serviceId: flags, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'flags-m' });
        const created = await app.records.create({ serviceId: flags, entityName: 'flagged', record: { has_primary: 'x'.repeat(2000) }, idempotencyKey: key() });
        const id = (created['record'] as JsonObject)['id'];
        const result = await app.maintenance.scan({ serviceId: flags, entityName: null, branchId: null, scanTypes: ['blob_candidate', 'unbranched'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50 });
        expect(result['candidates']).toEqual([
          { scan_type: 'blob_candidate', record: { entity_name: 'flagged', id }, detail: { byte_length: 2000n, field_name: 'has_primary', threshold_bytes: 1024n } },
          { scan_type: 'unbranched', record: { entity_name: 'flagged', id }, detail: { missing_role: 'primary' } },
        ]);
      });

      it('duplicate_authority: shared present references in provenance_source first, then source_ref', async () => {
        const a = await memo({ provenance_source: 'doc-1', source_ref: 'ref-9' });
        const b = await memo({ provenance_source: 'doc-1' });
        const c = await memo({ provenance_source: 'doc-2', source_ref: 'ref-9' });
        await memo({ provenance_source: 'doc-3' });
        await memo({ provenance_source: '  ' });
        await memo({ provenance_source: '  ' });
        await memo({ provenance_source: 'doc-1 ' });
        const found = await candidatesOf('duplicate_authority');
        const expected = new Map([
          [a['id'], { duplicate_count: 2n, field_name: 'provenance_source' }],
          [b['id'], { duplicate_count: 2n, field_name: 'provenance_source' }],
          [c['id'], { duplicate_count: 2n, field_name: 'source_ref' }],
        ]);
        expect(found.map((candidate) => candidate.id)).toEqual(sortedIds(a, b, c));
        for (const candidate of found) expect(candidate.detail).toEqual(expected.get(candidate.id));
        // In a branch scope only its members count: a's doc-1 twin b is in another branch, so a is found by ref-9, shared with c.
        const branch = async (slug: string, records: JsonObject[]) => {
          const created = (await app.branches.create({ serviceId, slug, title: 't', intent: 'i', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject;
          const targets = records.map((record) => ({ entityName: 'memo', recordId: record['id'] as string, expectedRecordVersion: 1n }));
          await app.branches.assign({ serviceId, branchId: created['id'] as string, role: 'related', operation: 'assign', records: targets, idempotencyKey: key() });
          return created['id'] as string;
        };
        const scope = await branch('scope', [a, c]);
        await branch('other', [b]);
        expect(await candidatesOf('duplicate_authority', { branchId: scope })).toEqual(
          sortedIds(a, c).map((id) => ({ id, detail: { duplicate_count: 2n, field_name: 'source_ref' } })),
        );
      });

      it('expired: valid_until before now; every accepted zero-offset form is read as an instant', async () => {
        const past = await memo({ valid_until: '2020-01-01T00:00:00Z' });
        const basic = await memo({ valid_until: '20200101T000000Z' });
        await memo({ valid_until: '2099-01-01T00:00:00+00:00' });
        await memo({ valid_until: null });
        const found = await candidatesOf('expired');
        expect(found).toEqual(sortedIds(past, basic).map((id) => ({ id, detail: { field_name: 'valid_until' } })));
      });

      it('expired: valid_until exactly now is not expired, one microsecond before is', async () => {
        const at = app.clock.nowMicros() + 1_000_000n;
        const before = await memo({ valid_until: formatTimestamp(at - 1n) });
        await memo({ valid_until: formatTimestamp(at) });
        // The harness clock ticks 1 µs per read: the scan's read of now lands on `at`.
        app.clock.advance(at - app.clock.nowMicros() - 1n);
        expect(await candidatesOf('expired')).toEqual([{ id: before['id'], detail: { field_name: 'valid_until' } }]);
      });

      it('low_confidence: below the threshold, null excluded', async () => {
        const low = await memo({ confidence: 0.2 });
        const half = await memo({ confidence: 0.5 });
        await memo({ confidence: 1n });
        await memo({ confidence: null });
        expect(await candidatesOf('low_confidence')).toEqual([{ id: low['id'], detail: { threshold: 0.5 } }]);
        const higher = await candidatesOf('low_confidence', { lowConfidenceBelow: 0.9 });
        expect(higher.map((candidate) => candidate.id)).toEqual(sortedIds(low, half));
        expect(higher[0]?.detail).toEqual({ threshold: 0.9 });
        expect(await candidatesOf('low_confidence', { lowConfidenceBelow: 0 })).toEqual([]);
        // 1 is the inclusive upper bound of the threshold: confidence 1 itself is not below it.
        expect((await candidatesOf('low_confidence', { lowConfidenceBelow: 1 })).map((candidate) => candidate.id)).toEqual(sortedIds(low, half));
      });

      it('missing_authority: every declared authority field absent, blank or empty', async () => {
        const bare = await memo({ status: null });
        const blank = await memo({ status: '   ', scope: '' });
        await memo({ status: null, scope: 'team' });
        await memo({ status: null, confidence: 0 });
        expect(await candidatesOf('missing_authority')).toEqual(sortedIds(bare, blank).map((id) => ({ id, detail: { declared_field_count: 7n } })));
      });

      it('stale: updated_at at or before now minus the threshold', async () => {
        const old = await memo({});
        app.clock.advance(10n * DAY);
        await memo({});
        app.clock.advance(81n * DAY);
        expect(await candidatesOf('stale')).toEqual([{ id: old['id'], detail: { age_days: 91n, threshold_days: 90n } }]);
        expect(await candidatesOf('stale', { staleAfterDays: 92 })).toEqual([]);
        expect((await candidatesOf('stale', { staleAfterDays: 1 })).length).toBe(2);
      });

      it('stale: takes a threshold of up to 3650 days as given, and caps a larger one there', async () => {
        const record = await memo({});
        app.clock.advance(3650n * DAY - DAY / 2n);
        // 3649.5 days old: stale after 3649 days, not after 3650.
        expect(await candidatesOf('stale', { staleAfterDays: 3650 })).toEqual([]);
        expect(await candidatesOf('stale', { staleAfterDays: 3649 })).toEqual([{ id: record['id'], detail: { age_days: 3649n, threshold_days: 3649n } }]);
        app.clock.advance(DAY);
        expect(await candidatesOf('stale', { staleAfterDays: 3650 })).toEqual([{ id: record['id'], detail: { age_days: 3650n, threshold_days: 3650n } }]);
        expect(await candidatesOf('stale', { staleAfterDays: 100_000 })).toEqual([{ id: record['id'], detail: { age_days: 3650n, threshold_days: 3650n } }]);
      });

      it('stale: a record exactly the threshold old (updated_at = now - threshold) is stale', async () => {
        const record = await memo({});
        const [, seconds, fraction] = /^(.{19})(?:\.(\d{1,6}))?Z$/.exec(record['updated_at'] as string) ?? [];
        const updatedAt = BigInt(Date.parse(`${seconds}Z`)) * 1000n + BigInt((fraction ?? '').padEnd(6, '0'));
        // The harness clock ticks 1 µs per read: the scan's read of now lands on updated_at + 1 day.
        app.clock.advance(updatedAt + DAY - app.clock.nowMicros() - 1n);
        expect(await candidatesOf('stale', { staleAfterDays: 1 })).toEqual([{ id: record['id'], detail: { age_days: 1n, threshold_days: 1n } }]);
      });

      it('superseded: status exactly "superseded" or a present superseded_by, signals in order', async () => {
        const byStatus = await memo({ status: 'superseded' });
        const byLink = await memo({ superseded_by: '11111111-1111-4111-8111-111111111111' });
        const both = await memo({ status: 'superseded', superseded_by: '11111111-1111-4111-8111-111111111111' });
        await memo({ status: 'Superseded' });
        const found = await candidatesOf('superseded');
        const expected = new Map([
          [byStatus['id'], { signals: ['status'] }],
          [byLink['id'], { signals: ['superseded_by'] }],
          [both['id'], { signals: ['status', 'superseded_by'] }],
        ]);
        expect(found.map((candidate) => candidate.id)).toEqual(sortedIds(byStatus, byLink, both));
        for (const candidate of found) expect(candidate.detail).toEqual(expected.get(candidate.id));
      });

      it('superseded: a declared superseded_by of any type counts once the scan is available; its signal follows Python whitespace', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'links', domainClass: 'knowledge', intentDescription: 'Links.', idempotencyKey: 'links-s' });
        const links = seeded['service_id'] as string;
        const entities = [
          { name: 'linked', attributes: [...serverManaged(), { name: 'status', type: 'string' }, { name: 'superseded_by', type: 'integer' }] },
          { name: 'noted', attributes: [...serverManaged(), { name: 'superseded_by', type: 'string' }] },
        ];
        await app.lifecycle.design({ serviceId: links, manifest: manifest({ manifest_version: 2n, schema_version: 1n, entities }), idempotencyKey: 'links-d' });
        await app.lifecycle.materialise({ serviceId: links, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'links-m' });
        const create = async (entityName: string, record: JsonObject) =>
          ((await app.records.create({ serviceId: links, entityName, record, idempotencyKey: key() }))['record'] as JsonObject)['id'] as string;
        const expected = new Map<string, JsonObject>([
          [await create('linked', { superseded_by: 0n }), { signals: ['superseded_by'] }],
          [await create('linked', { status: 'superseded', superseded_by: 7n }), { signals: ['status', 'superseded_by'] }],
          // Selected like the reference's SQL (only U+0020 is blank), named like its str.strip().
          [await create('noted', { superseded_by: '\t' }), { signals: [] }],
          [await create('noted', { superseded_by: ' \u001f ' }), { signals: [] }],
          [await create('noted', { superseded_by: ' x ' }), { signals: ['superseded_by'] }],
        ]);
        await create('linked', { status: 'open' });
        await create('noted', { superseded_by: '   ' });
        const result = await app.maintenance.scan({ serviceId: links, entityName: null, branchId: null, scanTypes: ['superseded'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50 });
        const found = (result['candidates'] as JsonObject[]).map((candidate) => [(candidate['record'] as JsonObject)['id'] as string, candidate['detail']] as const);
        expect(found.length).toBe(expected.size);
        for (const [id, detail] of found) expect(detail).toEqual(expected.get(id));
      });

      it('unbranched: no primary branch (related memberships do not count)', async () => {
        const branch = (await app.branches.create({ serviceId, slug: 'topic', title: 't', intent: 'i', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject;
        const primary = await memo({});
        const related = await memo({});
        const loose = await memo({});
        const target = (record: JsonObject) => ({ entityName: 'memo', recordId: record['id'] as string, expectedRecordVersion: 1n });
        await app.branches.assign({ serviceId, branchId: branch['id'] as string, role: 'primary', operation: 'assign', records: [target(primary)], idempotencyKey: key() });
        await app.branches.assign({ serviceId, branchId: branch['id'] as string, role: 'related', operation: 'assign', records: [target(related)], idempotencyKey: key() });
        expect(await candidatesOf('unbranched')).toEqual(sortedIds(related, loose).map((id) => ({ id, detail: { missing_role: 'primary' } })));
        // Branch scope: records with any membership in that branch.
        expect((await candidatesOf('unbranched', { branchId: branch['id'] as string })).map((candidate) => candidate.id)).toEqual([related['id']]);
        const scoped = await scan({ branchId: '99999999-9999-4999-8999-999999999999', entityName: 'plain' });
        expect(scoped).toEqual({ candidates: [], unavailable_scan_types: ['blob_candidate', 'duplicate_authority', 'expired', 'low_confidence', 'missing_authority', 'superseded'] });
      });
    });

    describe('order, bounds and safety', () => {
      it('orders by scan type, entity and id, and truncates at the limit', async () => {
        const p = await plain('p');
        const m1 = await memo({ confidence: 0.1, provenance_source: 'secret-reference', body: 'secret prose '.repeat(100) });
        const m2 = await memo({ confidence: 0.1, provenance_source: 'secret-reference' });
        const result = await scan();
        const rows = (result['candidates'] as JsonObject[]).map((candidate) => [candidate['scan_type'], (candidate['record'] as JsonObject)['entity_name'], (candidate['record'] as JsonObject)['id']]);
        const memos = sortedIds(m1, m2);
        expect(rows).toEqual([
          ['blob_candidate', 'memo', m1['id']],
          ...memos.map((id) => ['duplicate_authority', 'memo', id]),
          ...memos.map((id) => ['low_confidence', 'memo', id]),
          ...memos.map((id) => ['unbranched', 'memo', id]),
          ['unbranched', 'plain', p['id']],
        ]);
        expect(Object.keys((result['candidates'] as JsonObject[])[0] as JsonObject)).toEqual(['scan_type', 'record', 'detail']);
        const text = losslessJson(result);
        expect(text).not.toContain('secret');
        expect(text).not.toContain('prose');
        const limited = await scan({ limit: 3 });
        expect((limited['candidates'] as JsonObject[]).map((candidate) => candidate['scan_type'])).toEqual(['blob_candidate', 'duplicate_authority', 'duplicate_authority']);
        expect(await scan()).toEqual(result);
      });

      it('pages through large entities and finds duplicates across batches', async () => {
        const created: JsonObject[] = [];
        for (let i = 0; i < 300; i++) created.push(await memo({ provenance_source: `doc-${i}` }));
        const ids = sortedIds(...created);
        const first = created.find((record) => record['id'] === ids[0]) as JsonObject;
        const last = created.find((record) => record['id'] === ids[299]) as JsonObject;
        await app.records.update({ serviceId, entityName: 'memo', recordId: last['id'] as string, updates: { provenance_source: (first['fields'] as JsonObject)['provenance_source'] as string }, expectedRecordVersion: 1n, idempotencyKey: key() });
        expect((await candidatesOf('duplicate_authority')).map((candidate) => candidate.id)).toEqual([ids[0], ids[299]]);
        const unbranched = await scan({ scanTypes: ['unbranched'], limit: 100 });
        expect((unbranched['candidates'] as JsonObject[]).map((candidate) => (candidate['record'] as JsonObject)['id'])).toEqual(ids.slice(0, 100));
      });

      it('resumes after a full batch without reading its last record again (a candidate there is listed once)', async () => {
        // Confidence exactly at the threshold passes the store's narrowing (at most) but is no candidate (below):
        // the first batch (256 records) is full of non-candidates but its last.
        const created: JsonObject[] = [];
        for (let i = 0; i < 257; i++) created.push(await memo({ confidence: 0.5 }));
        const ids = sortedIds(...created);
        await app.records.update({ serviceId, entityName: 'memo', recordId: ids[255] as string, updates: { confidence: 0.2 }, expectedRecordVersion: 1n, idempotencyKey: key() });
        expect((await candidatesOf('low_confidence')).map((candidate) => candidate.id)).toEqual([ids[255]]);
      });

      it('in a branch scope too, a full batch is followed by the next (a candidate just past it is found)', async () => {
        const branchId = ((await app.branches.create({ serviceId, slug: 'full', title: 'F', intent: 'F.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject)['id'] as string;
        const admission = await app.lifecycle.admitData(serviceId);
        const layout = admission.layout.entities.find((entity) => entity.name === 'memo');
        const locator = admission.service.storage;
        if (!layout || !locator) throw new Error('no memo layout');
        // 300 members at the threshold pass the store's narrowing (at most) but are no candidates (below);
        // the one candidate is the 258th, past a first batch of 256 and one more record.
        const ids = Array.from({ length: 300 }, (_, i) => `00000000-0000-4000-8000-${i.toString().padStart(12, '0')}`);
        const at = 1_800_000_000_000_000n;
        await storage.data.write(locator, 'agent-a', async (tx) => {
          for (const [i, id] of ids.entries()) {
            await tx.insertRecord(layout, { id, createdAt: at, updatedAt: at, createdVia: 'mcp', recordVersion: 1n, fields: { title: 'prose', status: 'ok', confidence: i === 257 ? 0.2 : 0.5 } });
            await tx.putMembership('memo', id, branchId, i % 3 === 0 ? 'related' : 'primary', at);
          }
        });
        const result = await app.maintenance.scan({ serviceId, entityName: 'memo', branchId, scanTypes: ['low_confidence'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50 });
        expect((result['candidates'] as JsonObject[]).map((candidate) => (candidate['record'] as JsonObject)['id'])).toEqual([ids[257]]);
      });

      // The scan's windows are thousands of records wide; the data port's bounds are checked on five.
      it('data port: a scan window is (afterId, throughId], in or out of a branch (primary and related members), and idAfter counts from afterId', async () => {
        const created: JsonObject[] = [];
        for (let i = 0; i < 5; i++) created.push(await memo({ confidence: 0.2 }));
        const ids = sortedIds(...created);
        const branchId = ((await app.branches.create({ serviceId, slug: 'w', title: 'W', intent: 'W.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject)['id'] as string;
        for (const [i, id] of ids.entries()) {
          await app.branches.assign({ serviceId, branchId, role: i % 2 === 0 ? 'primary' : 'related', operation: 'assign', records: [{ entityName: 'memo', recordId: id, expectedRecordVersion: 1n }], idempotencyKey: key() });
        }
        const layout = storeLayoutOf(manifest(memoManifest())).entities.find((entity) => entity.name === 'memo')!;
        const locator = { backend: storage.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` };
        const scanIds = (scan: RecordScan) => storage.data.read(locator, 'agent-a', async (tx) => (await tx.scanRecords(layout, scan)).map((record) => record.id));
        const idAfter = (afterId: string | null, count: number, memberOf: string | null) => storage.data.read(locator, 'agent-a', (tx) => tx.idAfter(layout, afterId, count, memberOf));
        const anyOf = [{ kind: 'at_most', field: 'confidence', value: 0.5 }] as const;
        for (const memberOf of [null, branchId]) {
          expect(await scanIds({ memberOf, afterId: ids[0]!, limit: 10, anyOf, throughId: ids[3]! })).toEqual(ids.slice(1, 4));
          expect(await scanIds({ memberOf, afterId: ids[0]!, limit: 10 })).toEqual(ids.slice(1));
          expect(await idAfter(ids[0]!, 2, memberOf)).toBe(ids[2]);
          expect(await idAfter(null, 1, memberOf)).toBe(ids[0]);
          expect(await idAfter(ids[3]!, 2, memberOf)).toBeNull();
        }
        // Narrowing conditions at their bounds: at most (inclusive), more than n characters (exclusive).
        const narrowed = (condition: NonNullable<RecordScan['anyOf']>[number]) => scanIds({ memberOf: null, afterId: null, limit: 10, anyOf: [condition] });
        expect(await narrowed({ kind: 'at_most', field: 'confidence', value: 0.2 })).toEqual(ids);
        expect(await narrowed({ kind: 'at_most', field: 'confidence', value: 0.1 })).toEqual([]);
        expect(await narrowed({ kind: 'longer_than', field: 'title', characters: 5 })).toEqual([]);
        expect(await narrowed({ kind: 'longer_than', field: 'title', characters: 4 })).toEqual(ids);
        // Blank: null or (a list) empty.
        await app.records.update({ serviceId, entityName: 'memo', recordId: ids[0]!, updates: { labels: [] }, expectedRecordVersion: 2n, idempotencyKey: key() });
        await app.records.update({ serviceId, entityName: 'memo', recordId: ids[1]!, updates: { labels: ['a'] }, expectedRecordVersion: 2n, idempotencyKey: key() });
        expect(await narrowed({ kind: 'all_blank', fields: [{ name: 'labels', type: 'string_list' }] })).toEqual([ids[0], ...ids.slice(2)]);
        // Every field blank, not any: scope is null throughout, title present throughout.
        expect(await narrowed({ kind: 'all_blank', fields: [{ name: 'labels', type: 'string_list' }, { name: 'scope', type: 'text' }] })).toEqual([ids[0], ...ids.slice(2)]);
        expect(await narrowed({ kind: 'all_blank', fields: [{ name: 'scope', type: 'text' }, { name: 'title', type: 'text' }] })).toEqual([]);
      });

      it('in a branch scope, scans and counts only that branch\'s members, never another branch\'s', async () => {
        const ids = sortedIds(...(await Promise.all([0, 1, 2, 3].map(() => memo({ confidence: 0.2 })))));
        const branch = async (slug: string) =>
          ((await app.branches.create({ serviceId, slug, title: slug, intent: 'B.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject)['id'] as string;
        const mine = await branch('mine');
        const other = await branch('other');
        // Interleaved by id: the other branch's members lie before, between and after this one's.
        for (const [i, id] of ids.entries()) {
          await app.branches.assign({ serviceId, branchId: i % 2 === 1 ? mine : other, role: i < 2 ? 'primary' : 'related', operation: 'assign', records: [{ entityName: 'memo', recordId: id, expectedRecordVersion: 1n }], idempotencyKey: key() });
        }
        expect((await candidatesOf('low_confidence', { entityName: 'memo', branchId: mine })).map((candidate) => candidate.id)).toEqual([ids[1], ids[3]]);
        const layout = storeLayoutOf(manifest(memoManifest())).entities.find((entity) => entity.name === 'memo')!;
        const locator = { backend: storage.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` };
        const seen = await storage.data.read(locator, 'agent-a', async (tx) => ({
          scanned: (await tx.scanRecords(layout, { memberOf: mine, afterId: null, limit: 10 })).map((record) => record.id),
          narrowed: (await tx.scanRecords(layout, { memberOf: mine, afterId: null, limit: 10, anyOf: [{ kind: 'at_most', field: 'confidence', value: 0.5 }] })).map((record) => record.id),
          // A batch cut by its limit keeps the first members by id, then resumes past them.
          first: (await tx.scanRecords(layout, { memberOf: mine, afterId: null, limit: 1 })).map((record) => record.id),
          rest: (await tx.scanRecords(layout, { memberOf: mine, afterId: ids[1] as string, limit: 1 })).map((record) => record.id),
          second: await tx.idAfter(layout, null, 2, mine),
          third: await tx.idAfter(layout, null, 3, mine),
        }));
        expect(seen).toEqual({ scanned: [ids[1], ids[3]], narrowed: [ids[1], ids[3]], first: [ids[1]], rest: [ids[3]], second: ids[3], third: null });
      });

      it('in a branch scope, reads only the members that could be candidates, past any number of others', async () => {
        const branch = (await app.branches.create({ serviceId, slug: 'big', title: 't', intent: 'i', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject;
        const branchId = branch['id'] as string;
        const admission = await app.lifecycle.admitData(serviceId);
        const layout = admission.layout.entities.find((entity) => entity.name === 'memo');
        const locator = admission.service.storage;
        if (!layout || !locator) throw new Error('no memo layout');
        // More members than one narrowed read walks (4096): the rare candidates sit past the first window.
        const ids = Array.from({ length: 5000 }, (_, i) => `00000000-0000-4000-8000-${i.toString().padStart(12, '0')}`);
        const low = new Set([ids[4500], ids[4999]]);
        const outside = '00000000-0000-4000-9000-000000000000';
        const at = 1_800_000_000_000_000n;
        await storage.data.write(locator, 'agent-a', async (tx) => {
          for (const id of [...ids, outside]) {
            await tx.insertRecord(layout, { id, createdAt: at, updatedAt: at, createdVia: 'mcp', recordVersion: 1n, fields: { title: 'prose', status: 'ok', confidence: low.has(id) || id === outside ? 0.1 : 0.9 } });
            if (id !== outside) await tx.putMembership('memo', id, branchId, id === ids[4999] ? 'related' : 'primary', at);
          }
        });
        let read = 0;
        const counting: StoragePorts = {
          ...storage,
          data: {
            read: (where, principal, work) =>
              storage.data.read(where, principal, (tx) =>
                work(
                  new Proxy(tx, {
                    get(target, property) {
                      const value: unknown = Reflect.get(target, property, target);
                      if (property !== 'scanRecords' || typeof value !== 'function') return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
                      return async (...args: unknown[]) => {
                        const rows = (await (value as (...a: unknown[]) => Promise<unknown[]>).apply(target, args)) as unknown[];
                        read += rows.length;
                        return rows;
                      };
                    },
                  }),
                ),
              ),
            write: (where, principal, work) => storage.data.write(where, principal, work),
          },
        };
        const result = await appOver(counting).maintenance.scan({ serviceId, entityName: 'memo', branchId, scanTypes: ['low_confidence'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50 });
        expect((result['candidates'] as JsonObject[]).map((candidate) => (candidate['record'] as JsonObject)['id'])).toEqual([ids[4500], ids[4999]]);
        expect(read).toBe(2);
      });

      it('finds duplicates with one store read per field, within the branch scope, the first declared field first', async () => {
        const created: JsonObject[] = [];
        for (let i = 0; i < 300; i++) created.push(await memo({ provenance_source: `doc-${i}` }));
        const ids = sortedIds(...created);
        const update = (id: string, updates: JsonObject) => app.records.update({ serviceId, entityName: 'memo', recordId: id, updates, expectedRecordVersion: 1n, idempotencyKey: key() });
        const [x, p, q, y] = [ids[0], ids[10], ids[200], ids[299]] as [string, string, string, string];
        await update(x, { source_ref: 'ref' });
        await update(q, { provenance_source: 'shared' });
        await update(p, { provenance_source: 'shared' });
        // y shares both references: provenance_source is checked first.
        await update(y, { provenance_source: 'shared', source_ref: 'ref' });
        // Count the reads the scan asks of the store.
        const calls = new Map<string, number>();
        const counting = <T extends object>(tx: T): T =>
          new Proxy(tx, {
            get(target, property) {
              const value: unknown = Reflect.get(target, property);
              if (typeof value !== 'function') return value;
              return (...args: unknown[]) => {
                calls.set(String(property), (calls.get(String(property)) ?? 0) + 1);
                return (value as (...parameters: unknown[]) => unknown).apply(target, args);
              };
            },
          });
        const data = new Proxy(storage.data, {
          get(target, property) {
            if (property === 'read') return (locator: never, principal: string, work: (tx: never) => Promise<unknown>) => target.read(locator, principal, (tx) => work(counting(tx) as never));
            const value: unknown = Reflect.get(target, property);
            return typeof value === 'function' ? (value as (...parameters: unknown[]) => unknown).bind(target) : value;
          },
        });
        const counted = appOver({ ...storage, data });
        const duplicates = async (options: Partial<Omit<MaintenanceScanCommand, 'serviceId'>>) => {
          calls.clear();
          const result = await counted.maintenance.scan({ serviceId, entityName: 'memo', branchId: null, scanTypes: ['duplicate_authority'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50, ...options });
          // One read per declared reference field, never a pass over the records in batches.
          expect(Object.fromEntries(calls)).toEqual({ duplicateValues: 2 });
          return (result['candidates'] as JsonObject[]).map((candidate) => [(candidate['record'] as JsonObject)['id'], candidate['detail']]);
        };
        const prov = (n: bigint) => ({ duplicate_count: n, field_name: 'provenance_source' });
        const ref = (n: bigint) => ({ duplicate_count: n, field_name: 'source_ref' });
        expect(await duplicates({})).toEqual([[x, ref(2n)], [p, prov(3n)], [q, prov(3n)], [y, prov(3n)]]);
        expect(await duplicates({ limit: 2 })).toEqual([[x, ref(2n)], [p, prov(3n)]]);
        const branch = (await app.branches.create({ serviceId, slug: 'dups', title: 't', intent: 'i', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject;
        const target = (id: string, version: bigint) => ({ entityName: 'memo', recordId: id, expectedRecordVersion: version });
        await app.branches.assign({ serviceId, branchId: branch['id'] as string, role: 'primary', operation: 'assign', records: [target(x, 2n), target(y, 2n)], idempotencyKey: key() });
        await app.branches.assign({ serviceId, branchId: branch['id'] as string, role: 'related', operation: 'assign', records: [target(p, 2n)], idempotencyKey: key() });
        // In scope: groups count members only; q is outside.
        expect(await duplicates({ branchId: branch['id'] as string })).toEqual([[x, ref(2n)], [p, prov(2n)], [y, prov(2n)]]);
        // Other signals walk the branch's own members in id order.
        const scoped = await scan({ scanTypes: ['unbranched', 'stale'], branchId: branch['id'] as string, staleAfterDays: 1 });
        expect(scoped['candidates']).toEqual([{ scan_type: 'unbranched', record: { entity_name: 'memo', id: p }, detail: { missing_role: 'primary' } }]);
      });

      it('is read-only', async () => {
        const record = await memo({ confidence: 0.1 });
        app.clock.advance(200n * DAY);
        const before = await app.discovery.summary({ serviceId, sample: 3 });
        await scan();
        expect(await app.discovery.summary({ serviceId, sample: 3 })).toEqual(before);
        expect(await app.records.get(serviceId, 'memo', record['id'] as string)).toEqual(record);
        const history = await app.records.history({ serviceId, entityName: 'memo', recordId: null, limit: 10, cursor: null });
        expect((history['events'] as JsonObject[]).map((event) => event['kind'])).toEqual(['create']);
      });
    });
  });
}
