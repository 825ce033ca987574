// Writers on both transports at once against one storage: two `aipcs serve`
// stdio processes and two sessions of one Streamable HTTP listener. The seed's
// first promise (two clients writing at once never silently lose a write)
// must hold whichever transport each client uses: a shared idempotency key
// yields one record and one stored result, one expected_record_version has
// exactly one winner and the losers get stale_record_version (not
// retryable), pages never skip or repeat a record while others insert, and
// history holds exactly the acknowledged writes (contract §5.2, §6.4, §6.9,
// §6.12).

import { describe, expect, it } from 'vitest';
import { serverProfiles, startAipcs, type AipcsClient, type Envelope } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';
import { connectHttp, startHttpAipcs, type HttpClient } from '../http/support.js';

type Caller = Pick<AipcsClient, 'call'>;

/** Retries only what the contract marks retryable (storage_busy and the like). */
async function settled(client: Caller, name: string, args: Record<string, unknown>): Promise<Envelope> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const envelope = await client.call(name, args);
    if (envelope.ok || !envelope.error?.retryable) return envelope;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${name} never settled`);
}

const record = (envelope: Envelope): Record<string, unknown> => envelope.result?.['record'] as Record<string, unknown>;

const profiles = await serverProfiles();

describe.each(profiles)('stdio processes and HTTP sessions writing at once ($name)', (profile) => {
  it('keep one result per key, one winner per version, and every acknowledged write', async () => {
    const storage = await profile.fresh();
    const stdio = await Promise.all([0, 1].map(() => startAipcs(storage.args, storage.env)));
    const http = await startHttpAipcs(storage.args, storage.env);
    const sessions: HttpClient[] = [];
    try {
      sessions.push(...(await Promise.all([0, 1].map(() => connectHttp(http.url)))));
      const clients: Caller[] = [stdio[0]!, sessions[0]!, stdio[1]!, sessions[1]!];
      const first = clients[0]!;
      const serviceId = (await first.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Shared notes.', idempotency_key: 'seed' })).result?.['service_id'];
      await first.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design' });
      expect((await first.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'materialise' })).ok).toBe(true);

      // Acknowledged writes, as (record id, record_version) pairs.
      const acknowledged: string[] = [];

      // One key sent by every client at once: one record, one stored result.
      const shared = await Promise.all(
        clients.map((client) => settled(client, 'aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'shared' }, idempotency_key: 'shared-key' })),
      );
      for (const envelope of shared) expect(envelope.ok).toBe(true);
      expect(new Set(shared.map((envelope) => JSON.stringify(record(envelope)))).size).toBe(1);
      expect(shared.filter((envelope) => envelope.result?.['replayed'] === false)).toHaveLength(1);
      const sharedId = record(shared[0]!)['id'] as string;
      acknowledged.push(`${sharedId}@1`);

      // Records that exist before the pager starts: each must be listed exactly once.
      const existing = [sharedId];
      for (let index = 0; index < 8; index++) {
        const created = await settled(clients[index % clients.length]!, 'aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: `before-${index}` }, idempotency_key: `before-${index}` });
        existing.push(record(created)['id'] as string);
        acknowledged.push(`${record(created)['id'] as string}@1`);
      }

      // Every client updates the shared record at the same version, five rounds;
      // meanwhile two clients insert and an HTTP session pages through the list.
      const contend = async (): Promise<void> => {
        for (let version = 1; version <= 5; version++) {
          const outcomes = await Promise.all(
            clients.map((client, index) =>
              settled(client, 'aipcs_record_update', { service_id: serviceId, entity_name: 'note', record_id: sharedId, updates: { title: `v${version}-c${index}` }, expected_record_version: version, idempotency_key: `update-${version}-${index}` }),
            ),
          );
          expect(outcomes.filter((envelope) => envelope.ok)).toHaveLength(1);
          for (const envelope of outcomes.filter((outcome) => !outcome.ok)) expect(envelope.error).toMatchObject({ code: 'stale_record_version', retryable: false });
          acknowledged.push(`${sharedId}@${version + 1}`);
        }
      };
      const insert = async (client: Caller, tag: string): Promise<void> => {
        for (let index = 0; index < 6; index++) {
          const created = await settled(client, 'aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: `${tag}-${index}` }, idempotency_key: `${tag}-${index}` });
          expect(created.ok).toBe(true);
          acknowledged.push(`${record(created)['id'] as string}@1`);
        }
      };
      const page = async (client: Caller): Promise<void> => {
        for (let pass = 0; pass < 3; pass++) {
          const seen: string[] = [];
          let cursor: string | null = null;
          do {
            const listed = await settled(client, 'aipcs_record_list', { service_id: serviceId, entity_name: 'note', limit: 2, cursor });
            expect(listed.ok).toBe(true);
            seen.push(...(listed.result?.['records'] as { id: string }[]).map((entry) => entry.id));
            cursor = listed.result?.['next_cursor'] as string | null;
          } while (cursor !== null);
          expect(new Set(seen).size).toBe(seen.length);
          for (const id of existing) expect(seen).toContain(id);
        }
      };
      await Promise.all([contend(), insert(stdio[1]!, 'stdio-insert'), insert(sessions[1]!, 'http-insert'), page(sessions[0]!)]);

      // A key replayed from another transport returns the stored result.
      const replay = await settled(sessions[1]!, 'aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'stdio-insert-0' }, idempotency_key: 'stdio-insert-0' });
      expect(replay.result?.['replayed']).toBe(true);

      // History holds exactly the acknowledged writes, each once.
      const events: string[] = [];
      let cursor: string | null = null;
      do {
        const history = await settled(stdio[0]!, 'aipcs_record_history', { service_id: serviceId, entity_name: 'note', limit: 7, cursor });
        events.push(...(history.result?.['events'] as { id: string; record_version: number }[]).map((event) => `${event.id}@${event.record_version}`));
        cursor = history.result?.['next_cursor'] as string | null;
      } while (cursor !== null);
      expect([...events].sort()).toEqual([...acknowledged].sort());
    } finally {
      await Promise.all(sessions.map((session) => session.close()));
      await Promise.all(stdio.map((client) => client.close()));
      await http.stop();
      await storage.drop();
    }
  });
});
