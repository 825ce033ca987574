// Observing a PostgreSQL store whose tables another session holds past
// lock_timeout is contention, not loss: the port answers `busy` (retryable,
// as a SQLite store's busy timeout is), never the `unavailable` state that
// the lifecycle would take for a store it cannot reach; once the lock is
// gone the same store observes as ready. (mutation review N: SS-observe-busy)

import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { OperatorStoragePorts } from '../../../../src/aipcs/core/application.js';
import { namespaceOf } from '../../../../src/aipcs/core/lifecycle.js';
import { openPostgresStorage } from '../../../../src/aipcs/storage/postgres/index.js';
import { manifest } from '../../../conformance/harness.js';
import { notesManifest } from '../../../support/manifests.js';
import { testOperator } from '../../../support/operator.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../../support/postgres.js';

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s: observing a locked store', (_version, cluster) => {
  let db: TestDatabase | undefined;
  let storage: OperatorStoragePorts | undefined;
  let holder: pg.Client | undefined;

  afterEach(async () => {
    await holder?.query('ROLLBACK').catch(() => undefined);
    await holder?.end();
    await storage?.close();
    await db?.drop();
    [db, storage, holder] = [undefined, undefined, undefined];
  });

  it('is busy while another session holds a store table, and ready after', async () => {
    db = await createTestDatabase(cluster);
    storage = await openPostgresStorage({ dsn: db.url, connectTimeoutSeconds: 5, lockTimeoutMs: 300, statementTimeoutMs: 10_000 });
    const app = testOperator(storage).application;
    const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
    await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
    await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    const namespace = namespaceOf(serviceId);
    const locator = { backend: 'postgresql', namespace } as const;
    const layout = app.lifecycle.layoutOf(manifest(notesManifest()));
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });

    holder = new pg.Client({ connectionString: db.url });
    holder.on('error', () => undefined);
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE "${namespace}"."__aipcs_service_store_meta" IN ACCESS EXCLUSIVE MODE`);
    await expect(storage.stores.observe(locator, layout)).rejects.toMatchObject({ kind: 'busy' });
    await holder.query('COMMIT');
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
  });
});
