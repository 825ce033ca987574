// SQLite: export (and import's re-observation) pages the history in
// (entity, record, version) order. Each page resumes by seeking the
// (entity, record, sequence) index past the last event returned; resumed by
// version, every page inside one record re-read and sorted all of its
// events (quadratic: 7 s for a record of 40 000 versions). Checked with
// EXPLAIN QUERY PLAN on the statements the adapter runs; no timings.

import { rmSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import type { HistoryEvent } from '../../../src/aipcs/core/ports.js';
import type { JsonObject } from '../../../src/common/json.js';
import { memoManifest } from '../../conformance/memo-manifest.js';
import { explainingStore, materialisedSqliteService } from '../../support/query-plans.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

it('pages a long record history in version order by seeking the sequence index, never sorting', async () => {
  const { dataRoot, filled: ids } = await materialisedSqliteService(folders, memoManifest(), async (app, serviceId) => {
    const ids: string[] = [];
    for (let r = 0; r < 3; r++) {
      const created = await app.records.create({ serviceId, entityName: 'memo', record: { title: `memo ${r}` }, idempotencyKey: `c${r}` });
      ids.push((created['record'] as JsonObject)['id'] as string);
    }
    // Interleaved, so that sequence order across records is not version order.
    for (let version = 1n; version < 12n; version++) {
      for (const [r, recordId] of ids.entries()) {
        await app.records.update({ serviceId, entityName: 'memo', recordId, updates: { title: `v${version}` }, expectedRecordVersion: version, idempotencyKey: `u${r}-${version}` });
      }
    }
    return ids;
  });
  const plans: string[][] = [];
  const { db, tx } = explainingStore(dataRoot, plans);
  try {
    const events: HistoryEvent[] = [];
    let page = await tx.historyPage(null, 5);
    while (page.length > 0) {
      events.push(...page);
      const last = page.at(-1) as HistoryEvent;
      page = await tx.historyPage({ entityName: last.entityName, recordId: last.recordId, recordVersion: last.recordVersion }, 5);
    }
    expect(events.map((event) => [event.recordId, event.recordVersion])).toEqual(
      [...ids].sort().flatMap((id) => Array.from({ length: 12 }, (_, i) => [id, BigInt(i + 1)])),
    );
    // A position the last page did not end at is found by its version once.
    const third = events[20] as HistoryEvent;
    const resumed = await tx.historyPage({ entityName: third.entityName, recordId: third.recordId, recordVersion: third.recordVersion }, 3);
    expect(resumed.map((event) => [event.recordId, event.recordVersion])).toEqual(events.slice(21, 24).map((event) => [event.recordId, event.recordVersion]));
    expect(plans.length).toBeGreaterThan(8);
    for (const plan of plans) {
      const text = plan.join(' | ');
      expect(text).not.toContain('TEMP B-TREE');
      expect(text).toMatch(/SEARCH __aipcs_record_history USING INDEX __aipcs_record_history_record \(principal_id=\?/);
    }
  } finally {
    db.close();
  }
});
