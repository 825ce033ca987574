// Storage held by another process past the busy or lock timeout is
// contention: the admin commands that need the registry report it as the
// retryable storage_busy (exit 4), and doctor a locked PostgreSQL entity
// table as a storage_busy warning (ops spec §1.4, §1.8, §3.2.3, §3.3.1), and
// they work again as soon as the lock is gone. (status shows a busy registry
// as unavailable with issue storage_busy: test/aipcs/cli/admin-read.test.ts.)

import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startAipcs } from '../../support/aipcs-client.js';
import { aipcs, freshDataRoot, materialisedService, materialisedServiceThenStop, rootArgs } from '../../support/aipcs-admin.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../support/postgres.js';

const ENV_NAME = 'AIPCS_TEST_POSTGRES_DSN';

describe('admin commands under a SQLite registry held exclusively', () => {
  it('are storage_busy, retryable, exit 4, and answer once the lock is gone', async () => {
    const root = freshDataRoot();
    const serviceId = await materialisedServiceThenStop(root, 'locked');
    const run = (command: string[]) => aipcs([...command, ...rootArgs(root), '--sqlite-busy-timeout-ms', '50']);
    // In WAL mode only an exclusive locking mode keeps readers out.
    const holder = new Database(join(root, 'registry.sqlite'));
    holder.pragma('locking_mode = EXCLUSIVE');
    holder.exec('BEGIN EXCLUSIVE');
    try {
      for (const command of [['service', 'list'], ['service', 'inspect', serviceId], ['maintenance', 'scan', '--service', serviceId]]) {
        const outcome = run(command);
        expect([outcome.status, outcome.envelope.error?.code, outcome.envelope.error?.retryable]).toEqual([4, 'storage_busy', true]);
      }
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect(run(['service', 'inspect', serviceId]).status).toBe(0);
  });
});

describe('operator commands under a SQLite registry write lock held by another connection', () => {
  it('read the registry, then find its write busy: storage_busy, retryable, exit 4, and nothing changed', async () => {
    const root = freshDataRoot();
    const serviceId = await materialisedServiceThenStop(root, 'write_locked');
    const run = (command: string[]) => aipcs([...command, ...rootArgs(root), '--sqlite-busy-timeout-ms', '50']);
    // A write transaction of another connection: WAL readers go on, writers wait and time out.
    const holder = new Database(join(root, 'registry.sqlite'));
    holder.exec('BEGIN IMMEDIATE');
    try {
      expect(run(['service', 'inspect', serviceId]).status).toBe(0);
      const outcome = run(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-0000000000b1']);
      expect([outcome.status, outcome.envelope.error?.code, outcome.envelope.error?.retryable]).toEqual([4, 'storage_busy', true]);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect(run(['service', 'inspect', serviceId]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 3 });
  });
});

describe('admin commands under a PostgreSQL table lock', () => {
  expectClustersUnderCi();

  describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s', (_version, cluster) => {
    let db: TestDatabase;
    let serviceId: string;
    let namespace: string;
    const args = (): string[] => ['--profile', 'postgresql', '--principal-id', 'local-agent', '--postgres-dsn-env', ENV_NAME, '--postgres-lock-timeout-ms', '200', '--postgres-statement-timeout-ms', '1000'];
    const run = (command: string[]) => aipcs([...command, ...args()], { env: { [ENV_NAME]: db.url } });

    beforeAll(async () => {
      db = await createTestDatabase(cluster);
      const server = await startAipcs(args(), { [ENV_NAME]: db.url });
      try {
        serviceId = await materialisedService(server, 'locked');
      } finally {
        await server.close();
      }
      namespace = (run(['service', 'inspect', serviceId]).envelope.result?.['storage'] as { namespace: string }).namespace;
    });

    afterAll(async () => {
      await db.drop();
    });

    /** Runs `body` while another session holds `table` in ACCESS EXCLUSIVE mode. */
    async function whileLocked<T>(table: string, body: () => T): Promise<T> {
      const holder = new pg.Client({ connectionString: cluster.adminUrl.replace(/\/postgres$/, `/${db.name}`) });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
        return body();
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
      }
    }

    it('a locked registry makes the commands that need it storage_busy, retryable, exit 4', async () => {
      const outcomes = await whileLocked('aipcs_registry.aipcs_registry_service', () => [run(['service', 'list']), run(['maintenance', 'scan', '--service', serviceId])]);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe(4);
        expect(outcome.envelope.error).toMatchObject({ code: 'storage_busy', retryable: true });
      }
      expect(run(['service', 'list']).status).toBe(0);
    });

    it('a locked entity table is a storage_busy warning of doctor, not a failure', async () => {
      const report = await whileLocked(`"${namespace}"."note"`, () => run(['doctor', '--service', serviceId]));
      expect(report.status).toBe(0);
      const checks = report.envelope.result?.['checks'] as { check_id: string; status: string; issue_code: string | null }[];
      expect(checks.find((check) => check.check_id === 'domain_schema')).toEqual({ check_id: 'domain_schema', status: 'warning', issue_code: 'storage_busy' });
      expect(report.envelope.result?.['overall']).toBe('warning');
      expect(run(['doctor', '--service', serviceId]).envelope.result?.['overall']).toBe('pass');
    });
  });
});
