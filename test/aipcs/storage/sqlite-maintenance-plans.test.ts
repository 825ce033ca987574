// SQLite maintenance reads: a batch in a branch scope is driven by the
// branch's membership rows (never a scan of the entity), and whether a
// record has a primary branch is one index probe per record. Checked with
// EXPLAIN QUERY PLAN on the statements the adapter runs; no timings.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { EntityLayout } from '../../../src/aipcs/core/ports.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../../src/common/json.js';
import { appOver, manifest } from '../../conformance/harness.js';
import { memoManifest } from '../../conformance/memo-manifest.js';
import { explainingStore, materialisedSqliteService } from '../../support/query-plans.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

it('walks a branch scope from its memberships and probes the primary flag per record', async () => {
  const members: string[] = [];
  const primaries = new Set<string>();
  const { dataRoot, filled } = await materialisedSqliteService(folders, memoManifest(), async (app, serviceId) => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const created = await app.records.create({ serviceId, entityName: 'memo', record: { title: `memo ${i}`, provenance_source: `doc-${i % 20}` }, idempotencyKey: `r${i}` });
      ids.push((created['record'] as JsonObject)['id'] as string);
    }
    const branch = await app.branches.create({ serviceId, slug: 'b', title: 'B', intent: 'I', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b' });
    const branchId = (branch['branch'] as JsonObject)['id'] as string;
    const assign = (role: 'primary' | 'related', chosen: string[], idempotencyKey: string) =>
      app.branches.assign({ serviceId, branchId, role, operation: 'assign', records: chosen.map((recordId) => ({ entityName: 'memo', recordId, expectedRecordVersion: 1n })), idempotencyKey });
    await assign('primary', ids.slice(0, 3), 'a1');
    await assign('related', ids.slice(3, 5), 'a2');
    members.push(...ids.slice(0, 5).sort());
    for (const id of ids.slice(0, 3)) primaries.add(id);
    const layout = (await app.lifecycle.admitData(serviceId)).layout.entities.find((entity) => entity.name === 'memo') as EntityLayout;
    return { layout, branchId };
  });
  const { layout, branchId } = filled;
  const plans: string[][] = [];
  const { db, tx } = explainingStore(dataRoot, plans);
  try {
    // Both roles, merged in id order, continued after a position and cut at the limit.
    expect((await tx.scanRecords(layout, { memberOf: branchId, afterId: null, limit: 10 })).map((record) => record.id)).toEqual(members);
    const second = await tx.scanRecords(layout, { memberOf: branchId, afterId: members[1] as string, limit: 2 });
    expect(second.map((record) => [record.id, record.hasPrimary])).toEqual(members.slice(2, 4).map((id) => [id, primaries.has(id)]));
    expect(await tx.duplicateValues(layout, 'provenance_source', branchId, 10)).toEqual([]);
    expect((await tx.duplicateValues(layout, 'provenance_source', null, 100)).length).toBe(40);
    const scoped = plans.slice(0, 2);
    for (const plan of scoped) {
      // The entity is only ever searched by id; the memberships come from the scope index.
      expect(plan.filter((line) => /^SCAN r\b/.test(line))).toEqual([]);
      expect(plan.join('\n')).toMatch(/SEARCH __aipcs_record_branch USING COVERING INDEX __aipcs_record_branch_scope/);
      expect(plan.join('\n')).toMatch(/SEARCH p USING COVERING INDEX __aipcs_record_branch_one_primary/);
      // Merged in order: no sort of the branch's members.
      expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
    }
  } finally {
    db.close();
  }
});

it('narrows a whole-entity batch to the records meeting any of its conditions, up to an id', async () => {
  const base = mkdtempSync(join(tmpdir(), 'aipcs-maintenance-plans-'));
  folders.push(base);
  const storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
  try {
    const app = appOver(storage);
    const serviceId = (await app.lifecycle.seed({ domainName: 'memos', domainClass: 'test', intentDescription: 'Memos.', idempotencyKey: 's' }))['service_id'] as string;
    await app.lifecycle.design({ serviceId, manifest: manifest(memoManifest()), idempotencyKey: 'd' });
    await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    const records: JsonObject[] = [{ confidence: 0.9 }, { confidence: 0.2 }, { status: 'superseded' }, { confidence: 0.9, status: 'ok' }, { confidence: 0.5 }];
    const byLabel = new Map<string, string>();
    for (const [i, fields] of records.entries()) {
      const created = await app.records.create({ serviceId, entityName: 'memo', record: { title: `memo ${i}`, ...fields }, idempotencyKey: `r${i}` });
      byLabel.set(`m${i}`, (created['record'] as JsonObject)['id'] as string);
    }
    const admission = await app.lifecycle.admitData(serviceId);
    const layout = admission.layout.entities.find((entity) => entity.name === 'memo') as EntityLayout;
    const ids = [...byLabel.values()].sort();
    const meeting = ['m1', 'm2', 'm4'].map((label) => byLabel.get(label) as string).sort();
    const anyOf = [
      { kind: 'at_most', field: 'confidence', value: 0.5 },
      { kind: 'text_equals', field: 'status', value: 'superseded' },
    ] as const;
    await storage.data.read(admission.service.storage!, 'agent-a', async (tx) => {
      expect((await tx.scanRecords(layout, { memberOf: null, afterId: null, limit: 10, anyOf })).map((record) => record.id)).toEqual(meeting);
      expect((await tx.scanRecords(layout, { memberOf: null, afterId: meeting[0] as string, limit: 1, anyOf })).map((record) => record.id)).toEqual([meeting[1]]);
      const through = ids[2] as string;
      expect((await tx.scanRecords(layout, { memberOf: null, afterId: null, limit: 10, anyOf, throughId: through })).map((record) => record.id)).toEqual(meeting.filter((id) => id <= through));
      expect(await tx.scanRecords(layout, { memberOf: null, afterId: null, limit: 10, anyOf: [] })).toEqual([]);
      expect(await tx.idAfter(layout, null, 3)).toBe(ids[2]);
      expect(await tx.idAfter(layout, ids[1] as string, 3)).toBe(ids[4]);
      expect(await tx.idAfter(layout, ids[1] as string, 4)).toBeNull();
    });
  } finally {
    await storage.close();
  }
});
