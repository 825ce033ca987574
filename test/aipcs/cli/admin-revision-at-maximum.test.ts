// A service imported at the top of a 64-bit counter: its service_revision, or
// its store's write-fence generation, at 2^63-1 (contract §10 bounds table,
// ops spec §3.2.6). A lifecycle change would have to move the counter past
// it; before, resume and restore admitted a claim, overflowed, answered
// internal_error (6) and left the operation pending for good. Now they are
// refused before anything is admitted (D40): unsupported_transition (3),
// nothing pending, and the same answer for a retry under the same id. On
// SQLite and on each started PostgreSQL cluster.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/common/json.js';
import type { BundleService } from '../../../src/aipcs/portable/index.js';
import { encodeHeader, encodeService } from '../../../src/aipcs/portable/payload-codec.js';
import { aipcs, freshDataRoot, rootArgs } from '../../support/aipcs-admin.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, queryRows, type TestDatabase } from '../../support/postgres.js';
import { HEADER, materialisedService, rawBundle, t } from '../portable/fixtures.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
const MAX = 9223372036854775807n;
const DSN_ENV = 'AIPCS_TEST_MAXIMUM_DSN';

/** One fresh registry on a backend: how to run the CLI on it and read what it holds. */
interface Root {
  run(argv: string[]): ReturnType<typeof aipcs>;
  /** The claims and services of the registry, for "nothing was written" checks. */
  rows(): Promise<unknown>;
  /** The write fence of a service's store. */
  fence(serviceId: string): Promise<unknown>;
}

interface Backend {
  readonly name: string;
  root(): Promise<Root>;
}

const sqlite: Backend = {
  name: 'sqlite',
  async root() {
    const dataRoot = freshDataRoot();
    const args = rootArgs(dataRoot);
    const open = (path: string) => {
      const db = new Database(path, { readonly: true });
      db.defaultSafeIntegers(true);
      return db;
    };
    return {
      run: (argv) => aipcs([...argv, ...args]),
      async rows() {
        const db = open(join(dataRoot, 'registry.sqlite'));
        try {
          return ['aipcs_registry_claim', 'aipcs_registry_service'].map((table) => db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all());
        } finally {
          db.close();
        }
      },
      async fence(serviceId) {
        const db = open(join(dataRoot, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`));
        try {
          return db.prepare('SELECT generation, state FROM __aipcs_write_fence').get();
        } finally {
          db.close();
        }
      },
    };
  },
};

function postgres(cluster: ReturnType<typeof postgresClusters>[number], databases: TestDatabase[]): Backend {
  return {
    name: `postgresql ${cluster.version}`,
    async root() {
      const database = await createTestDatabase(cluster);
      databases.push(database);
      const args = ['--profile', 'postgresql', '--principal-id', 'local-agent', '--postgres-dsn-env', DSN_ENV, '--postgres-connect-timeout-seconds', '5'];
      return {
        run: (argv) => aipcs([...argv, ...args], { env: { [DSN_ENV]: database.url } }),
        rows: async () =>
          Promise.all(['aipcs_registry_claim', 'aipcs_registry_service'].map((table) => queryRows(database.url, `SELECT * FROM aipcs_registry.${table} ORDER BY 1, 2`))),
        fence: async (serviceId) => {
          const [row] = await queryRows<{ generation: string; state: string }>(database.url, `SELECT generation::text, state FROM svc_${serviceId.replaceAll('-', '')}.__aipcs_write_fence`);
          return row === undefined ? undefined : { generation: BigInt(row.generation), state: row.state };
        },
      };
    },
  };
}

/** A fresh registry on `backend` into which `service` (no records) was imported. */
async function imported(backend: Backend, service: BundleService): Promise<Root> {
  const root = await backend.root();
  expect(root.run(['serve']).status).toBe(0);
  const input = join(mkdtempSync(join(tmpdir(), 'aipcs-maximum-')), 'service.jsonl');
  const frames: [string, JsonObject][] = [['header', encodeHeader(HEADER)], ['service', encodeService(service)]];
  writeFileSync(input, rawBundle(frames));
  const run = root.run(['import', '--input', input, '--operation-id', OP(1), '--yes']);
  expect(run.status, run.stderr).toBe(0);
  return root;
}

/** Runs `command` twice under one operation id: both refused alike, nothing written, the service still clear. */
async function expectRefusedTwice(root: Root, serviceId: string, command: string[]): Promise<void> {
  const before = await root.rows();
  const first = root.run([...command, '--operation-id', OP(2)]);
  // Before: internal_error (6) or operation_uncertain (4), the operation pending for good.
  expect([first.status, first.envelope.error?.code, first.envelope.error?.retryable]).toEqual([3, 'unsupported_transition', false]);
  expect(first.stderr).not.toMatch(/9223372036854775808|range|bigint/i);
  expect(await root.rows()).toEqual(before);
  const again = root.run([...command, '--operation-id', OP(2)]);
  expect([again.status, again.stderr]).toEqual([first.status, first.stderr]);
  const inspect = root.run(['service', 'inspect', serviceId]);
  expect(inspect.envelope.result).toMatchObject({ recovery_state: 'clear' });
}

function maximumCases(backend: Backend): void {
  describe(`lifecycle changes of a service whose counter is at 2^63-1 (${backend.name})`, () => {
    it('refuses to resume a seeded service at the maximum service_revision', async () => {
      const service: BundleService = {
        ...materialisedService(),
        serviceId: '41111111-2222-4333-8444-555555555555',
        domainName: 'maxed',
        designState: 'seeded',
        operationalStatus: 'suspended',
        manifest: null,
        schemaVersion: null,
        serviceRevision: MAX,
        materialisedAt: null,
        exportFence: null,
        createdAt: t('2026-01-01T00:00:00.000000Z'),
      };
      const root = await imported(backend, service);
      await expectRefusedTwice(root, service.serviceId, ['service', 'resume', service.serviceId, '--expected-revision', MAX.toString()]);
    });

    it('refuses to restore a materialised service at the maximum service_revision', async () => {
      const service = materialisedService({ serviceRevision: MAX });
      const root = await imported(backend, service);
      await expectRefusedTwice(root, service.serviceId, ['service', 'restore', service.serviceId, '--expected-revision', MAX.toString()]);
    });

    it('refuses to resume a service whose store fence generation is at the maximum, and leaves the fence closed', async () => {
      const service = materialisedService({ operationalStatus: 'suspended', exportFence: { generation: MAX, state: 'closed' } });
      const root = await imported(backend, service);
      await expectRefusedTwice(root, service.serviceId, ['service', 'resume', service.serviceId, '--expected-revision', '7']);
      expect(root.run(['service', 'inspect', service.serviceId]).envelope.result).toMatchObject({ operational_status: 'suspended', service_revision: 7 });
      expect(await root.fence(service.serviceId)).toEqual({ generation: MAX, state: 'closed' });
    });

    it('still restores a service one below the maximum, to exactly 2^63-1', async () => {
      const service = materialisedService({ serviceRevision: MAX - 1n, exportFence: { generation: MAX - 1n, state: 'closed' } });
      const root = await imported(backend, service);
      const run = root.run(['service', 'restore', service.serviceId, '--expected-revision', (MAX - 1n).toString(), '--operation-id', OP(3)]);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('"service_revision":9223372036854775807');
      expect(await root.fence(service.serviceId)).toEqual({ generation: MAX, state: 'closed' });
    });
  });
}

maximumCases(sqlite);

expectClustersUnderCi();
const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const database of databases) await database.drop();
});
for (const cluster of postgresClusters()) maximumCases(postgres(cluster, databases));
