// The write fence under load: several MCP clients (each its own `aipcs serve`
// process) create and update records as fast as they can while an operator
// suspends the service with the CLI. No write may commit after the fence
// closed, every acknowledged write must be there, and every writer ends with
// the specified refusal (storage_busy while the suspend is pending, then
// storage_unavailable). On SQLite and on every started PostgreSQL (issue 11:
// "on PostgreSQL too").

import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcsAsync, freshDataRoot, key, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { createTestDatabase, postgresClusters } from '../../support/postgres.js';

const WRITERS = 4;
const BEFORE_SUSPEND = 15;

interface WriterLog {
  acknowledged: { id: string; version: number }[];
  refusals: string[];
}

async function hammer(client: AipcsClient, serviceId: string, progress: () => void): Promise<WriterLog> {
  const log: WriterLog = { acknowledged: [], refusals: [] };
  const versions = new Map<string, number>();
  const deadline = Date.now() + 45_000;
  for (let i = 0; Date.now() < deadline; i++) {
    const mine = [...versions.entries()];
    const target = i % 3 === 2 ? mine[i % mine.length] : undefined;
    const reply = target
      ? await client.call('aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: target[0], updates: { priority: i }, expected_record_version: target[1], idempotency_key: key('u') })
      : await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: `w${i}` }, idempotency_key: key('c') });
    if (reply.ok) {
      const record = reply.result?.['record'] as { id: string; record_version: number };
      versions.set(record.id, record.record_version);
      log.acknowledged.push({ id: record.id, version: record.record_version });
      progress();
      continue;
    }
    const code = reply.error?.code ?? 'none';
    log.refusals.push(code);
    if (code !== 'storage_busy') break;
  }
  return log;
}

/**
 * Starts every writer, suspends the service through the CLI once each has
 * BEFORE_SUSPEND acknowledged writes, and checks that every writer ended
 * refused as specified. Returns the writers' logs.
 */
async function hammerThenSuspend(writers: AipcsClient[], serviceId: string, cliArgs: string[], env: Record<string, string> = {}): Promise<WriterLog[]> {
  const writes = writers.map(() => 0);
  let release: () => void = () => undefined;
  const enough = new Promise<void>((resolve) => (release = resolve));
  const logs = Promise.all(
    writers.map((client, index) =>
      hammer(client, serviceId, () => {
        writes[index] = (writes[index] ?? 0) + 1;
        if (writes.every((count) => count >= BEFORE_SUSPEND)) release();
      }),
    ),
  );
  // A writer that stopped early must not leave the test waiting.
  void logs.then(release, release);
  await enough;
  const suspend = await aipcsAsync(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-00000000f00d', ...cliArgs], { env });
  expect(suspend.status, suspend.stderr).toBe(0);
  expect(suspend.envelope.result).toMatchObject({ service: { operational_status: 'suspended', service_revision: 4 } });
  const results = await logs;
  for (const log of results) {
    expect(log.acknowledged.length).toBeGreaterThan(0);
    expect(log.refusals.at(-1)).toBe('storage_unavailable');
    expect(log.refusals.every((code) => code === 'storage_busy' || code === 'storage_unavailable')).toBe(true);
  }
  return results;
}

const acknowledgedWrites = (results: WriterLog[]): string[] => results.flatMap((log) => log.acknowledged.map((write) => `${write.id}/${write.version}`)).sort();

describe('the write fence', () => {
  let dataRoot: string;
  let setup: AipcsClient;
  const writers: AipcsClient[] = [];

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    setup = await serveOn(dataRoot);
    for (let i = 0; i < WRITERS; i++) writers.push(await serveOn(dataRoot));
  });

  afterAll(async () => {
    for (const client of [setup, ...writers]) await client.close();
  });

  it('admits no write after a suspend closed it, loses none before, and refuses every writer', async () => {
    const serviceId = await materialisedService(setup, 'hammered');
    const store = join(dataRoot, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);
    // A store of ours may hold no trigger (data units refuse one), so an
    // observer reads, in one statement and so one snapshot, the fence and the
    // count of committed history, yielding between reads. The first snapshot
    // that sees the fence closed was taken after the suspend committed it; a
    // write committed later would make the final count larger.
    const db = new Database(store, { readonly: true });
    try {
      const observe = db.prepare(`SELECT f.state AS state, (SELECT count(*) FROM __aipcs_record_history) AS events FROM __aipcs_write_fence AS f`);
      let closedSeenWith: number | undefined;
      let abandoned = false;
      const watcher = (async () => {
        while (closedSeenWith === undefined && !abandoned) {
          const row = observe.get() as { state: string; events: bigint | number } | undefined;
          if (row?.state === 'closed') closedSeenWith = Number(row.events);
          else await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      let results: WriterLog[];
      try {
        results = await hammerThenSuspend(writers, serviceId, rootArgs(dataRoot));
      } catch (error) {
        abandoned = true;
        await watcher;
        throw error;
      }
      // The suspend has closed the fence: the watcher's next snapshot sees it.
      await watcher;

      const fence = db.prepare(`SELECT generation, state FROM __aipcs_write_fence`).get() as { generation: bigint | number; state: string };
      expect([Number(fence.generation), fence.state]).toEqual([2, 'closed']);
      const events = db.prepare(`SELECT record_id, record_version FROM __aipcs_record_history`).all() as { record_id: string; record_version: bigint | number }[];
      // Nothing committed after the fence closed.
      expect(closedSeenWith).toBe(events.length);
      // Every acknowledged write is there, and nothing else.
      expect(events.map((event) => `${event.record_id}/${Number(event.record_version)}`).sort()).toEqual(acknowledgedWrites(results));
    } finally {
      db.close();
    }
  });
});

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('the write fence on PostgreSQL %s', (_version, cluster) => {
  it('admits no write after a suspend closed it, loses none before, and refuses every writer', async () => {
    const database = await createTestDatabase(cluster);
    const env = { AIPCS_TEST_FENCE_DSN: database.url };
    const args = ['--profile', 'postgresql', '--principal-id', 'local-agent', '--postgres-dsn-env', 'AIPCS_TEST_FENCE_DSN'];
    const clients: AipcsClient[] = [];
    const observer = new pg.Client({ connectionString: database.url });
    try {
      for (let i = 0; i <= WRITERS; i++) clients.push(await startAipcs(args, env));
      const serviceId = await materialisedService(clients[0]!, 'hammered');
      const schema = `"svc_${serviceId.replaceAll('-', '')}"`;
      // A store of ours may hold no trigger (the adapter refuses one), so an
      // observer stands in for the SQLite probe: one statement, one snapshot,
      // reads the fence and counts the committed history. The first snapshot
      // that sees the fence closed was taken after the suspend committed it;
      // a write committed later would make the final count larger.
      await observer.connect();
      let closedSeenWith: number | undefined;
      let abandoned = false;
      const watcher = (async () => {
        while (closedSeenWith === undefined && !abandoned) {
          const row = (await observer.query<{ state: string; events: string }>(`SELECT f."state", (SELECT count(*) FROM ${schema}."__aipcs_record_history") AS events FROM ${schema}."__aipcs_write_fence" f`)).rows[0];
          if (row?.state === 'closed') closedSeenWith = Number(row.events);
        }
      })();
      let results: WriterLog[];
      try {
        results = await hammerThenSuspend(clients.slice(1), serviceId, args, env);
      } catch (error) {
        abandoned = true;
        await watcher.catch(() => undefined);
        throw error;
      }
      // The suspend has closed the fence: the watcher's next snapshot sees it.
      await watcher;

      const fence = (await observer.query<{ generation: string; state: string }>(`SELECT "generation", "state" FROM ${schema}."__aipcs_write_fence"`)).rows[0];
      expect([Number(fence?.generation), fence?.state]).toEqual([2, 'closed']);
      const events = (await observer.query<{ record_id: string; record_version: string }>(`SELECT "record_id", "record_version" FROM ${schema}."__aipcs_record_history"`)).rows;
      // Nothing committed after the fence closed.
      expect(closedSeenWith).toBe(events.length);
      // Every acknowledged write is there, and nothing else.
      expect(events.map((event) => `${event.record_id}/${Number(event.record_version)}`).sort()).toEqual(acknowledgedWrites(results));
    } finally {
      await observer.end().catch(() => undefined);
      await Promise.all(clients.map((client) => client.close()));
      await database.drop();
    }
  });
});
