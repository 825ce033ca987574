// SQLite pages and scans with an index a manifest declares on `owner_id`:
// every row of a store has the same owner, so such an index must never lead
// a page (SQLite, without column statistics, took it and then sorted the
// whole entity to find a first page in id order). Checked with EXPLAIN QUERY
// PLAN on the statements the adapter runs; no timings.

import { expect, it } from 'vitest';
import type { EntityLayout } from '../../../src/aipcs/core/ports.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../../src/common/json.js';
import { appOver, manifest } from '../../conformance/harness.js';
import { freshDataRoot } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';
import { explainingStore } from '../../support/query-plans.js';

it('pages an entity in id order without walking an owner_id index the manifest declares', async () => {
  const dataRoot = freshDataRoot();
  const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
  let layout: EntityLayout;
  const ids: string[] = [];
  try {
    const app = appOver(storage);
    const serviceId = (await app.lifecycle.seed({ domainName: 'items', domainClass: 'test', intentDescription: 'Items.', idempotencyKey: 's' }))['service_id'] as string;
    const document: JsonObject = {
      manifest_version: 2n,
      schema_version: 1n,
      entities: [{ name: 'item', attributes: [...serverManaged(), { name: 'title', type: 'string', required: true }, { name: 'source', type: 'string' }] }],
      indices: [
        { name: 'item_owner_idx', entity: 'item', fields: ['owner_id'] },
        { name: 'item_owner_title_idx', entity: 'item', fields: ['owner_id', 'title'] },
      ],
    };
    await app.lifecycle.design({ serviceId, manifest: manifest(document), idempotencyKey: 'd' });
    await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    for (let i = 0; i < 30; i++) {
      const created = await app.records.create({ serviceId, entityName: 'item', record: { title: `item ${i}`, source: `s${i % 10}` }, idempotencyKey: `r${i}` });
      ids.push((created['record'] as JsonObject)['id'] as string);
    }
    ids.sort();
    layout = (await app.lifecycle.admitData(serviceId)).layout.entities.find((entity) => entity.name === 'item') as EntityLayout;
  } finally {
    await storage.close();
  }
  const plans: string[][] = [];
  const { db, tx } = explainingStore(dataRoot, plans);
  try {
    expect((await tx.queryRecords(layout, { filters: [], branch: null, afterId: null, limit: 5 })).map((record) => record.id)).toEqual(ids.slice(0, 5));
    expect((await tx.queryRecords(layout, { filters: [], branch: null, afterId: ids[4] as string, limit: 5 })).map((record) => record.id)).toEqual(ids.slice(5, 10));
    expect((await tx.scanRecords(layout, { memberOf: null, afterId: ids[9] as string, limit: 5 })).map((record) => record.id)).toEqual(ids.slice(10, 15));
    expect((await tx.duplicateValues(layout, 'source', null, 100)).length).toBe(30);
    expect(plans).toHaveLength(4);
    for (const plan of plans) {
      expect(plan.join('\n')).not.toMatch(/item_owner/);
    }
    // The pages stop at their limit in id order: nothing is sorted.
    for (const plan of plans.slice(0, 3)) expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
  } finally {
    db.close();
  }
});
