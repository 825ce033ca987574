// Binds the storage conformance suites to the PostgreSQL adapter, once per
// cluster the global setup started (16, 17 and 18 in CI). Each cluster gets
// one database owned by a fresh non-superuser role; every test starts from it
// emptied of everything AIPCS creates, which is as fresh as a new database
// and much cheaper than CREATE DATABASE per test.

import { afterAll, describe } from 'vitest';
import pg from 'pg';
import { openPostgresStorage } from '../../src/aipcs/storage/postgres/index.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../support/postgres.js';
import type { ClusterInfo } from '../support/postgres-cluster.js';
import { branchesSuite } from './branches.suite.js';
import { discoverySuite } from './discovery.suite.js';
import { importReobserveSuite } from './import-reobserve.suite.js';
import type { StorageHarness } from './harness.js';
import { lifecycleSuite } from './lifecycle.suite.js';
import { maintenanceSuite } from './maintenance.suite.js';
import { modelSuite } from './model.suite.js';
import { operatorSuite, type OperatorStorageHarness } from './operator.suite.js';
import { recordsSuite } from './records.suite.js';

/** Drops every schema the adapter may have created (registry, service stores, probes). */
export async function emptyDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const schemas = await client.query<{ nspname: string }>(
      `SELECT nspname FROM pg_namespace WHERE nspname = 'aipcs_registry' OR nspname LIKE 'svc\\_%' OR nspname LIKE '\\_\\_aipcs\\_probe\\_%'`,
    );
    for (const { nspname } of schemas.rows) await client.query(`DROP SCHEMA "${nspname}" CASCADE`);
  } finally {
    await client.end();
  }
}

export function postgresHarness(cluster: ClusterInfo): StorageHarness & OperatorStorageHarness & { dispose(): Promise<void> } {
  let database: Promise<TestDatabase> | undefined;
  return {
    name: `postgresql ${cluster.version}`,
    async create() {
      database ??= createTestDatabase(cluster);
      const { url } = await database;
      await emptyDatabase(url);
      return {
        open: () => openPostgresStorage({ dsn: url, connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 30000 }),
        destroy: () => emptyDatabase(url),
        removeFenceRow: async (namespace: string) => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            return (await client.query(`DELETE FROM "${namespace}"."__aipcs_write_fence"`)).rowCount ?? 0;
          } finally {
            await client.end();
          }
        },
        setFenceGeneration: async (namespace: string, generation: bigint) => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            return (await client.query(`UPDATE "${namespace}"."__aipcs_write_fence" SET generation = $1`, [generation.toString()])).rowCount ?? 0;
          } finally {
            await client.end();
          }
        },
      };
    },
    async dispose() {
      if (database) await (await database).drop();
    },
  };
}

expectClustersUnderCi();

for (const cluster of postgresClusters()) {
  describe(`PostgreSQL ${cluster.version}`, () => {
    const harness = postgresHarness(cluster);
    afterAll(() => harness.dispose());
    lifecycleSuite(harness);
    recordsSuite(harness);
    branchesSuite(harness);
    discoverySuite(harness);
    maintenanceSuite(harness);
    modelSuite(harness, { numRuns: 4 });
    operatorSuite(harness);
    importReobserveSuite(harness);
  });
}
