// Process-level behaviour of `aipcs serve --profile sqlite`: several servers
// racing on one data root, a server killed mid-materialise, and raw protocol
// lines that a JavaScript client could not produce (1.0, malformed JSON).

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { freshDataRoot, serverProfiles, sqliteArgs, startAipcs, type AipcsClient, type Envelope } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

async function retryUntilSettled(client: AipcsClient, name: string, args: Record<string, unknown>): Promise<Envelope> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const envelope = await client.call(name, args);
    if (envelope.ok || !envelope.error?.retryable) return envelope;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the request never settled');
}

const profiles = await serverProfiles();

describe.each(profiles)('several aipcs processes on one storage ($name)', (profile) => {
  it('converge on one service and one result when racing the same keys', async () => {
    const storage = await profile.fresh();
    const clients = await Promise.all([0, 1, 2].map(() => startAipcs(storage.args, storage.env)));
    try {
      const seed = { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Shared notes.', idempotency_key: 'seed-race' };
      const seeds = await Promise.all(clients.map((client) => retryUntilSettled(client, 'aipcs_service_seed', seed)));
      const serviceIds = new Set(seeds.map((envelope) => envelope.result?.['service_id']));
      expect(serviceIds.size).toBe(1);
      const serviceId = [...serviceIds][0] as string;

      const design = { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-race' };
      const designs = await Promise.all(clients.map((client) => retryUntilSettled(client, 'aipcs_service_design', design)));
      expect(new Set(designs.map((envelope) => JSON.stringify(envelope.result))).size).toBe(1);

      const materialise = { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'mat-race' };
      const results = await Promise.all(clients.map((client) => retryUntilSettled(client, 'aipcs_service_materialise', materialise)));
      for (const envelope of results) expect(envelope.ok).toBe(true);
      expect(new Set(results.map((envelope) => JSON.stringify(envelope.result))).size).toBe(1);
      expect(results[0]?.result).toMatchObject({ service_revision: 3, design_state: 'materialised', recovery_state: 'clear' });

      const listed = await clients[0]!.call('aipcs_service_list');
      expect((listed.result?.['services'] as unknown[]).length).toBe(1);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      await storage.drop();
    }
  });

  it('keep exactly one winner per record version across processes, with the same and with different expected versions', async () => {
    const storage = await profile.fresh();
    const [a, b] = await Promise.all([startAipcs(storage.args, storage.env), startAipcs(storage.args, storage.env)]);
    try {
      const serviceId = (await a!.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'k', intent_description: 'i', idempotency_key: 's' })).result?.['service_id'];
      await a!.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'd' });
      await a!.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' });
      const created = await a!.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 't', priority: 0 }, idempotency_key: 'c' });
      const recordId = (created.result?.['record'] as Record<string, unknown>)['id'];
      let version = 1;
      const winners: unknown[] = [];
      const update = (client: AipcsClient, who: string, round: number, expected: number) =>
        retryUntilSettled(client, 'aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: recordId, updates: { title: `${who}-${round}` }, expected_record_version: expected, idempotency_key: `${who}-${round}` });
      for (let round = 0; round < 10; round++) {
        const outcomes = await Promise.all([update(a!, 'a', round, version), update(b!, 'b', round, version)]);
        expect(outcomes.filter((envelope) => envelope.ok)).toHaveLength(1);
        expect(outcomes.filter((envelope) => envelope.error?.code === 'stale_record_version')).toHaveLength(1);
        winners.push(outcomes.find((envelope) => envelope.ok)?.result?.['record']);
        version++;
      }
      // Different expected versions at once: only the current one wins, whichever process holds it.
      for (let round = 10; round < 16; round++) {
        const [holder, other] = round % 2 === 0 ? [a!, b!] : [b!, a!];
        const stale = round % 4 < 2 ? version - 1 : 1;
        const outcomes = await Promise.all([update(holder, 'current', round, version), update(other, 'stale', round, stale)]);
        expect(outcomes.map((envelope) => envelope.ok)).toEqual([true, false]);
        expect(outcomes[0]?.result?.['record']).toMatchObject({ record_version: version + 1, fields: { title: `current-${round}` } });
        expect(outcomes[1]?.error).toMatchObject({ code: 'stale_record_version', retryable: false });
        winners.push(outcomes[0]?.result?.['record']);
        version++;
      }
      const history = await b!.call('aipcs_record_history', { service_id: serviceId, entity_name: 'note', record_id: recordId, limit: 100 });
      const events = history.result?.['events'] as { record_version: number; kind: string; after: { fields: Record<string, unknown> } }[];
      expect(events.map((event) => event.record_version)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
      expect(events.map((event) => event.kind)).toEqual(['create', ...Array.from({ length: 16 }, () => 'update')]);
      // Every winner's write, and nothing else, is in the history.
      expect(events.slice(1).map((event) => event.after.fields['title'])).toEqual(winners.map((record) => (record as { fields: Record<string, unknown> }).fields['title']));
    } finally {
      await Promise.all([a!.close(), b!.close()]);
      await storage.drop();
    }
  });
});

describe.each(profiles)('a server killed in the middle of materialise ($name)', (profile) => {
  for (const checkpoint of ['materialise:admitted', 'materialise:applied']) {
    it(`recovers on the next start after SIGKILL at ${checkpoint}`, async () => {
      const storage = await profile.fresh();
      const setup = await startAipcs(storage.args, storage.env);
      const serviceId = (await setup.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'k', intent_description: 'i', idempotency_key: 's' })).result?.['service_id'];
      await setup.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'd' });
      await setup.close();

      const materialise = { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' };
      const doomed = await startAipcs(storage.args, { ...storage.env, AIPCS_FAULT_INJECTION: checkpoint });
      await expect(doomed.call('aipcs_service_materialise', materialise)).rejects.toThrow();
      await doomed.close().catch(() => undefined);

      const next = await startAipcs(storage.args, storage.env);
      try {
        const pending = await next.call('aipcs_service_inspect', { service_id: serviceId });
        expect(pending.result).toMatchObject({ recovery_state: 'pending', design_state: 'seeded', storage: null });
        const data = await next.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
        expect(data.error).toMatchObject({ code: 'storage_busy', retryable: true });
        const other = await next.call('aipcs_service_materialise', { ...materialise, idempotency_key: 'other' });
        expect(other.error).toMatchObject({ code: 'operation_in_progress', retryable: true });
        const resumed = await next.call('aipcs_service_materialise', materialise);
        expect(resumed.result).toMatchObject({ design_state: 'materialised', service_revision: 3, recovery_state: 'clear' });
        const list = await next.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
        expect(list.ok).toBe(true);
      } finally {
        await next.close();
        await storage.drop();
      }
    });
  }
});

describe('raw protocol lines', () => {
  it('distinguish 1 from 1.0 and survive malformed JSON', async () => {
    const child = spawn(process.execPath, [aipcsBin(), 'serve', ...sqliteArgs(freshDataRoot())], { stdio: ['pipe', 'pipe', 'pipe'] });
    const responses = new Map<number, Record<string, unknown>>();
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const message = JSON.parse(buffer.slice(0, newline)) as { id?: number };
        buffer = buffer.slice(newline + 1);
        if (typeof message.id === 'number') responses.set(message.id, message as Record<string, unknown>);
      }
    });
    const send = (line: string) => child.stdin.write(line + '\n');
    send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}');
    send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
    send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"aipcs_service_list","arguments":{"limit":1.0}}}');
    send('{this is not json');
    send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"aipcs_service_list","arguments":{"limit":1}}}');
    const deadline = Date.now() + 20_000;
    while ((!responses.has(2) || !responses.has(3)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    child.stdin.end();
    const structured = (id: number) => ((responses.get(id)?.['result'] as Record<string, unknown>)['structuredContent'] as Envelope);
    expect(structured(2).error).toMatchObject({ code: 'validation_failed', issues: [{ code: 'invalid_value', path: 'limit' }] });
    expect(structured(3).ok).toBe(true);
    await new Promise((resolve) => child.once('exit', resolve));
    expect(child.exitCode).toBe(0);
  });
});
