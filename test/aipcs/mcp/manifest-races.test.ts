// Several processes racing registry operations under *different*
// keys (contract §5.2–§5.9): one seed per domain name whichever key wins, one
// design, one materialise and one evolve per revision; the losers get the
// documented refusals (retryable ones only while the winner is pending), never
// internal or storage failures.

import { describe, expect, it } from 'vitest';
import { serverProfiles, startAipcs, type AipcsClient, type Envelope } from '../../support/aipcs-client.js';
import { wireNotesManifest, wireNotesManifestV2 } from '../../support/wire-manifests.js';

/** Retries retryable answers, as a client following the contract does. */
async function settle(client: AipcsClient, tool: string, args: Record<string, unknown>): Promise<Envelope> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const envelope = await client.call(tool, args);
    if (envelope.ok || !envelope.error?.retryable) return envelope;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the request never settled');
}

const outcome = (envelope: Envelope): string => (envelope.ok ? 'ok' : (envelope.error?.code ?? 'none'));

const profiles = await serverProfiles();

describe.each(profiles)('processes racing registry operations under different keys ($name)', (profile) => {
  it('converge on one service per domain and one winner per lifecycle step', async () => {
    const storage = await profile.fresh();
    const clients = await Promise.all([0, 1, 2].map(() => startAipcs(storage.args, storage.env)));
    try {
      for (let round = 0; round < 4; round++) {
        const seeds = await Promise.all(
          clients.map((client, index) =>
            settle(client, 'aipcs_service_seed', { domain_name: `race_${round}`, domain_class: 'c', intent_description: 'i', idempotency_key: `seed-${round}-${index}` }),
          ),
        );
        expect(seeds.map(outcome)).toEqual(['ok', 'ok', 'ok']);
        const serviceIds = new Set(seeds.map((envelope) => envelope.result?.['service_id']));
        expect(serviceIds.size).toBe(1);
        const serviceId = [...serviceIds][0] as string;

        const designs = await Promise.all(
          clients.map((client, index) => settle(client, 'aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: `design-${round}-${index}` })),
        );
        expect(designs.map(outcome).sort()).toEqual(['invalid_state', 'invalid_state', 'ok']);

        const materialised = await Promise.all(
          clients.map((client, index) =>
            settle(client, 'aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: `mat-${round}-${index}` }),
          ),
        );
        const materialiseOutcomes = materialised.map(outcome);
        expect(materialiseOutcomes.filter((code) => code === 'ok')).toHaveLength(1);
        for (const code of materialiseOutcomes) expect(['ok', 'stale_revision']).toContain(code);

        const evolved = await Promise.all(
          clients.map((client, index) =>
            settle(client, 'aipcs_service_evolve', {
              service_id: serviceId,
              expected_service_revision: 3,
              expected_schema_version: 1,
              schema: wireNotesManifestV2(),
              idempotency_key: `evolve-${round}-${index}`,
            }),
          ),
        );
        const evolveOutcomes = evolved.map(outcome);
        expect(evolveOutcomes.filter((code) => code === 'ok')).toHaveLength(1);
        for (const code of evolveOutcomes) expect(['ok', 'stale_revision']).toContain(code);
        const inspected = await clients[0]!.call('aipcs_service_inspect', { service_id: serviceId });
        expect(inspected.result).toMatchObject({ service_revision: 4, schema_version: 2, recovery_state: 'clear' });
      }
      const listed = await clients[1]!.call('aipcs_service_list');
      expect((listed.result?.['services'] as unknown[]).length).toBe(4);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      await storage.drop();
    }
  });
});
