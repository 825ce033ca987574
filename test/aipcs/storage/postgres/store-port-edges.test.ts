// Edges of the PostgreSQL store port that the services do not reach on
// their own (mutation review N):
// - Observing a store whose tables another session holds past lock_timeout
//   is contention, not loss: the port answers `busy` (retryable, as a SQLite
//   store's busy timeout is), never the `unavailable` state that the
//   lifecycle would take for a store it cannot reach; once the lock is gone
//   the same store observes as ready (SS-observe-busy).
// - Materialising over a `svc_<hex>` schema that already holds something
//   else is refused as incompatible before any DDL, and leaves that schema
//   as it was (SS-mat-differs).
// - Staging splits one batch of rows into as many INSERTs as the protocol's
//   parameter limit needs and writes every row once, also where one
//   statement's share ends (mutation review AO).
// - A deleted record leaves no rows in the list-member side table: searches
//   and facets never show such rows, so only the table itself can tell
//   (mutation review AW's delete-no-members).

import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Application, OperatorStoragePorts } from '../../../../src/aipcs/core/application.js';
import { namespaceOf } from '../../../../src/aipcs/core/lifecycle.js';
import type { StoreLayout, StoredBranch } from '../../../../src/aipcs/core/ports.js';
import { openPostgresStorage } from '../../../../src/aipcs/storage/postgres/index.js';
import { manifest } from '../../../conformance/harness.js';
import { notesManifest } from '../../../support/manifests.js';
import { testOperator } from '../../../support/operator.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../../support/postgres.js';

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s store port', (_version, cluster) => {
  let db: TestDatabase | undefined;
  let storage: OperatorStoragePorts | undefined;
  let other: pg.Client | undefined;

  afterEach(async () => {
    await other?.query('ROLLBACK').catch(() => undefined);
    await other?.end();
    await storage?.close();
    await db?.drop();
    [db, storage, other] = [undefined, undefined, undefined];
  });

  /** A designed notes service (materialised when asked), its store locator and layout, and a second session of the same role. */
  async function notesService(materialise: boolean): Promise<{ storage: OperatorStoragePorts; namespace: string; locator: { backend: 'postgresql'; namespace: string }; layout: StoreLayout; other: pg.Client; app: Application; serviceId: string }> {
    db = await createTestDatabase(cluster);
    const opened = await openPostgresStorage({ dsn: db.url, connectTimeoutSeconds: 5, lockTimeoutMs: 300, statementTimeoutMs: 10_000 });
    storage = opened;
    const app = testOperator(opened).application;
    const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
    await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
    if (materialise) await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    const session = new pg.Client({ connectionString: db.url });
    other = session;
    session.on('error', () => undefined);
    await session.connect();
    const namespace = namespaceOf(serviceId);
    return { storage: opened, namespace, locator: { backend: 'postgresql', namespace }, layout: app.lifecycle.layoutOf(manifest(notesManifest())), other: session, app, serviceId };
  }

  it('observes a store as busy while another session holds one of its tables, and as ready after', async () => {
    const { storage, namespace, locator, layout, other } = await notesService(true);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
    await other.query('BEGIN');
    await other.query(`LOCK TABLE "${namespace}"."__aipcs_service_store_meta" IN ACCESS EXCLUSIVE MODE`);
    await expect(storage.stores.observe(locator, layout)).rejects.toMatchObject({ kind: 'busy' });
    await other.query('COMMIT');
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
  });

  it('refuses to materialise over a schema that holds something else, and changes nothing in it', async () => {
    const { storage, namespace, locator, layout, other } = await notesService(false);
    await other.query(`CREATE SCHEMA "${namespace}"`);
    await other.query(`CREATE TABLE "${namespace}".kept (x integer)`);
    const tables = async (): Promise<string[]> => (await other.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [namespace])).rows.map((row) => row.name);
    await expect(storage.stores.materialise(locator, layout)).rejects.toMatchObject({ kind: 'incompatible' });
    expect(await tables()).toEqual(['kept']);
  });

  it('stages a batch of branches larger than one statement can bind, every row once', async () => {
    const { storage, namespace, locator, layout, other } = await notesService(false);
    // A branch row binds 12 values: 6001 rows need two statements below 65535 parameters, the second one short.
    const at = 1_800_000_000_000_000n;
    const branches = Array.from({ length: 6001 }, (_, i): StoredBranch => {
      const id = `30000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
      return { id, slug: `b-${i}`, title: `B ${i}`, intent: 'I', branchType: null, parentId: null, status: 'active', retrievalSummary: null, createdAt: at, updatedAt: at, branchRevision: 1n };
    });
    await storage.data.stage(locator, 'agent-a', layout, (tx) => tx.insertBranches(branches));
    const stored = await other.query<{ id: string }>(`SELECT "id" FROM "${namespace}"."__aipcs_memory_branch" ORDER BY "id"`);
    expect(stored.rows.map((row) => row.id)).toEqual(branches.map((branch) => branch.id));
  });

  it('removes a deleted record\'s list members, keeping those of the others', async () => {
    const { namespace, other, app, serviceId } = await notesService(true);
    const create = async (title: string) =>
      ((await app.records.create({ serviceId, entityName: 'note', record: { title, tags: ['a', 'b'], aliases: ['x'] }, idempotencyKey: title }))['record'] as { id: string })['id'];
    const gone = await create('gone');
    const kept = await create('kept');
    await app.records.delete({ serviceId, entityName: 'note', recordId: gone, expectedRecordVersion: 1n, idempotencyKey: 'delete' });
    const rows = await other.query<{ record_id: string; n: string }>(`SELECT "record_id", count(*)::text AS n FROM "${namespace}"."__aipcs_list_member" GROUP BY "record_id"`);
    expect(rows.rows).toEqual([{ record_id: kept, n: '3' }]);
  });
});
