// Test helpers over the clusters started by the global setup: each caller
// gets its own fresh database owned by a fresh non-superuser role, which is
// what an operator provisions for AIPCS.

import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, expect, inject, it } from 'vitest';
import pg from 'pg';
import type { OperatorStoragePorts } from '../../src/aipcs/core/application.js';
import { openPostgresStorage, type PostgresStorageOptions } from '../../src/aipcs/storage/postgres/index.js';
import type { ClusterInfo } from './postgres-cluster.js';

/** The adapter tests' timeouts: a wait that outlasts them fails the test rather than hanging it. */
export const timeouts: Pick<PostgresStorageOptions, 'connectTimeoutSeconds' | 'lockTimeoutMs' | 'statementTimeoutMs'> = Object.freeze({
  connectTimeoutSeconds: 5,
  lockTimeoutMs: 2000,
  statementTimeoutMs: 10000,
});

export function postgresClusters(): ClusterInfo[] {
  return inject('postgresClusters');
}

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

/** Runs one statement on a fresh client of `url` and returns its rows. */
export async function queryRows<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

export async function createTestDatabase(cluster: ClusterInfo): Promise<TestDatabase> {
  const suffix = randomBytes(6).toString('hex');
  const name = `aipcs_test_${suffix}`;
  const role = `aipcs_role_${suffix}`;
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE`);
    await admin.query(`CREATE DATABASE ${name} OWNER ${role} TEMPLATE template0 ENCODING 'UTF8'`);
    await admin.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    // The adapter needs CONNECT and CREATE only: no temporary tables, so a role granted just those works.
    await admin.query(`REVOKE TEMPORARY ON DATABASE ${name} FROM ${role}`);
  } finally {
    await admin.end();
  }
  const url = cluster.adminUrl.replace('aipcs_admin@', `${role}@`).replace(/\/postgres$/, `/${name}`);
  return {
    url,
    name,
    async drop() {
      const client = new pg.Client({ connectionString: cluster.adminUrl });
      await client.connect();
      try {
        // Connections that are still closing would be killed by FORCE, and a
        // pg client killed mid-close raises an unhandled error: wait first.
        for (let attempt = 0; attempt < 50; attempt++) {
          const open = await client.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1', [name]);
          if (open.rows[0]?.n === '0') break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await client.query(`DROP ROLE IF EXISTS ${role}`);
      } finally {
        await client.end();
      }
    },
  };
}

export interface PostgresStorageFixture {
  /** The current test's database. */
  readonly db: TestDatabase;
  /** Storage options on it, as its owning role, with `timeouts`. */
  readonly options: PostgresStorageOptions;
  /** The cluster's superuser, connected to the current test's database. */
  readonly adminUrl: string;
  /** Storage closed after the test, before the database is dropped: a test that closes one itself takes it out. */
  readonly opened: OperatorStoragePorts[];
  /** Opens storage on `options` with `extra` over them, closed after the test. */
  open(extra?: Partial<PostgresStorageOptions>): Promise<OperatorStoragePorts>;
}

/**
 * Call inside a describe: gives each of its tests a fresh database and, after
 * the test, closes the storage opened through the fixture and then drops the
 * database (dropping first would kill connections still in use).
 */
export function usePostgresStorage(cluster: ClusterInfo): PostgresStorageFixture {
  let db: TestDatabase | undefined;
  const opened: OperatorStoragePorts[] = [];
  const current = (): TestDatabase => {
    if (!db) throw new Error('the PostgreSQL storage fixture is used outside a test');
    return db;
  };
  beforeEach(async () => {
    db = await createTestDatabase(cluster);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((storage) => storage.close()));
    const dropped = db;
    db = undefined;
    await dropped?.drop();
  });
  const fixture: PostgresStorageFixture = {
    get db() {
      return current();
    },
    get options() {
      return { dsn: current().url, ...timeouts };
    },
    get adminUrl() {
      return cluster.adminUrl.replace(/\/postgres$/, `/${current().name}`);
    },
    opened,
    async open(extra = {}) {
      const storage = await openPostgresStorage({ ...fixture.options, ...extra });
      opened.push(storage);
      return storage;
    },
  };
  return fixture;
}

/**
 * Declares a test that needs the started clusters: under CI=true it fails
 * when none was started; locally (AIPCS_TEST_PG_VERSIONS=none) it passes and
 * keeps a file whose other tests are all per-cluster from being empty.
 */
export function expectClustersUnderCi(): void {
  it('has a PostgreSQL cluster to run against (required when CI=true)', () => {
    if (process.env['CI'] === 'true') expect(postgresClusters().length).toBeGreaterThan(0);
    else expect(postgresClusters().length).toBeGreaterThanOrEqual(0);
  });
}

/**
 * Runs `blocked` while another connection holds the service store's advisory
 * lock (in a transaction it then rolls back): what a unit meets when another
 * process is writing to the store.
 */
export async function whileStoreLocked(url: string, namespace: string, blocked: () => Promise<void>, clientOptions: pg.ClientConfig = {}): Promise<void> {
  const holder = new pg.Client({ connectionString: url, ...clientOptions });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`aipcs:service_store:${namespace}`]);
    await blocked();
    await holder.query('ROLLBACK');
  } finally {
    await holder.end();
  }
}
