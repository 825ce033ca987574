// A narrowed maintenance scan walks an entity in windows of 4096 ids and
// batches of 256 records: candidates on either side of a window edge, and
// more candidates in one window than a batch holds, are all found, in id
// order, up to the limit (contract §8.3), past batches the narrowing keeps
// but no scan takes, and through a branch scope larger than a batch.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/common/json.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { materialisedNotes, type TestApp } from '../../conformance/harness.js';

let base: string;
let storage: Awaited<ReturnType<typeof openSqliteStorage>>;
let app: TestApp;
let serviceId: string;

const idOf = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

beforeEach(async () => {
  base = mkdtempSync(join(tmpdir(), 'aipcs-maintenance-windows-'));
  storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
  ({ app, serviceId } = await materialisedNotes(storage));
});

afterEach(async () => {
  await storage.close();
  rmSync(base, { recursive: true, force: true });
});

/** 9000 notes written in one unit through the data port; `fields(i)` for the i-th id. */
async function fill(fields: (i: number) => JsonObject): Promise<void> {
  const admission = await app.lifecycle.admitData(serviceId);
  const layout = admission.layout.entities.find((entity) => entity.name === 'note');
  if (!admission.service.storage || !layout) throw new Error('not materialised');
  const now = app.clock.nowMicros();
  await storage.data.write(admission.service.storage, admission.service.principalId, async (tx) => {
    for (let i = 0; i < 9000; i++) {
      await tx.insertRecord(layout, { id: idOf(i), createdAt: now, updatedAt: now, createdVia: 'mcp', recordVersion: 1n, fields: { title: `n${i}`, ...(fields(i) as Record<string, never>) } });
    }
  });
}

const scan = async (scanTypes: string[], limit: number) =>
  ((await app.maintenance.scan({ serviceId, entityName: 'note', branchId: null, scanTypes: scanTypes as never, staleAfterDays: 90, lowConfidenceBelow: 0.5, limit }))['candidates'] as JsonObject[]).map(
    (candidate) => `${candidate['scan_type'] as string}:${Number(((candidate['record'] as JsonObject)['id'] as string).slice(24))}`,
  );

it('finds candidates on both sides of each window edge, in id order, scan types in order', async () => {
  const low = new Set([0, 4095, 4096, 4097, 8191, 8192, 8999]);
  const superseded = new Set([4096, 6000, 8998]);
  await fill((i) => ({ confidence: low.has(i) ? 0.1 : 0.9, status: superseded.has(i) ? 'superseded' : 'draft' }));
  expect(await scan(['low_confidence', 'superseded'], 100)).toEqual([...[...low].map((i) => `low_confidence:${i}`), ...[...superseded].map((i) => `superseded:${i}`)]);
  expect(await scan(['superseded', 'low_confidence'], 8)).toEqual([...low].map((i) => `low_confidence:${i}`).concat(['superseded:4096']));
});

it('continues past a full batch of records the narrowing keeps but no scan takes', async () => {
  // Exactly at the threshold: kept by confidence <= 0.5, never a candidate (< 0.5).
  await fill((i) => ({ confidence: i >= 4000 && i < 4400 ? 0.5 : i === 4400 || i === 8500 ? 0.1 : 0.9 }));
  expect(await scan(['low_confidence'], 100)).toEqual(['low_confidence:4400', 'low_confidence:8500']);
});

it('cuts many candidates of one window at the limit, in id order', async () => {
  await fill((i) => ({ confidence: (i >= 4000 && i < 4400) || i === 8500 ? 0.1 : 0.9 }));
  expect(await scan(['low_confidence'], 100)).toEqual(Array.from({ length: 100 }, (_, k) => `low_confidence:${4000 + k}`));
});

it('walks a branch scope of more members than a batch holds, primary and related merged in id order', async () => {
  const branch = (await app.branches.create({ serviceId, slug: 'scope', title: 'Scope', intent: 'Scope.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b' }))['branch'] as JsonObject;
  const branchId = branch['id'] as string;
  const low = new Set([1, 2, 3, 299, 300, 301, 597, 598, 599, 600, 4500, 8999]);
  await fill((i) => ({ confidence: low.has(i) ? 0.1 : 0.9 }));
  // Members: i < 600 with i % 3 != 2, primary when even, related when odd; plus 8999 related.
  const members = [...Array.from({ length: 600 }, (_, i) => i).filter((i) => i % 3 !== 2), 8999];
  const admission = await app.lifecycle.admitData(serviceId);
  if (!admission.service.storage) throw new Error('not materialised');
  await storage.data.write(admission.service.storage, admission.service.principalId, async (tx) => {
    for (const i of members) await tx.putMembership('note', idOf(i), branchId, i % 2 === 0 ? 'primary' : 'related', 1n);
  });
  const inScope = [...low].filter((i) => members.includes(i));
  const result = await app.maintenance.scan({ serviceId, entityName: 'note', branchId, scanTypes: ['low_confidence', 'unbranched'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 100 });
  const ids = (result['candidates'] as JsonObject[]).map((candidate) => `${candidate['scan_type'] as string}:${Number(((candidate['record'] as JsonObject)['id'] as string).slice(24))}`);
  const related = members.filter((i) => i % 2 === 1);
  expect(ids).toEqual([...inScope.map((i) => `low_confidence:${i}`), ...related.slice(0, 100 - inScope.length).map((i) => `unbranched:${i}`)]);
});
