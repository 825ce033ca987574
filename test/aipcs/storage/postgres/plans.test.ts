// PostgreSQL adapter, query plans: the record queries the adapter builds are
// explained (FORMAT JSON) over a few thousand rows, before and after ANALYZE:
// never a scan of the entity table, and once analysed an index walk in id
// order without a sort. A
// behavioural check of the store layout and the SQL shapes; no timings.

import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { OperatorStoragePorts } from '../../../../src/aipcs/core/application.js';
import type { EntityLayout, RecordQuery, StorageLocator, StoredRecord } from '../../../../src/aipcs/core/ports.js';
import { PostgresDataTx } from '../../../../src/aipcs/storage/postgres/service-data.js';
import { appOver, manifest, materialisedNotes } from '../../../conformance/harness.js';
import { notesManifest, notesManifestV2 } from '../../../support/manifests.js';
import type { JsonObject } from '../../../../src/common/json.js';
import type { ClusterInfo } from '../../../support/postgres-cluster.js';
import { expectClustersUnderCi, postgresClusters, queryRows, usePostgresStorage } from '../../../support/postgres.js';
import { ExplainingFirstSession, ExplainingSession, type PlanNode, planNodes } from '../../../support/query-plans.js';

const PRINCIPAL = 'agent-a';
const RECORDS = 3000;

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s record query plans', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);
  let storage: OperatorStoragePorts;

  beforeEach(async () => {
    storage = await fixture.open();
  });

  /** Runs `use` on one connection of its own, closed afterwards. */
  async function onOneConnection<T>(use: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const pool = new pg.Pool({ connectionString: fixture.db.url, max: 1 });
    const client = await pool.connect();
    try {
      return await use(client);
    } finally {
      client.release();
      await pool.end();
    }
  }

  async function loadedNotes(): Promise<{ locator: StorageLocator; layout: EntityLayout; ids: string[] }> {
    // materialisedNotes acts as agent-a, the PRINCIPAL here.
    const { app, serviceId } = await materialisedNotes(storage);
    const admission = await app.lifecycle.admitData(serviceId);
    const layout = admission.layout.entities.find((entity) => entity.name === 'note');
    const locator = admission.service.storage;
    if (!layout || !locator) throw new Error('no materialised note entity');
    const ids: string[] = [];
    // Rows of a second principal share the table, as they would in a shared store.
    for (const principal of [PRINCIPAL, 'agent-b']) {
      await storage.data.write(locator, principal, async (tx) => {
        for (let i = 0; i < RECORDS; i++) {
          const record: StoredRecord = {
            id: randomUUID(),
            createdAt: 1_800_000_000_000_000n + BigInt(i),
            updatedAt: 1_800_000_000_000_000n + BigInt(i),
            createdVia: 'mcp',
            recordVersion: 1n,
            fields: { title: `note ${i}`, status: ['draft', 'complete', 'superseded'][i % 3] ?? null, tags: [`t${i % 20}`, 'common'] },
          };
          if (principal === PRINCIPAL) ids.push(record.id);
          await tx.insertRecord(layout, record);
        }
      });
    }
    return { locator, layout, ids: ids.sort() };
  }

  async function explain(locator: StorageLocator, layout: EntityLayout, query: RecordQuery): Promise<PlanNode> {
    return onOneConnection(async (client) => {
      const session = new ExplainingSession(client);
      await new PostgresDataTx(session, locator.namespace, PRINCIPAL).queryRecords(layout, query);
      const [plan] = session.plans;
      if (!plan) throw new Error('no query explained');
      return plan;
    });
  }

  it('walks indexes in id order for a keyset page and a membership search, with and without statistics', async () => {
    const { locator, layout, ids } = await loadedNotes();
    const middle = ids[RECORDS >> 1] ?? null;
    const queries: Record<string, RecordQuery> = {
      'first page': { filters: [], branch: null, afterId: null, limit: 101 },
      'keyset page': { filters: [], branch: null, afterId: middle, limit: 101 },
      membership: { filters: [{ kind: 'member', field: 'tags', value: 'common' }], branch: null, afterId: null, limit: 51 },
      'membership after a cursor': { filters: [{ kind: 'member', field: 'tags', value: 't7' }], branch: null, afterId: middle, limit: 51 },
    };
    for (const analysed of [false, true]) {
      if (analysed) {
        await queryRows(fixture.db.url, `ANALYZE "${locator.namespace}"."note", "${locator.namespace}"."__aipcs_list_member"`);
      }
      for (const [name, query] of Object.entries(queries)) {
        const plan = await explain(locator, layout, query);
        const types = planNodes(plan).map((node) => `${node['Node Type']}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`);
        const context = `${name}${analysed ? ' (analysed)' : ''}: ${types.join(', ')}`;
        expect(plan['Node Type'], context).toBe('Limit');
        expect(types, context).not.toContain('Seq Scan on note');
        // With statistics, rows come out of an index in id order: nothing is
        // sorted, so the walk stops at the limit. (A never-analysed table may
        // still be read through a bitmap and sorted: the planner guesses it tiny.)
        if (analysed) expect(types.some((type) => type.startsWith('Sort') || type.startsWith('Incremental Sort')), context).toBe(false);
      }
    }
  });

  it('searches an equality field through an index, not a scan of the entity', async () => {
    const { locator, layout } = await loadedNotes();
    const plan = await explain(locator, layout, { filters: [{ kind: 'equals', field: 'status', value: 'draft' }], branch: null, afterId: null, limit: 51 });
    const types = planNodes(plan).map((node) => `${node['Node Type']}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`);
    expect(types, types.join(', ')).not.toContain('Seq Scan on note');
  });

  it('walks a branch scope of a maintenance batch from its memberships and probes the primary flag per record', async () => {
    const { locator, layout, ids } = await loadedNotes();
    const [branchId, otherId] = [randomUUID(), randomUUID()] as const;
    // A small branch among many memberships: the planner would rather read an index than the table.
    await storage.data.write(locator, PRINCIPAL, async (tx) => {
      const at = 1_800_000_000_000_000n;
      for (const [id, slug] of [[branchId, 'b'], [otherId, 'o']] as const) {
        await tx.insertBranch({ id, slug, title: 'B', intent: 'I', branchType: null, parentId: null, status: 'active', retrievalSummary: null, createdAt: at, updatedAt: at, branchRevision: 1n });
      }
      for (const [i, id] of ids.entries()) {
        if (i % 50 < 2) await tx.putMembership('note', id, branchId, i % 50 === 0 ? 'primary' : 'related', at);
        else await tx.putMembership('note', id, otherId, i % 2 === 0 ? 'primary' : 'related', at);
      }
    });
    const members = ids.filter((_id, i) => i % 50 < 2);
    const scans = { scope: { memberOf: branchId, afterId: null, limit: 256 }, 'scope after a position': { memberOf: branchId, afterId: members[30] ?? null, limit: 256 }, entity: { memberOf: null, afterId: ids[1000] ?? null, limit: 256 } };
    for (const analysed of [false, true]) {
      if (analysed) {
        await queryRows(fixture.db.url, `ANALYZE "${locator.namespace}"."note", "${locator.namespace}"."__aipcs_record_branch"`);
      }
      for (const [name, scan] of Object.entries(scans)) {
        await onOneConnection(async (client) => {
          const session = new ExplainingSession(client);
          await new PostgresDataTx(session, locator.namespace, PRINCIPAL).scanRecords(layout, scan);
          const types = session.plans.flatMap(planNodes).map((node) => `${node['Node Type']}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`);
          const context = `${name}${analysed ? ' (analysed)' : ''}: ${types.join(', ')}`;
          expect(types, context).not.toContain('Seq Scan on note');
          // Neither the scope nor the primary flag reads every membership (a hashed EXISTS did, for each batch).
          expect(types, context).not.toContain('Seq Scan on __aipcs_record_branch');
          expect(types.filter((type) => type.startsWith('Hash')), context).toEqual([]);
        });
      }
      // The rows themselves: both roles, in id order.
      const rows = await storage.data.read(locator, PRINCIPAL, (tx) => tx.scanRecords(layout, { memberOf: branchId, afterId: null, limit: 1000 }));
      expect(rows.map((row) => [row.id, row.hasPrimary])).toEqual(members.map((id) => [id, ids.indexOf(id) % 50 === 0]));
    }
  });

  /** For every foreign key of the store's domain tables: the table, the key's column, and whether an index leads with that column. */
  async function foreignKeyIndexes(namespace: string): Promise<{ table: string; column: string; indexed: boolean }[]> {
    return queryRows<{ table: string; column: string; indexed: boolean }>(
      fixture.db.url,
      `SELECT c.conrelid::regclass::text AS table, a.attname AS column,
              EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1]) AS indexed
         FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
        WHERE c.contype = 'f' AND c.connamespace = $1::regnamespace AND c.conrelid::regclass::text NOT LIKE '%__aipcs_%'
        ORDER BY 1, 2`,
      [namespace],
    );
  }

  it('indexes every referencing column by itself, so that a delete finds the rows pointing at a record without a scan', async () => {
    const { locator } = await loadedNotes();
    expect(await foreignKeyIndexes(locator.namespace)).toEqual([{ table: `${locator.namespace}.note`, column: 'project_id', indexed: true }]);

    // The lookup PostgreSQL's restrict trigger runs, and our own check before it.
    await queryRows(fixture.db.url, `ANALYZE "${locator.namespace}"."note"`);
    for (const sql of [
      `SELECT 1 FROM ONLY "${locator.namespace}"."note" x WHERE "project_id" = $1 FOR KEY SHARE OF x`,
      `SELECT 1 FROM "${locator.namespace}"."note" WHERE "project_id" = $1 LIMIT 1`,
    ]) {
      const [row] = await queryRows<{ 'QUERY PLAN': readonly { Plan: PlanNode }[] }>(fixture.db.url, `EXPLAIN (FORMAT JSON) ${sql}`, [randomUUID()]);
      const plan = row?.['QUERY PLAN'][0]?.Plan;
      if (!plan) throw new Error('no plan');
      const types = planNodes(plan).map((node) => `${node['Node Type']}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`);
      expect(types, sql).not.toContain('Seq Scan on note');
    }
  });

  it('indexes the referencing column of a relationship that comes with an evolution', async () => {
    const { app, serviceId } = await materialisedNotes(storage);
    // A relationship may only come with a new source entity (contract §4.11).
    const next = notesManifestV2();
    const entities = next['entities'] as JsonObject[];
    const person = entities[2] as JsonObject;
    entities[2] = { ...person, attributes: [...(person['attributes'] as JsonObject[]), { name: 'project_id', type: 'uuid' }] };
    next['relationships'] = [...(next['relationships'] as JsonObject[]), { name: 'person_project_fk', from: { entity: 'person', field: 'project_id' }, to: { entity: 'project', field: 'id' }, on_delete: 'restrict' }];
    await app.lifecycle.evolve({ serviceId, manifest: manifest(next), expectedServiceRevision: 3n, expectedSchemaVersion: 1n, idempotencyKey: 'e' });
    const namespace = (await app.lifecycle.admitData(serviceId)).service.storage?.namespace ?? '';
    expect(await foreignKeyIndexes(namespace)).toEqual([
      { table: `${namespace}.note`, column: 'project_id', indexed: true },
      { table: `${namespace}.person`, column: 'project_id', indexed: true },
    ]);
  });

  it('leaves an imported store with planner statistics for its records, branches, memberships and history', async () => {
    const app = appOver(storage, { principalId: PRINCIPAL });
    const serviceId = randomUUID();
    const locator: StorageLocator = { backend: 'postgresql', namespace: `svc_${serviceId.replaceAll('-', '')}` };
    const layout = app.lifecycle.layoutOf(manifest(notesManifest()));
    const note = layout.entities.find((entity) => entity.name === 'note');
    if (!note) throw new Error('no note entity');
    const branchId = randomUUID();
    await storage.data.stage(locator, PRINCIPAL, layout, async (tx) => {
      const records = Array.from({ length: 50 }, (_, i): StoredRecord => ({ id: randomUUID(), createdAt: 1_800_000_000_000_000n, updatedAt: 1_800_000_000_000_000n, createdVia: 'mcp', recordVersion: 1n, fields: { title: `note ${i}`, tags: ['a'] } }));
      await tx.insertRecords(note, records);
      await tx.insertBranches([{ id: branchId, slug: 'b', title: 'B', intent: 'I', branchType: null, parentId: null, status: 'active', retrievalSummary: null, createdAt: 1_800_000_000_000_000n, updatedAt: 1_800_000_000_000_000n, branchRevision: 1n }]);
      await tx.putMemberships(records.map((record) => ({ branchId, entityName: 'note', recordId: record.id, role: 'related' })), 1_800_000_000_000_000n);
      await tx.holdHistory(records.map((record) => ({ entityName: 'note', recordId: record.id, recordVersion: 1n, kind: 'create', before: null, after: record.fields, occurredAt: record.createdAt })));
      await tx.appendHeldHistory();
    });
    const rows = await queryRows<{ relname: string; analysed: boolean }>(
      fixture.db.url,
      `SELECT c.relname, c.reltuples >= 0 AS analysed FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r' AND c.relname IN ('note', '__aipcs_list_member', '__aipcs_memory_branch', '__aipcs_record_branch', '__aipcs_record_history') ORDER BY 1`,
      [locator.namespace],
    );
    expect(rows).toEqual(['__aipcs_list_member', '__aipcs_memory_branch', '__aipcs_record_branch', '__aipcs_record_history', 'note'].map((relname) => ({ relname, analysed: true })));
  });

  it('pages one record\'s history through its version index even when that record holds most of the events, all late', async () => {
    const { locator, ids } = await loadedNotes();
    const busy = ids[0] as string;
    const at = 1_800_000_000_000_000n;
    await storage.data.write(locator, PRINCIPAL, async (tx) => {
      for (const id of ids) await tx.appendHistory({ entityName: 'note', recordId: id, recordVersion: 1n, kind: 'create', before: null, after: { title: 't' }, occurredAt: at });
      // The busy record's later versions come after every other record's events.
      for (let version = 2n; version <= 3001n; version++) {
        await tx.appendHistory({ entityName: 'note', recordId: busy, recordVersion: version, kind: 'update', before: { title: 't' }, after: { title: 't' }, occurredAt: at });
      }
    });
    for (const analysed of [false, true]) {
      if (analysed) await queryRows(fixture.db.url, `ANALYZE "${locator.namespace}"."__aipcs_record_history"`);
      await onOneConnection(async (client) => {
        const session = new ExplainingSession(client);
        const tx = new PostgresDataTx(session, locator.namespace, PRINCIPAL);
        await tx.history('note', busy, null, 51);
        // The cursor of a later page: the sequence of the busy record's version 40.
        await tx.history('note', busy, BigInt(RECORDS) + 39n, 51);
        const context = `${analysed ? 'analysed' : 'not analysed'}: ${JSON.stringify(session.plans)}`;
        for (const plan of session.plans) {
          // The page itself walks the version index, without a sort; only the cursor's own event is looked up by sequence.
          const nodes = planNodes(plan);
          expect(plan['Node Type'], context).toBe('Limit');
          expect(nodes.filter((node) => node['Node Type'] === 'Index Scan' && node['Index Name'] === '__aipcs_record_history_version'), context).toHaveLength(1);
          expect(nodes.filter((node) => node['Node Type'].includes('Sort')), context).toEqual([]);
          const bySequence = nodes.filter((node) => node['Index Name'] === '__aipcs_record_history_pkey' || node['Index Name'] === '__aipcs_record_history_entity');
          expect(bySequence.map((node) => node['Plan Rows']), context).toEqual(plan === session.plans[0] ? [] : [1]);
        }
      });
    }
    // The pages themselves: versions in order from the cursor's; a sequence of another record's event bounds no version.
    const versions = (after: bigint | null) => storage.data.read(locator, PRINCIPAL, async (tx) => (await tx.history('note', busy, after, 51)).events.map((event) => event.recordVersion));
    const range = (from: bigint, count: number) => Array.from({ length: count }, (_, i) => from + BigInt(i));
    expect(await versions(null)).toEqual(range(1n, 51));
    expect(await versions(BigInt(RECORDS) + 39n)).toEqual(range(41n, 51));
    expect(await versions(2n)).toEqual(range(2n, 51));
  });

  it('walks a branch parent chain one lookup by id per level, and lists by status or type through their indexes, with and without statistics', async () => {
    const { locator } = await loadedNotes();
    const chain: string[] = [];
    await storage.data.write(locator, PRINCIPAL, async (tx) => {
      const at = 1_800_000_000_000_000n;
      for (let i = 0; i < 300; i++) {
        const id = randomUUID();
        await tx.insertBranch({ id, slug: `level-${i}`, title: 'B', intent: 'I', branchType: null, parentId: chain.at(-1) ?? null, status: 'active', retrievalSummary: null, createdAt: at, updatedAt: at, branchRevision: 1n });
        chain.push(id);
      }
    });
    // As a join, a branch table without statistics was scanned and hashed per level (8.8 s at 8000 levels).
    for (const analysed of [false, true]) {
      if (analysed) await queryRows(fixture.db.url, `ANALYZE "${locator.namespace}"."__aipcs_memory_branch"`);
      await onOneConnection(async (client) => {
        const session = new ExplainingFirstSession(client);
        await new PostgresDataTx(session, locator.namespace, PRINCIPAL).branchReachesByParents(chain.at(-1) as string, chain[0] as string);
        const nodes = planNodes(session.plans[0] as PlanNode);
        const onBranches = nodes.filter((node) => node['Relation Name'] === '__aipcs_memory_branch');
        expect(onBranches.length, JSON.stringify(session.plans)).toBeGreaterThan(0);
        for (const node of onBranches) expect([node['Node Type'], node['Index Name']], JSON.stringify(session.plans)).toEqual(['Index Scan', '__aipcs_memory_branch_pkey']);
        expect(nodes.map((node) => node['Node Type'])).not.toContain('Hash Join');
        // A page filtered by status or type walks that column's index (it walked every branch).
        const lists = new ExplainingSession(client);
        const tx = new PostgresDataTx(lists, locator.namespace, PRINCIPAL);
        await tx.listBranches({ status: 'archived', branchType: null, parentId: null, afterId: chain[0] as string, limit: 10 });
        await tx.listBranches({ status: null, branchType: 'epic', parentId: null, afterId: chain[0] as string, limit: 10 });
        expect(lists.plans.map((plan) => planNodes(plan).map((node) => [node['Node Type'], node['Index Name'] ?? null]))).toEqual([
          [['Limit', null], ['Index Scan', '__aipcs_memory_branch_status']],
          [['Limit', null], ['Index Scan', '__aipcs_memory_branch_type']],
        ]);
      });
    }
  });
});
