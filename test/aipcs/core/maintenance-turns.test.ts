// A maintenance scan reads a whole entity in keyset batches. On SQLite every
// batch is a synchronous read, so without a turn of the event loop between
// batches one scan held the process (every other client's request) until it
// had read the last record.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { materialisedNotes, type TestApp } from '../../conformance/harness.js';

type Storage = Awaited<ReturnType<typeof openSqliteStorage>>;

/**
 * A materialised notes service on a fresh SQLite root, filled by `fill`; then
 * a low_confidence scan (below 0.5) that must find nothing and must let an
 * immediate callback queued before it run before it ends.
 */
async function expectTurnDuringEmptyScan(fill: (app: TestApp, storage: Storage, serviceId: string) => Promise<void>): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'aipcs-maintenance-turns-'));
  const storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
  try {
    const { app, serviceId } = await materialisedNotes(storage);
    await fill(app, storage, serviceId);
    const marks: string[] = [];
    setImmediate(() => marks.push('turn'));
    const result = await app.maintenance.scan({ serviceId, entityName: 'note', branchId: null, scanTypes: ['low_confidence'], staleAfterDays: 90, lowConfidenceBelow: 0.5, limit: 50 });
    marks.push('scanned');
    expect(result['candidates']).toEqual([]);
    expect(marks).toEqual(['turn', 'scanned']);
  } finally {
    await storage.close();
    rmSync(base, { recursive: true, force: true });
  }
}

it('gives the event loop a turn between batches of a scan', async () => {
  // Notes exactly at the threshold: the store cannot skip them (the scan
  // narrows to confidence <= threshold), none is a candidate, and the scan
  // reads every batch.
  await expectTurnDuringEmptyScan(async (app, _storage, serviceId) => {
    for (let i = 0; i < 600; i++) await app.records.create({ serviceId, entityName: 'note', record: { title: `n${i}`, confidence: 0.5 }, idempotencyKey: `c${i}` });
  });
});

it('gives the event loop a turn between windows of a narrowed scan that finds nothing', async () => {
  // Confident notes only, more than one window of them, written in one unit through the data port.
  await expectTurnDuringEmptyScan(async (app, storage, serviceId) => {
    const admission = await app.lifecycle.admitData(serviceId);
    const layout = admission.layout.entities.find((entity) => entity.name === 'note');
    if (!admission.service.storage || !layout) throw new Error('not materialised');
    await storage.data.write(admission.service.storage, admission.service.principalId, async (tx) => {
      for (let i = 0; i < 9000; i++) {
        const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
        await tx.insertRecord(layout, { id, createdAt: 1n, updatedAt: 1n, createdVia: 'mcp', recordVersion: 1n, fields: { title: `n${i}`, confidence: 0.9 } });
      }
    });
  });
});
