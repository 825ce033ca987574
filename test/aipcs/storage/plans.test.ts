// Store layout at scale, both backends: export pages memberships in
// (branch, entity, record, role) order straight off an index (the scope
// index has role second, so each page sorted the rest of its branch: a
// quadratic export for a large branch), and on SQLite an import, which
// stages branches with their keys deferred, finds a branch's children by an
// index that leads with parent_branch_id (each branch inserted scanned every
// branch). Plan shapes only (EXPLAIN), no timings.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../../src/aipcs/core/application.js';
import type { MembershipRow, StorageLocator, StoredBranch } from '../../../src/aipcs/core/ports.js';
import { PostgresDataTx } from '../../../src/aipcs/storage/postgres/service-data.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { SqliteDataTx } from '../../../src/aipcs/storage/sqlite/service-data.js';
import { appOver, manifest } from '../../conformance/harness.js';
import { notesManifest } from '../../support/manifests.js';
import type { ClusterInfo } from '../../support/postgres-cluster.js';
import { expectClustersUnderCi, postgresClusters, usePostgresStorage } from '../../support/postgres.js';
import { ExplainingSession, explainingSqlite, planNodes } from '../../support/query-plans.js';

const PRINCIPAL = 'agent-a';
const AT = 1_800_000_000_000_000n;

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function branch(id: string, slug: string, parentId: string | null): StoredBranch {
  return { id, slug, title: 'B', intent: 'I', branchType: null, parentId, status: 'active', retrievalSummary: null, createdAt: AT, updatedAt: AT, branchRevision: 1n };
}

/** A materialised notes store with two branches per principal: a large one (both roles interleaved) and a small one. */
async function loadMemberships(storage: StoragePorts): Promise<{ locator: StorageLocator; large: string; rows: MembershipRow[] }> {
  const app = appOver(storage, { principalId: PRINCIPAL });
  const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
  await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
  await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
  const locator = (await app.lifecycle.admitData(serviceId)).service.storage;
  if (!locator) throw new Error('no store');
  let large = '';
  const rows: MembershipRow[] = [];
  // A second principal's rows share the tables, as they would in a shared store.
  for (const principal of [PRINCIPAL, 'agent-b']) {
    const [big, small] = [randomUUID(), randomUUID()];
    if (principal === PRINCIPAL) large = big;
    await storage.data.write(locator, principal, async (tx) => {
      await tx.insertBranch(branch(big, 'big', null));
      await tx.insertBranch(branch(small, 'small', big));
      for (let i = 0; i < 1500; i++) {
        const [recordId, role] = [randomUUID(), i % 2 === 0 ? 'primary' : 'related'] as const;
        const branchId = i % 10 === 0 ? small : big;
        await tx.putMembership('note', recordId, branchId, role, AT);
        if (principal === PRINCIPAL) rows.push({ branchId, entityName: 'note', recordId, role });
      }
    });
  }
  const key = (row: MembershipRow) => [row.branchId, row.entityName, row.recordId, row.role].join('\u0000');
  rows.sort((a, b) => (key(a) < key(b) ? -1 : 1));
  return { locator, large, rows };
}

describe('SQLite', () => {
  async function sqliteStore(): Promise<{ db: Database.Database; large: string; rows: MembershipRow[] }> {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-plans-'));
    folders.push(base);
    const dataRoot = join(base, 'data');
    const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    let loaded: Awaited<ReturnType<typeof loadMemberships>>;
    try {
      loaded = await loadMemberships(storage);
    } finally {
      await storage.close();
    }
    const stores = join(dataRoot, 'service-stores');
    const file = readdirSync(stores).find((name) => name.endsWith('.sqlite'));
    const db = new Database(join(stores, file as string), { fileMustExist: true });
    db.defaultSafeIntegers(true);
    db.pragma('foreign_keys = ON');
    return { db, large: loaded.large, rows: loaded.rows };
  }

  it('pages memberships for export off an index in export order, without sorting the rest of a branch', async () => {
    const { db, large, rows } = await sqliteStore();
    try {
      const plans: string[][] = [];
      const tx = new SqliteDataTx(explainingSqlite(db, plans), PRINCIPAL);
      const middle = rows.findIndex((row) => row.branchId === large) + 400;
      const page = await tx.membershipPage(rows[middle] ?? null, 200);
      expect(page).toEqual(rows.slice(middle + 1, middle + 201));
      await tx.membershipPage(null, 200);
      for (const plan of plans) {
        expect(plan.join('\n')).toMatch(/^SEARCH __aipcs_record_branch USING COVERING INDEX \S+ \(principal_id=\?/);
        expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
      }
    } finally {
      db.close();
    }
  });

  it('finds the children of a branch staged with deferred keys through an index, not a scan of the branches', async () => {
    const { db, large } = await sqliteStore();
    try {
      const plans: string[][] = [];
      const tx = new SqliteDataTx(explainingSqlite(db, plans), PRINCIPAL);
      db.exec('BEGIN');
      // As an import stages: keys checked at COMMIT, so each branch inserted looks for rows already pointing at it.
      db.pragma('defer_foreign_keys = ON');
      await tx.insertBranch(branch(randomUUID(), 'child', randomUUID()));
      await tx.insertBranch(branch(randomUUID(), 'other', large));
      db.exec('ROLLBACK');
      expect(plans.length).toBe(2);
      for (const plan of plans) {
        expect(plan.some((line) => /^SEARCH __aipcs_memory_branch USING (COVERING )?INDEX \S+ \(parent_branch_id=\?/.test(line)), plan.join('\n')).toBe(true);
        expect(plan.filter((line) => line.startsWith('SCAN __aipcs_memory_branch')), plan.join('\n')).toEqual([]);
      }
    } finally {
      db.close();
    }
  });
});

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);

  it('pages memberships for export off an index in export order, with and without statistics', async () => {
    const storage = await fixture.open();
    const { locator, large, rows } = await loadMemberships(storage);
    const middle = rows.findIndex((row) => row.branchId === large) + 400;
    const page = await storage.data.scan(locator, PRINCIPAL, (tx) => tx.membershipPage(rows[middle] ?? null, 200));
    expect(page).toEqual(rows.slice(middle + 1, middle + 201));
    for (const analysed of [false, true]) {
      const pool = new pg.Pool({ connectionString: fixture.db.url, max: 1 });
      const client = await pool.connect();
      try {
        if (analysed) await client.query(`ANALYZE "${locator.namespace}"."__aipcs_record_branch"`);
        // As export's scan unit runs it: a store written moments ago has no statistics.
        await client.query('SET enable_sort = off');
        const session = new ExplainingSession(client);
        const tx = new PostgresDataTx(session, locator.namespace, PRINCIPAL);
        await tx.membershipPage(rows[middle] ?? null, 1000);
        await tx.membershipPage(null, 1000);
        for (const plan of session.plans) {
          const types = planNodes(plan).map((node) => `${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}`);
          const context = `${analysed ? 'analysed' : 'no statistics'}: ${types.join(', ')}`;
          expect(plan['Node Type'], context).toBe('Limit');
          expect(types.filter((type) => /Sort|Seq Scan/.test(type)), context).toEqual([]);
        }
      } finally {
        client.release();
        await pool.end();
      }
    }
  });
});
