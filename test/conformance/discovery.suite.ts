// Conformance: discovery of contract §8.1 and §8.2 over any adapter — the
// shape-only bootstrap from registry projections, and the bounded service
// summary (affordances, authority fields, counts, facets, branch cards,
// unbranched count and samples).

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../src/aipcs/core/application.js';
import { losslessJson, type JsonObject, type JsonValue } from '../../src/common/json.js';
import { SUMMARY_FACET_TEXT_BUDGET, SUMMARY_SAMPLE_TEXT_BUDGET } from '../../src/aipcs/core/discovery.js';
import { renderContractJson } from '../../src/aipcs/contract/envelope.js';
import { notesManifest, serverManaged } from '../support/manifests.js';
import { appOver, manifest, type StorageHarness, type StorageLocation, type TestApp } from './harness.js';
import { memoManifest } from './memo-manifest.js';

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

export function discoverySuite(harness: StorageHarness): void {
  describe(`discovery conformance (${harness.name})`, () => {
    let location: StorageLocation;
    let storage: StoragePorts;
    let app: TestApp;
    let keyCounter = 0;
    const key = () => `dkey-${++keyCounter}`;

    beforeEach(async () => {
      location = await harness.create();
      storage = await location.open();
      app = appOver(storage);
    });

    afterEach(async () => {
      await storage.close();
      await location.destroy();
    });

    const seed = async (domainName: string) => (await app.lifecycle.seed({ domainName, domainClass: 'knowledge', intentDescription: `About ${domainName}.`, idempotencyKey: key() }))['service_id'] as string;
    const materialised = async (domainName: string, document: JsonObject) => {
      const serviceId = await seed(domainName);
      await app.lifecycle.design({ serviceId, manifest: manifest(document), idempotencyKey: key() });
      await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: key() });
      return serviceId;
    };

    describe('bootstrap', () => {
      it('answers an empty registry', async () => {
        expect(await app.discovery.bootstrap({ limit: 100 })).toEqual({ services: [], truncated: false });
      });

      it('lists shape-only cards in creation order for every design state, and truncates', async () => {
        const seeded = await seed('seeded_only');
        const designed = await seed('designed_only');
        await app.lifecycle.design({ serviceId: designed, manifest: manifest(notesManifest()), idempotencyKey: key() });
        const live = await materialised('live_notes', notesManifest());
        await app.records.create({ serviceId: live, entityName: 'note', record: { title: 'SECRET-PROSE-VALUE', tags: ['SECRET-TAG'] }, idempotencyKey: key() });

        const result = await app.discovery.bootstrap({ limit: 100 });
        expect(result['truncated']).toBe(false);
        const cards = result['services'] as JsonObject[];
        expect(cards.map((card) => card['service_id'])).toEqual([seeded, designed, live]);
        expect(Object.keys(cards[0] as JsonObject)).toEqual(['service_id', 'domain_name', 'domain_class', 'intent', 'state', 'operational_status', 'schema_version', 'recovery_state', 'entities']);
        expect(cards[0]).toEqual({
          service_id: seeded,
          domain_name: 'seeded_only',
          domain_class: 'knowledge',
          intent: 'About seeded_only.',
          state: 'seeded',
          operational_status: 'active',
          schema_version: null,
          recovery_state: 'clear',
          entities: [],
        });
        expect(cards[1]).toMatchObject({ state: 'seeded', schema_version: 1n, entities: ['note', 'project'] });
        expect(cards[2]).toMatchObject({ state: 'materialised', schema_version: 1n, entities: ['note', 'project'] });
        expect(losslessJson(result)).not.toContain('SECRET');

        const truncated = await app.discovery.bootstrap({ limit: 2 });
        expect((truncated['services'] as JsonObject[]).map((card) => card['service_id'])).toEqual([seeded, designed]);
        expect(truncated['truncated']).toBe(true);
        const exact = await app.discovery.bootstrap({ limit: 3 });
        expect(exact['truncated']).toBe(false);
        // A limit outside 1..100 (the tool schema refuses one) is clamped to a whole count in range.
        expect(await app.discovery.bootstrap({ limit: 0 })).toMatchObject({ services: [cards[0]], truncated: true });
        expect(await app.discovery.bootstrap({ limit: 2.9 })).toMatchObject({ services: cards.slice(0, 2), truncated: true });
      });

      it('shows 100 cards at most, and each card the recovery state of its service', async () => {
        const first = await seed('first');
        const second = await seed('second');
        await app.lifecycle.design({ serviceId: second, manifest: manifest(notesManifest()), idempotencyKey: 'design-second' });
        const crashing = appOver(storage, {
          checkpoint: (name) => {
            if (name === 'materialise:admitted') throw new Error('simulated crash');
          },
        });
        await expect(crashing.lifecycle.materialise({ serviceId: second, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'mat-second' })).rejects.toThrow('simulated crash');
        await storage.registry.write(async (tx) => {
          await tx.insertClaim({
            principalId: 'agent-a',
            idempotencyKey: 'frozen',
            kind: 'design',
            fingerprint: 'f'.repeat(64),
            serviceId: first,
            phase: 'recovery_required',
            intent: { service_id: first },
            result: null,
            createdAt: 1_800_000_000_000_100n,
            updatedAt: 1_800_000_000_000_100n,
          });
        });
        for (let i = 0; i < 99; i++) await seed(`more_${i}`);
        const result = await app.discovery.bootstrap({ limit: 100 });
        const cards = result['services'] as JsonObject[];
        expect(cards).toHaveLength(100);
        expect(result['truncated']).toBe(true);
        expect(cards.slice(0, 3).map((card) => card['recovery_state'])).toEqual(['recovery_required', 'pending', 'clear']);
        expect((await app.discovery.bootstrap({ limit: 1000 }))['services']).toHaveLength(100);
      });

      it('is scoped to the principal', async () => {
        await seed('mine');
        const other = appOver(storage, { principalId: 'agent-b' });
        expect(await other.discovery.bootstrap({ limit: 100 })).toEqual({ services: [], truncated: false });
      });
    });

    describe('summary', () => {
      let serviceId: string;
      beforeEach(async () => {
        serviceId = await materialised('memos', memoManifest());
      });

      const memo = async (record: JsonObject) => (await app.records.create({ serviceId, entityName: 'memo', record: { title: 't', ...record }, idempotencyKey: key() }))['record'] as JsonObject;
      const plain = async (label: string) => (await app.records.create({ serviceId, entityName: 'plain', record: { label }, idempotencyKey: key() }))['record'] as JsonObject;

      it('derives affordances, authority availability and guidance from the manifest', async () => {
        const summary = await app.discovery.summary({ serviceId, sample: 0 });
        expect(Object.keys(summary)).toEqual([
          'data_status',
          'affordances',
          'authority_field_availability',
          'query_guidance',
          'record_counts',
          'facets',
          'branches',
          'unbranched_record_count',
          'samples',
        ]);
        expect(summary['data_status']).toBe('ready');
        const affordances = summary['affordances'] as JsonObject[];
        expect(affordances.map((entry) => entry['entity_name'])).toEqual(['memo', 'plain']);
        const exact = (field_name: string, facet = false) => ({ field_name, mode: 'exact', value_shape: 'scalar', facet });
        expect(affordances[0]).toEqual({
          entity_name: 'memo',
          filter_modes: [
            exact('confidence'),
            exact('pinned', true),
            exact('provenance_source'),
            exact('rank', true),
            exact('scope'),
            exact('source_ref'),
            exact('status', true),
            exact('superseded_by'),
            { field_name: 'tags', mode: 'membership', value_shape: 'single_string_member', facet: true },
            exact('title'),
            exact('valid_until'),
          ],
        });
        expect(affordances[1]).toEqual({ entity_name: 'plain', filter_modes: [exact('label', true)] });
        expect(summary['authority_field_availability']).toEqual([
          {
            entity_name: 'memo',
            provenance_fields: ['provenance_source'],
            source_fields: ['source_ref'],
            scope_fields: ['scope'],
            confidence_field: 'confidence',
            status_field: 'status',
            validity_fields: ['valid_until'],
            supersession_fields: ['superseded_by'],
          },
          {
            entity_name: 'plain',
            provenance_fields: [],
            source_fields: [],
            scope_fields: [],
            confidence_field: null,
            status_field: null,
            validity_fields: [],
            supersession_fields: [],
          },
        ]);
        expect(summary['query_guidance']).toEqual({ patterns: ['memos by tag', 'memos by status'], retrieval_guidance: 'Search memos by tag first.' });
        expect(summary['record_counts']).toEqual([
          { entity_name: 'memo', count: 0n },
          { entity_name: 'plain', count: 0n },
        ]);
        expect(summary['facets']).toEqual(['labels', 'pinned', 'rank', 'status', 'tags'].map((field_name) => ({ entity_name: 'memo', field_name, values: [] })).concat([{ entity_name: 'plain', field_name: 'label', values: [] }]));
        expect(summary['branches']).toEqual([]);
        expect(summary['unbranched_record_count']).toBe(0n);
        expect(summary['samples']).toEqual([
          { entity_name: 'memo', records: [] },
          { entity_name: 'plain', records: [] },
        ]);
      });

      it('counts facet values by count descending then value ascending, trimmed, nulls excluded', async () => {
        await memo({ status: 'final', tags: ['x', 'y'], labels: ['l1'], pinned: true, rank: 2n });
        await memo({ status: 'draft', tags: ['y'], labels: ['l1', 'l2'], pinned: false, rank: 1n });
        await memo({ status: 'final', tags: ['y', 'z'], pinned: false, rank: 1n });
        await memo({ status: 'draft' });
        await memo({ status: ' archived ' });
        await memo({ status: 'b' });
        await memo({});
        const facets = (await app.discovery.summary({ serviceId, sample: 0 }))['facets'] as JsonObject[];
        const valuesOf = (field: string) => (facets.find((facet) => facet['field_name'] === field) as JsonObject)['values'];
        expect(valuesOf('status')).toEqual([
          { value: 'draft', count: 2n },
          { value: 'final', count: 2n },
          { value: 'archived', count: 1n },
          { value: 'b', count: 1n },
        ]);
        expect(valuesOf('tags')).toEqual([
          { value: 'y', count: 3n },
          { value: 'x', count: 1n },
          { value: 'z', count: 1n },
        ]);
        // A list facet without membership retrieval still counts members.
        expect(valuesOf('labels')).toEqual([
          { value: 'l1', count: 2n },
          { value: 'l2', count: 1n },
        ]);
        expect(valuesOf('pinned')).toEqual([
          { value: false, count: 2n },
          { value: true, count: 1n },
        ]);
        expect(valuesOf('rank')).toEqual([
          { value: 1n, count: 2n },
          { value: 2n, count: 1n },
        ]);
        expect(facets.some((facet) => facet['field_name'] === 'id')).toBe(false);
      });

      it('agrees with a model of facet counts: top 20 by count then stored value, members after delete and update, integers and booleans', async () => {
        // A fixed linear congruential sequence (high bits): the same memos on every run.
        let seed = 11;
        const rand = (n: number) => {
          seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
          return (seed >>> 16) % n;
        };
        const pool = ['a', ' a', 'a ', 'b', 'B', 'c', '\u00e9', 'z', ...Array.from({ length: 20 }, (_, i) => `v${i}`)];
        const rows: JsonObject[] = [];
        const ids: string[] = [];
        for (let i = 0; i < 70; i++) {
          const fields: JsonObject = {
            status: rand(5) === 0 ? null : pool[rand(pool.length)] as string,
            tags: pool.filter(() => rand(6) === 0),
            labels: rand(3) === 0 ? null : pool.filter(() => rand(8) === 0),
            pinned: [true, false, null][rand(3)] as JsonValue,
            rank: [1n, 2n, -3n, 9223372036854775807n, null][rand(5)] as JsonValue,
          };
          rows.push(fields);
          ids.push((await memo(fields))['id'] as string);
        }
        // Delete a few and update one, so members follow their records.
        for (const i of [3, 17, 40]) await app.records.delete({ serviceId, entityName: 'memo', recordId: ids[i] as string, expectedRecordVersion: 1n, idempotencyKey: key() });
        await app.records.update({ serviceId, entityName: 'memo', recordId: ids[5] as string, updates: { tags: ['zz', 'a'] }, expectedRecordVersion: 1n, idempotencyKey: key() });
        rows[5] = { ...rows[5], tags: ['zz', 'a'] };
        const live = rows.filter((_, i) => ![3, 17, 40].includes(i));
        const cmp = (a: JsonValue, b: JsonValue) => {
          if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
          return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
        };
        const expected = (field: string) => {
          const counts = new Map<string, { value: JsonValue; count: bigint }>();
          for (const row of live) {
            const value = row[field] ?? null;
            const values = value === null ? [] : Array.isArray(value) ? value : [value];
            for (const v of values) {
              const k = `${typeof v}:${String(v)}`;
              const entry = counts.get(k) ?? { value: v, count: 0n };
              entry.count += 1n;
              counts.set(k, entry);
            }
          }
          return [...counts.values()]
            .sort((x, y) => (x.count === y.count ? cmp(x.value, y.value) : x.count > y.count ? -1 : 1))
            .slice(0, 20)
            .map((entry) => ({ value: typeof entry.value === 'string' ? entry.value.trim() : entry.value, count: entry.count }));
        };
        // More distinct members than a facet keeps, so the cut at 20 falls inside ties.
        expect(expected('tags')).toHaveLength(20);
        const facets = (await app.discovery.summary({ serviceId, sample: 0 }))['facets'] as JsonObject[];
        for (const field of ['status', 'tags', 'labels', 'pinned', 'rank']) {
          expect({ field, values: (facets.find((facet) => facet['field_name'] === field) as JsonObject)['values'] }).toEqual({ field, values: expected(field) });
        }
      });

      it('bounds each facet to 20 values and counts only the principal records', async () => {
        for (let i = 0; i < 22; i++) await plain(`label-${String(i).padStart(2, '0')}`);
        await plain('label-21');
        const facets = (await app.discovery.summary({ serviceId, sample: 0 }))['facets'] as JsonObject[];
        const values = (facets.find((facet) => facet['entity_name'] === 'plain') as JsonObject)['values'] as JsonObject[];
        expect(values).toHaveLength(20);
        expect(values[0]).toEqual({ value: 'label-21', count: 2n });
        expect(values.slice(1).map((entry) => entry['value'])).toEqual(Array.from({ length: 19 }, (_, i) => `label-${String(i).padStart(2, '0')}`));
        const counts = (await app.discovery.summary({ serviceId, sample: 0 }))['record_counts'];
        expect(counts).toEqual([
          { entity_name: 'memo', count: 0n },
          { entity_name: 'plain', count: 23n },
        ]);
        const other = appOver(storage, { principalId: 'agent-b' });
        await rejects(other.discovery.summary({ serviceId, sample: 0 }), 'not_found');
      });

      it('reports at most 100 branch cards', async () => {
        for (let i = 0; i < 101; i++) {
          await app.branches.create({ serviceId, slug: `topic-${i}`, title: `t${i}`, intent: 'i', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() });
        }
        const summary = await app.discovery.summary({ serviceId, sample: 0 });
        expect(summary['branches']).toHaveLength(100);
      });

      it('reports branch cards by recency with membership counts, and the unbranched count', async () => {
        const branch = async (slug: string) =>
          (await app.branches.create({ serviceId, slug, title: slug, intent: 'i', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: key() }))['branch'] as JsonObject;
        const first = await branch('first-topic');
        const second = await branch('second-topic');
        const third = await branch('third-topic');
        const a = await memo({});
        const b = await memo({});
        const c = await plain('p');
        await plain('q');
        await plain('r');
        const target = (record: JsonObject) => ({ entityName: record['entity_name'] as string, recordId: record['id'] as string, expectedRecordVersion: record['record_version'] as bigint });
        await app.branches.assign({ serviceId, branchId: first['id'] as string, role: 'primary', operation: 'assign', records: [target(a), target(c)], idempotencyKey: key() });
        await app.branches.assign({ serviceId, branchId: second['id'] as string, role: 'related', operation: 'assign', records: [target(b)], idempotencyKey: key() });
        await app.branches.update({ serviceId, branchId: first['id'] as string, expectedBranchRevision: 1n, updates: { title: 'Renamed' }, idempotencyKey: key() });
        const summary = await app.discovery.summary({ serviceId, sample: 0 });
        const cards = summary['branches'] as JsonObject[];
        expect(cards.map((card) => (card['branch'] as JsonObject)['slug'])).toEqual(['first-topic', 'third-topic', 'second-topic']);
        expect(Object.keys(cards[0] as JsonObject)).toEqual(['branch', 'primary_record_count', 'related_record_count']);
        expect(cards[0]).toMatchObject({ primary_record_count: 2n, related_record_count: 0n });
        expect((cards[0]?.['branch'] as JsonObject)['title']).toBe('Renamed');
        expect(cards[1]).toMatchObject({ primary_record_count: 0n, related_record_count: 0n });
        expect(cards[2]).toMatchObject({ primary_record_count: 0n, related_record_count: 1n });
        expect((cards[1]?.['branch'] as JsonObject)['id']).toBe(third['id']);
        // b (related only), q and r have no primary branch: more than have one.
        expect(summary['unbranched_record_count']).toBe(3n);
        // Counts are of all records, branched or not.
        expect(summary['record_counts']).toEqual([
          { entity_name: 'memo', count: 2n },
          { entity_name: 'plain', count: 3n },
        ]);
      });

      it('samples the first records by id through the public record projection', async () => {
        const memos = [await memo({ title: '  padded  ', confidence: 1n }), await memo({ title: 'b' }), await memo({ title: 'c' }), await memo({ title: 'd' })];
        const samples = (await app.discovery.summary({ serviceId, sample: 2 }))['samples'] as JsonObject[];
        expect(samples.map((entry) => entry['entity_name'])).toEqual(['memo', 'plain']);
        const sampled = (samples[0] as JsonObject)['records'] as JsonObject[];
        const expectedIds = memos.map((record) => record['id'] as string).sort().slice(0, 2);
        expect(sampled.map((record) => record['id'])).toEqual(expectedIds);
        for (const record of sampled) expect(record).toEqual(await app.records.get(serviceId, 'memo', record['id'] as string));
        expect((samples[1] as JsonObject)['records']).toEqual([]);
        const sampledIds = async (sample: number) =>
          ((((await app.discovery.summary({ serviceId, sample }))['samples'] as JsonObject[])[0] as JsonObject)['records'] as JsonObject[]).map((record) => record['id']);
        const sorted = memos.map((record) => record['id'] as string).sort();
        expect(await sampledIds(1)).toEqual(sorted.slice(0, 1));
        expect(await sampledIds(3)).toEqual(sorted.slice(0, 3));
        // Above the bound of 3 (the tool schema refuses it): still 3.
        expect(await sampledIds(4)).toEqual(sorted.slice(0, 3));
      });

      it('leaves out the facet values past the facet text budget, which all facets share, in order', async () => {
        // 20 values of 16000 characters in each of two facets: more text than the budget takes.
        const long = (i: number, fill: string) => `${String(i).padStart(2, '0')}${fill.repeat(15998)}`;
        for (let i = 0; i < 20; i++) {
          await memo({ status: long(i, 's') });
          await plain(long(i, 'l'));
        }
        const facets = (await app.discovery.summary({ serviceId, sample: 0 }))['facets'] as JsonObject[];
        // The model: facets in order (memo's status before plain's label), each value with its comma.
        let used = 0;
        const fitting = (values: JsonObject[]) => {
          const kept: JsonObject[] = [];
          for (const value of values) {
            const size = renderContractJson(value).length + 1;
            if (used + size > SUMMARY_FACET_TEXT_BUDGET) break;
            used += size;
            kept.push(value);
          }
          return kept;
        };
        const all = (fill: string) => Array.from({ length: 20 }, (_, i) => ({ value: long(i, fill), count: 1n }));
        const status = fitting(all('s'));
        const label = fitting(all('l'));
        expect(status).toHaveLength(20);
        expect(label.length).toBeGreaterThan(0);
        expect(label.length).toBeLessThan(20);
        const valuesOf = (entity: string, field: string) => (facets.find((facet) => facet['entity_name'] === entity && facet['field_name'] === field) as JsonObject)['values'];
        expect(valuesOf('memo', 'status')).toEqual(status);
        expect(valuesOf('plain', 'label')).toEqual(label);
      });

      it('leaves out the samples past the sample text budget, which all entities share, in order', async () => {
        // Six entities of three records of about 64 KiB each: more text than the budget takes.
        const names = ['e0', 'e1', 'e2', 'e3', 'e4', 'e5'];
        const fields = ['fa', 'fb', 'fc', 'fd'];
        const wide = await materialised('wide', {
          manifest_version: 2n,
          schema_version: 1n,
          entities: names.map((name) => ({ name, attributes: [...serverManaged(), ...fields.map((field) => ({ name: field, type: 'string' }))] })),
          query_patterns: [],
          discovery_facets: [],
          retrieval_guidance: null,
        });
        const stored: JsonObject[][] = [];
        for (const name of names) {
          const records: JsonObject[] = [];
          for (let i = 0; i < 3; i++) {
            const record = Object.fromEntries(fields.map((field) => [field, `${name}${i}${field}`.padEnd(16000, 'x')]));
            records.push((await app.records.create({ serviceId: wide, entityName: name, record, idempotencyKey: key() }))['record'] as JsonObject);
          }
          stored.push(records.sort((a, b) => ((a['id'] as string) < (b['id'] as string) ? -1 : 1)));
        }
        const samples = (await app.discovery.summary({ serviceId: wide, sample: 3 }))['samples'] as JsonObject[];
        let used = 0;
        const expected = names.map((entity_name, i) => {
          const records: JsonObject[] = [];
          for (const record of stored[i] as JsonObject[]) {
            const size = renderContractJson(record).length + 1;
            if (used + size > SUMMARY_SAMPLE_TEXT_BUDGET) break;
            used += size;
            records.push(record);
          }
          return { entity_name, records };
        });
        const kept = expected.reduce((sum, entry) => sum + entry.records.length, 0);
        expect(kept).toBeGreaterThan(9);
        expect(kept).toBeLessThan(18);
        expect(samples).toEqual(expected);
      });

      it('follows data-tool admission', async () => {
        await rejects(app.discovery.summary({ serviceId: '99999999-9999-4999-8999-999999999999', sample: 0 }), 'not_found');
        const seeded = await seed('not_yet');
        await rejects(app.discovery.summary({ serviceId: seeded, sample: 0 }), 'storage_unavailable');
      });
    });
  });
}
