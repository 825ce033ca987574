// Branch topology races between several `aipcs serve` processes on one
// storage: a slug taken by different keys at once, one record assigned as
// primary to different branches at once, and a ring of parent changes that
// would close a cycle (contract §7.2, §7.4, §7.5).

import { describe, expect, it } from 'vitest';
import { serverProfiles, startAipcs, type AipcsClient, type Envelope } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

async function retryUntilSettled(client: AipcsClient, name: string, args: Record<string, unknown>): Promise<Envelope> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const envelope = await client.call(name, args);
    if (envelope.ok || !envelope.error?.retryable) return envelope;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the request never settled');
}

const outcome = (envelope: Envelope): string => (envelope.ok ? (envelope.result?.['replayed'] ? 'replay' : 'ok') : (envelope.error?.code ?? '?'));

const profiles = await serverProfiles();

describe.each(profiles)('branch topology races across processes ($name)', (profile) => {
  it('keep one branch per slug, one primary per record and no parent cycle', async () => {
    const storage = await profile.fresh();
    const clients = await Promise.all([0, 1, 2].map(() => startAipcs(storage.args, storage.env)));
    const [first] = clients;
    try {
      const seeded = await first!.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'k', intent_description: 'i', idempotency_key: 's' });
      const service = { service_id: seeded.result?.['service_id'] };
      await first!.call('aipcs_service_design', { ...service, schema: wireNotesManifest(), idempotency_key: 'd' });
      await first!.call('aipcs_service_materialise', { ...service, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' });

      // One slug, three keys: one branch, the others already_exists.
      const slugRace = await Promise.all(
        clients.map((client, i) => retryUntilSettled(client, 'aipcs_branch_create', { ...service, slug: 'shared', title: 't', intent: 'i', idempotency_key: `slug-${i}` })),
      );
      expect(slugRace.map(outcome).sort()).toEqual(['already_exists', 'already_exists', 'ok']);

      const branchIds: string[] = [];
      for (const i of [0, 1, 2]) {
        const created = await first!.call('aipcs_branch_create', { ...service, slug: `b-${i}`, title: 't', intent: 'i', idempotency_key: `b-${i}` });
        branchIds.push((created.result?.['branch'] as { id: string }).id);
      }

      // One record at version 1 assigned as primary to three branches at once.
      for (let round = 0; round < 3; round++) {
        const created = await first!.call('aipcs_record_create', { ...service, entity_name: 'note', record: { title: `r${round}` }, idempotency_key: `r-${round}` });
        const recordId = (created.result?.['record'] as { id: string }).id;
        const assigned = await Promise.all(
          clients.map((client, i) =>
            retryUntilSettled(client, 'aipcs_branch_assign_records', {
              ...service,
              branch_id: branchIds[i],
              role: 'primary',
              operation: 'assign',
              records: [{ entity_name: 'note', record_id: recordId, expected_record_version: 1 }],
              idempotency_key: `assign-${round}-${i}`,
            }),
          ),
        );
        expect(assigned.map(outcome).sort()).toEqual(['ok', 'stale_record_version', 'stale_record_version']);
        let primaries = 0;
        for (const branchId of branchIds) {
          const listed = await first!.call('aipcs_record_list', { ...service, entity_name: 'note', branch_id: branchId, branch_role: 'primary' });
          primaries += (listed.result?.['records'] as { id: string }[]).filter((record) => record.id === recordId).length;
        }
        expect(primaries).toBe(1);
        const history = await first!.call('aipcs_record_history', { ...service, entity_name: 'note', record_id: recordId });
        expect((history.result?.['events'] as { kind: string }[]).map((event) => event.kind)).toEqual(['create', 'primary_assign']);
      }

      // Each branch takes the next as parent at once: the last change would close a ring.
      const ring = await Promise.all(
        clients.map((client, i) =>
          retryUntilSettled(client, 'aipcs_branch_update', {
            ...service,
            branch_id: branchIds[i],
            expected_branch_revision: 1,
            updates: { parent_branch_id: branchIds[(i + 1) % branchIds.length] },
            idempotency_key: `ring-${i}`,
          }),
        ),
      );
      expect(ring.map(outcome).sort()).toEqual(['constraint_violation', 'ok', 'ok']);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      await storage.drop();
    }
  });
});
