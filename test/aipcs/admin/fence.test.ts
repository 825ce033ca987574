// The write fence under load: several MCP clients (each its own `aipcs serve`
// process) create and update records as fast as they can while an operator
// suspends the service with the CLI. No write may commit after the fence
// closed, every acknowledged write must be there, and every writer ends with
// the specified refusal (storage_busy while the suspend is pending, then
// storage_unavailable).

import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcsAsync, freshDataRoot, key, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';

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
    // Instrumentation inside the store: the fence change records, in its own
    // transaction, the last history event committed before it.
    const probe = new Database(store);
    probe.exec(`CREATE TRIGGER test_fence_probe AFTER UPDATE ON __aipcs_write_fence BEGIN
      INSERT INTO __aipcs_record_mutation (principal_id, idempotency_key, operation_kind, fingerprint, result_json, completed_at)
      VALUES ('test-probe', 'fence-' || NEW.generation, 'probe', NEW.state, (SELECT coalesce(max(event_sequence), 0) FROM __aipcs_record_history), 0);
    END`);
    probe.close();

    // The suspend starts once every writer is in full swing.
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
    const suspend = await aipcsAsync(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-00000000f00d', ...rootArgs(dataRoot)]);
    expect(suspend.status, suspend.stderr).toBe(0);
    expect(suspend.envelope.result).toMatchObject({ service: { operational_status: 'suspended', service_revision: 4 } });
    const results = await logs;

    for (const log of results) {
      expect(log.acknowledged.length).toBeGreaterThan(0);
      expect(log.refusals.at(-1)).toBe('storage_unavailable');
      expect(log.refusals.every((code) => code === 'storage_busy' || code === 'storage_unavailable')).toBe(true);
    }

    const db = new Database(store, { readonly: true });
    try {
      const fence = db.prepare(`SELECT generation, state FROM __aipcs_write_fence`).get() as { generation: bigint; state: string };
      expect([Number(fence.generation), fence.state]).toEqual([2, 'closed']);
      const marker = db.prepare(`SELECT result_json FROM __aipcs_record_mutation WHERE principal_id = 'test-probe' AND idempotency_key = 'fence-2'`).get() as { result_json: string };
      const lastBeforeFence = Number(marker.result_json);
      const maxSequence = Number((db.prepare(`SELECT coalesce(max(event_sequence), 0) AS n FROM __aipcs_record_history`).get() as { n: bigint }).n);
      // Nothing committed after the fence closed.
      expect(maxSequence).toBe(lastBeforeFence);
      // Every acknowledged write is there, and nothing else.
      const events = db.prepare(`SELECT record_id, record_version FROM __aipcs_record_history`).all() as { record_id: string; record_version: bigint }[];
      const stored = events.map((event) => `${event.record_id}/${Number(event.record_version)}`).sort();
      const acknowledged = results.flatMap((log) => log.acknowledged.map((write) => `${write.id}/${write.version}`)).sort();
      expect(stored).toEqual(acknowledged);
    } finally {
      db.close();
    }
  });
});
