// Proves the test harness: every PostgreSQL cluster the global setup started
// accepts a connection from a fresh non-superuser role and runs a query.

import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, postgresClusters } from '../support/postgres.js';

const clusters = postgresClusters();

describe('PostgreSQL test harness', () => {
  it('starts at least one cluster when CI=true', () => {
    if (process.env['CI'] === 'true') expect(clusters.length).toBeGreaterThan(0);
  });

  describe.each(clusters.map((c) => [c.version, c] as const))('PostgreSQL %s', (_version, cluster) => {
    it('runs a query as an unprivileged role in a fresh database', async () => {
      const db = await createTestDatabase(cluster);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const version = await client.query<{ server_version_num: string }>('SHOW server_version_num');
        const major = Math.floor(Number(version.rows[0]?.server_version_num) / 10000);
        expect(String(major)).toBe(cluster.version);
        const superuser = await client.query<{ rolsuper: boolean }>('SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
        expect(superuser.rows[0]?.rolsuper).toBe(false);
        await client.query('CREATE SCHEMA probe AUTHORIZATION CURRENT_USER');
        const sum = await client.query<{ total: number }>('SELECT 40 + 2 AS total');
        expect(sum.rows[0]?.total).toBe(42);
        process.stderr.write(`[harness] ran queries on PostgreSQL ${cluster.serverVersion}\n`);
      } finally {
        await client.end();
        await db.drop();
      }
    });
  });
});
