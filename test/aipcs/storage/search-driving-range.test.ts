// Record search with several filters, both backends: the smallest of the
// ranges an index yields in id order (a member's rows, a branch scope's
// memberships, an equality's index) drives the page. A common first filter
// used to drive always, walking most of the entity to find the few rows a
// rare second filter allows. Plan shapes (EXPLAIN) and results; no timings.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../../src/aipcs/core/application.js';
import type { EntityLayout, RecordQuery, StorageLocator, StoredRecord } from '../../../src/aipcs/core/ports.js';
import { PostgresDataTx } from '../../../src/aipcs/storage/postgres/service-data.js';
import { equalityIndexName } from '../../../src/aipcs/storage/postgres/service-store.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { SqliteDataTx } from '../../../src/aipcs/storage/sqlite/service-data.js';
import { materialisedNotes } from '../../conformance/harness.js';
import type { ClusterInfo } from '../../support/postgres-cluster.js';
import { expectClustersUnderCi, postgresClusters, usePostgresStorage } from '../../support/postgres.js';
import { ExplainingSession, explainingSqlite, planNodes } from '../../support/query-plans.js';

const PRINCIPAL = 'agent-a';
const AT = 1_800_000_000_000_000n;
const RECORDS = 2000;

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

interface Loaded {
  readonly locator: StorageLocator;
  readonly layout: EntityLayout;
  readonly branchId: string;
  readonly records: StoredRecord[];
}

/** Notes where every record is tagged "common", has status "draft", priority 1 and is in one branch; ten each are "rare", "complete" or priority 7. */
async function loadNotes(storage: StoragePorts): Promise<Loaded> {
  // materialisedNotes acts as agent-a, the PRINCIPAL here.
  const { app, serviceId } = await materialisedNotes(storage);
  const admission = await app.lifecycle.admitData(serviceId);
  const layout = admission.layout.entities.find((entity) => entity.name === 'note');
  const locator = admission.service.storage;
  if (!layout || !locator) throw new Error('no materialised note entity');
  const branchId = randomUUID();
  const records: StoredRecord[] = [];
  await storage.data.write(locator, PRINCIPAL, async (tx) => {
    await tx.insertBranch({ id: branchId, slug: 'all', title: 'All', intent: 'Every note.', branchType: null, parentId: null, status: 'active', retrievalSummary: null, createdAt: AT, updatedAt: AT, branchRevision: 1n });
    for (let i = 0; i < RECORDS; i++) {
      const record: StoredRecord = {
        id: randomUUID(),
        createdAt: AT,
        updatedAt: AT,
        createdVia: 'mcp',
        recordVersion: 1n,
        fields: {
          title: `note ${i}`,
          status: i % 200 === 100 ? 'complete' : 'draft',
          priority: i % 200 === 50 ? 7n : 1n,
          tags: ['common', i % 200 === 0 ? 'rare' : `t${i % 7}`],
        },
      };
      records.push(record);
      await tx.insertRecord(layout, record);
      await tx.putMembership('note', record.id, branchId, 'related', AT);
    }
  });
  records.sort((a, b) => (a.id < b.id ? -1 : 1));
  return { locator, layout, branchId, records };
}

interface Case {
  readonly name: string;
  readonly query: (loaded: Loaded) => RecordQuery;
  readonly matches: (record: StoredRecord) => boolean;
  /** What must drive: an equality's field, or the member table, or the branch memberships. */
  readonly driver: Driver | ((loaded: Loaded) => Driver);
}
type Driver = { readonly equality: string } | 'member';

const driverOf = (testCase: Case, loaded: Loaded): Driver => (typeof testCase.driver === 'function' ? testCase.driver(loaded) : testCase.driver);

/**
 * A cursor where "complete" and priority 7 (ten records each, never both)
 * have as different counts past it as any: the one with fewer drives, the
 * other having fewer before it.
 */
function splittingCursor(loaded: Loaded): { readonly afterId: string; readonly driver: Driver } {
  let best = { afterId: '', difference: 0, driver: 'member' as Driver };
  for (const [i, cursor] of loaded.records.entries()) {
    const past = loaded.records.slice(i + 1);
    const complete = past.filter((record) => record.fields['status'] === 'complete').length;
    const seven = past.filter((record) => record.fields['priority'] === 7n).length;
    if (Math.abs(complete - seven) > best.difference) best = { afterId: cursor.id, difference: Math.abs(complete - seven), driver: { equality: complete < seven ? 'status' : 'priority' } };
  }
  return best;
}

const page = (filters: RecordQuery['filters'], branchId: string | null = null): RecordQuery => ({
  filters,
  branch: branchId === null ? null : { branchId, role: 'related' },
  afterId: null,
  limit: 50,
});
const tags = (record: StoredRecord) => record.fields['tags'] as string[];

const cases: Case[] = [
  {
    name: 'a common member and a rare equality',
    query: () => page([{ kind: 'member', field: 'tags', value: 'common' }, { kind: 'equals', field: 'status', value: 'complete' }]),
    matches: (record) => record.fields['status'] === 'complete',
    driver: { equality: 'status' },
  },
  {
    name: 'a common equality and a rare one',
    query: () => page([{ kind: 'equals', field: 'status', value: 'draft' }, { kind: 'equals', field: 'priority', value: 7n }]),
    matches: (record) => record.fields['priority'] === 7n,
    driver: { equality: 'priority' },
  },
  {
    name: 'a rare member and a common equality',
    query: () => page([{ kind: 'equals', field: 'status', value: 'draft' }, { kind: 'member', field: 'tags', value: 'rare' }]),
    matches: (record) => record.fields['status'] === 'draft' && tags(record).includes('rare'),
    driver: 'member',
  },
  {
    name: 'a rare equality and a common one',
    query: () => page([{ kind: 'equals', field: 'priority', value: 7n }, { kind: 'equals', field: 'status', value: 'draft' }]),
    matches: (record) => record.fields['priority'] === 7n,
    driver: { equality: 'priority' },
  },
  {
    name: 'two equalities as rare as each other (the first drives)',
    query: () => page([{ kind: 'equals', field: 'status', value: 'complete' }, { kind: 'equals', field: 'priority', value: 7n }]),
    matches: () => false,
    driver: { equality: 'status' },
  },
  {
    name: 'two rare equalities past a cursor (the fewer past it drives)',
    query: (loaded) => ({ ...page([{ kind: 'equals', field: 'status', value: 'complete' }, { kind: 'equals', field: 'priority', value: 7n }]), afterId: splittingCursor(loaded).afterId }),
    matches: () => false,
    driver: (loaded) => splittingCursor(loaded).driver,
  },
  {
    name: 'a whole-entity branch scope and a rare equality',
    query: (loaded) => page([{ kind: 'equals', field: 'priority', value: 7n }], loaded.branchId),
    matches: (record) => record.fields['priority'] === 7n,
    driver: { equality: 'priority' },
  },
  {
    name: 'a whole-entity branch scope and a rare member',
    query: (loaded) => page([{ kind: 'member', field: 'tags', value: 'rare' }], loaded.branchId),
    matches: (record) => tags(record).includes('rare'),
    driver: 'member',
  },
];

function expected(loaded: Loaded, testCase: Case): string[] {
  return loaded.records.filter(testCase.matches).map((record) => record.id);
}

describe('SQLite', () => {
  it('drives a search with several filters from its smallest range', async () => {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-driving-range-'));
    folders.push(base);
    const dataRoot = join(base, 'data');
    const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    let loaded: Loaded;
    try {
      loaded = await loadNotes(storage);
    } finally {
      await storage.close();
    }
    const stores = join(dataRoot, 'service-stores');
    const file = readdirSync(stores).find((name) => name.endsWith('.sqlite'));
    const db = new Database(join(stores, file as string), { fileMustExist: true });
    db.defaultSafeIntegers(true);
    try {
      for (const testCase of cases) {
        const plans: string[][] = [];
        const tx = new SqliteDataTx(explainingSqlite(db, plans, ['all', 'get']), PRINCIPAL);
        const found = await tx.queryRecords(loaded.layout, testCase.query(loaded));
        expect(found.map((record) => record.id), testCase.name).toEqual(expected(loaded, testCase));
        // The page's own statement runs last, after the probes; its first plan line is the outer loop.
        const outer = plans.at(-1)?.[0] ?? '';
        const expectedDriver = driverOf(testCase, loaded);
        const driver = expectedDriver === 'member' ? /^SEARCH d USING (PRIMARY KEY|(COVERING )?INDEX \S+) \(entity_name=\? AND field_name=\? AND member=\?/ : new RegExp(`^SEARCH [dr] USING (COVERING )?INDEX __aipcs_eq_note\\.${expectedDriver.equality} \\(`);
        expect(outer, `${testCase.name}: ${plans.at(-1)?.join(' | ')}`).toMatch(driver);
      }
    } finally {
      db.close();
    }
  });
});

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);

  it('drives a search with several filters from its smallest range, with and without statistics', async () => {
    const storage = await fixture.open();
    const loaded = await loadNotes(storage);
    for (const testCase of cases) {
      const found = await storage.data.read(loaded.locator, PRINCIPAL, (tx) => tx.queryRecords(loaded.layout, testCase.query(loaded)));
      expect(found.map((record) => record.id), testCase.name).toEqual(expected(loaded, testCase));
    }
    for (const analysed of [false, true]) {
      const pool = new pg.Pool({ connectionString: fixture.db.url, max: 1 });
      const client = await pool.connect();
      try {
        if (analysed) await client.query(`ANALYZE "${loaded.locator.namespace}"."note", "${loaded.locator.namespace}"."__aipcs_list_member", "${loaded.locator.namespace}"."__aipcs_record_branch"`);
        const session = new ExplainingSession(client);
        const tx = new PostgresDataTx(session, loaded.locator.namespace, PRINCIPAL);
        for (const testCase of cases) {
          await tx.queryRecords(loaded.layout, testCase.query(loaded));
          const plan = session.plans.at(-1);
          if (!plan) throw new Error('no plan');
          // Limit → Nested Loop → [the driving range, the record lookup].
          const driver = planNodes(plan).find((node) => node['Node Type'] === 'Nested Loop')?.Plans?.[0];
          const context = `${testCase.name}${analysed ? ' (analysed)' : ''}: ${planNodes(plan)
            .map((node) => `${node['Node Type']} ${node['Relation Name'] ?? ''} ${node['Index Name'] ?? ''}`)
            .join(' | ')}`;
          const driving = driver ? planNodes(driver) : [];
          const expectedDriver = driverOf(testCase, loaded);
          if (expectedDriver === 'member') expect(driving.some((node) => node['Relation Name'] === '__aipcs_list_member'), context).toBe(true);
          else expect(driving.some((node) => node['Index Name'] === equalityIndexName('note', expectedDriver.equality)), context).toBe(true);
        }
      } finally {
        client.release();
        await pool.end();
      }
    }
  });
});
