// Conformance: service lifecycle rules of contract §5 over any adapter.
// Exported as a function so each backend runs it unchanged.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MANIFEST_RULES, type StoragePorts } from '../../src/aipcs/core/application.js';
import { LifecycleService } from '../../src/aipcs/core/lifecycle.js';
import { StorageFailure, type ServiceRow } from '../../src/aipcs/core/ports.js';
import { fingerprintText } from '../../src/aipcs/core/record-rules.js';
import type { JsonObject } from '../../src/common/json.js';
import { notesManifest, notesManifestV2, serverManaged } from '../support/manifests.js';
import { overriding } from '../support/operator.js';
import { appOver, manifest, sha256, type StorageHarness, type StorageLocation, type TestApp } from './harness.js';

const seedCommand = (key = 'seed-1', domainName = 'notes') => ({
  domainName,
  domainClass: 'knowledge',
  intentDescription: 'Project notes.',
  idempotencyKey: key,
});

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

export function lifecycleSuite(harness: StorageHarness): void {
  describe(`lifecycle conformance (${harness.name})`, () => {
    let location: StorageLocation;
    let storage: StoragePorts;
    let app: TestApp;

    beforeEach(async () => {
      location = await harness.create();
      storage = await location.open();
      app = appOver(storage);
    });

    afterEach(async () => {
      await storage.close();
      await location.destroy();
    });

    async function designed(): Promise<string> {
      const seeded = await app.lifecycle.seed(seedCommand());
      const serviceId = seeded['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'design-1' });
      return serviceId;
    }

    /** A materialise (key 'm') of `serviceId` that crashes at `checkpoint`, leaving its intent as a crash would. */
    async function materialiseCrashingAt(serviceId: string, checkpoint: string): Promise<{ serviceId: string; expectedServiceRevision: bigint; expectedSchemaVersion: bigint; idempotencyKey: string }> {
      const crashing = appOver(storage, {
        checkpoint: (name) => {
          if (name === checkpoint) throw new Error('simulated crash');
        },
      });
      const command = { serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' };
      await expect(crashing.lifecycle.materialise(command)).rejects.toThrow('simulated crash');
      return command;
    }

    async function materialised(): Promise<string> {
      const serviceId = await designed();
      await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'mat-1' });
      return serviceId;
    }

    describe('seed', () => {
      it('creates a seeded service at revision 1 with the projection keys in order', async () => {
        const service = await app.lifecycle.seed(seedCommand());
        expect(Object.keys(service)).toEqual([
          'service_id', 'domain_name', 'domain_class', 'intent_description', 'design_state', 'operational_status', 'schema', 'schema_version',
          'service_revision', 'recovery_state', 'created_at', 'updated_at', 'last_activity_at', 'materialised_at', 'storage',
        ]);
        expect(service).toMatchObject({ design_state: 'seeded', operational_status: 'active', schema: null, schema_version: null, service_revision: 1n, recovery_state: 'clear', materialised_at: null, storage: null });
        expect(service['created_at']).toBe(service['updated_at']);
        expect(service['created_at']).toBe(service['last_activity_at']);
      });

      it('replays the stored snapshot for the same key, even after the service moved on', async () => {
        const first = await app.lifecycle.seed(seedCommand());
        await app.lifecycle.design({ serviceId: first['service_id'] as string, manifest: manifest(notesManifest()), idempotencyKey: 'design-1' });
        const again = await app.lifecycle.seed(seedCommand());
        expect(again).toEqual(first);
      });

      it('answers conflict for a changed request under the same key', async () => {
        await app.lifecycle.seed(seedCommand());
        await rejects(app.lifecycle.seed({ ...seedCommand(), intentDescription: 'Something else.' }), 'conflict');
        await rejects(app.lifecycle.seed({ ...seedCommand(), domainClass: 'other' }), 'conflict');
      });

      it('returns the existing service for an existing domain name and binds the new key to it', async () => {
        const first = await app.lifecycle.seed(seedCommand('k1'));
        const second = await app.lifecycle.seed({ ...seedCommand('k2'), domainClass: 'other' });
        expect(second['service_id']).toBe(first['service_id']);
        expect(second['domain_class']).toBe('knowledge');
        await rejects(app.lifecycle.seed({ ...seedCommand('k2'), domainName: 'elsewhere' }), 'conflict');
      });

      it('keeps principals apart', async () => {
        const service = await app.lifecycle.seed(seedCommand());
        const other = appOver(storage, { principalId: 'agent-b' });
        await rejects(other.lifecycle.inspect(service['service_id'] as string), 'not_found');
        expect((await other.lifecycle.list(100))['services']).toEqual([]);
        const theirs = await other.lifecycle.seed(seedCommand());
        expect(theirs['service_id']).not.toBe(service['service_id']);
      });
    });

    describe('registry port', () => {
      // The services update a service row only under its lock, right after reading it: the
      // compare-and-change is the port's own word, checked here directly.
      it('updates a service row only at the expected revision', async () => {
        const serviceId = await designed();
        const stale = await storage.registry.write(async (tx) => {
          const row = (await tx.getService('agent-a', serviceId))!;
          return tx.updateService({ ...row, intentDescription: 'Changed.' }, row.serviceRevision - 1n);
        });
        expect(stale).toBe(false);
        const inspected = await app.lifecycle.inspect(serviceId);
        expect(inspected).toHaveProperty('intent_description');
        expect(inspected['intent_description']).not.toBe('Changed.');
        const fresh = await storage.registry.write(async (tx) => {
          const row = (await tx.getService('agent-a', serviceId))!;
          return tx.updateService(row, row.serviceRevision);
        });
        expect(fresh).toBe(true);
      });
    });

    describe('list and inspect', () => {
      it('lists in creation order up to the limit', async () => {
        const a = await app.lifecycle.seed(seedCommand('a', 'alpha'));
        const b = await app.lifecycle.seed(seedCommand('b', 'beta'));
        const c = await app.lifecycle.seed(seedCommand('c', 'gamma'));
        const all = (await app.lifecycle.list(100))['services'] as JsonObject[];
        expect(all.map((s) => s['service_id'])).toEqual([a['service_id'], b['service_id'], c['service_id']]);
        expect(((await app.lifecycle.list(2))['services'] as JsonObject[]).length).toBe(2);
      });

      it('lists by creation time, not by service id', async () => {
        // The id generator of a later app sorts after this one's: the service
        // created first gets the larger id.
        const later = appOver(storage, { clock: app.clock });
        const first = await later.lifecycle.seed(seedCommand('a', 'alpha'));
        const second = await app.lifecycle.seed(seedCommand('b', 'beta'));
        expect((first['service_id'] as string) > (second['service_id'] as string)).toBe(true);
        const all = (await app.lifecycle.list(100))['services'] as JsonObject[];
        expect(all.map((s) => s['service_id'])).toEqual([first['service_id'], second['service_id']]);
      });

      it('inspects a known service and answers not_found otherwise', async () => {
        const service = await app.lifecycle.seed(seedCommand());
        expect(await app.lifecycle.inspect(service['service_id'] as string)).toEqual(service);
        await rejects(app.lifecycle.inspect('11111111-1111-4111-8111-111111111111'), 'not_found');
      });
    });

    describe('design', () => {
      it('stores the manifest at revision 2 without creating storage', async () => {
        const seeded = await app.lifecycle.seed(seedCommand());
        const service = await app.lifecycle.design({ serviceId: seeded['service_id'] as string, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
        expect(service).toMatchObject({ design_state: 'seeded', schema_version: 1n, service_revision: 2n, storage: null });
        expect((service['schema'] as JsonObject)['manifest_version']).toBe(2n);
      });

      it('refuses unknown services, a second design, and a changed request under the key', async () => {
        await rejects(app.lifecycle.design({ serviceId: '11111111-1111-4111-8111-111111111111', manifest: manifest(notesManifest()), idempotencyKey: 'd0' }), 'not_found');
        const serviceId = await designed();
        await rejects(app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd2' }), 'invalid_state');
        await rejects(app.lifecycle.design({ serviceId, manifest: manifest(notesManifestV2()), idempotencyKey: 'design-1' }), 'conflict');
        // The same key under another registry operation is a conflict too.
        await rejects(app.lifecycle.seed({ ...seedCommand('design-1') }), 'conflict');
      });

      it('replays a completed design', async () => {
        const seeded = await app.lifecycle.seed(seedCommand());
        const command = { serviceId: seeded['service_id'] as string, manifest: manifest(notesManifest()), idempotencyKey: 'd' };
        const first = await app.lifecycle.design(command);
        expect(await app.lifecycle.design(command)).toEqual(first);
      });
    });

    describe('materialise', () => {
      it('materialises at revision 3 with a storage locator', async () => {
        const serviceId = await designed();
        const service = await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
        expect(service).toMatchObject({ design_state: 'materialised', service_revision: 3n, recovery_state: 'clear', storage: { backend: storage.backend, namespace: `svc_${serviceId.replaceAll('-', '')}` } });
        expect(service['materialised_at']).toBe(service['updated_at']);
      });

      it('answers stale_revision for unknown services and mismatched preconditions', async () => {
        await rejects(app.lifecycle.materialise({ serviceId: '11111111-1111-4111-8111-111111111111', expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' }), 'stale_revision');
        const seeded = await app.lifecycle.seed(seedCommand());
        await rejects(app.lifecycle.materialise({ serviceId: seeded['service_id'] as string, expectedServiceRevision: 1n, expectedSchemaVersion: 1n, idempotencyKey: 'm' }), 'stale_revision');
        const serviceId = await designed();
        await rejects(app.lifecycle.materialise({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, idempotencyKey: 'm' }), 'stale_revision');
        await rejects(app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 2n, idempotencyKey: 'm' }), 'stale_revision');
      });

      it('replays, rejects a changed request, and refuses a second materialise', async () => {
        const serviceId = await designed();
        const command = { serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' };
        const first = await app.lifecycle.materialise(command);
        expect(await app.lifecycle.materialise(command)).toEqual(first);
        await rejects(app.lifecycle.materialise({ ...command, expectedServiceRevision: 3n }), 'changed_fingerprint');
        await rejects(app.lifecycle.materialise({ ...command, expectedServiceRevision: 3n, idempotencyKey: 'm2' }), 'unsupported_transition');
      });

      it('leaves a pending intent after a crash, which the same key resumes and other keys wait for', async () => {
        const serviceId = await designed();
        const command = await materialiseCrashingAt(serviceId, 'materialise:admitted');

        const restarted = await location.open();
        try {
          const fresh = appOver(restarted);
          expect((await fresh.lifecycle.inspect(serviceId))['recovery_state']).toBe('pending');
          await rejects(fresh.lifecycle.materialise({ ...command, idempotencyKey: 'other' }), 'operation_in_progress');
          await rejects(fresh.records.create({ serviceId, entityName: 'project', record: { name: 'x' }, idempotencyKey: 'r' }), 'storage_busy');
          const done = await fresh.lifecycle.materialise(command);
          expect(done).toMatchObject({ design_state: 'materialised', service_revision: 3n, recovery_state: 'clear' });
          expect((await fresh.lifecycle.inspect(serviceId))['recovery_state']).toBe('clear');
        } finally {
          await restarted.close();
        }
      });

      it('freezes a pending intent whose service moved under it, without any physical step', async () => {
        const serviceId = await designed();
        const command = await materialiseCrashingAt(serviceId, 'materialise:admitted');
        // The row moves on behind the intent's back (nothing in the product does this while an intent is pending).
        await storage.registry.write(async (tx) => {
          const row = (await tx.getService('agent-a', serviceId))!;
          return tx.updateService({ ...row, serviceRevision: row.serviceRevision + 1n }, row.serviceRevision);
        });
        let touched = 0;
        const watched = appOver(
          overriding(storage, {
            stores: overriding(storage.stores, {
              observe: async (...args) => {
                touched++;
                return storage.stores.observe(...args);
              },
            }),
          }),
        );
        await rejects(watched.lifecycle.materialise(command), 'recovery_required');
        expect(touched).toBe(0);
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ design_state: 'seeded', storage: null, service_revision: 3n, recovery_state: 'recovery_required' });
      });

      it('freezes the intent when the service moved while its layout was being created', async () => {
        const serviceId = await designed();
        const moving = appOver(
          overriding(storage, {
            stores: overriding(storage.stores, {
              materialise: async (...args) => {
                await storage.stores.materialise(...args);
                await storage.registry.write(async (tx) => {
                  const row = (await tx.getService('agent-a', serviceId))!;
                  return tx.updateService({ ...row, serviceRevision: row.serviceRevision + 1n }, row.serviceRevision);
                });
              },
            }),
          }),
        );
        await rejects(moving.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' }), 'recovery_required');
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ design_state: 'seeded', storage: null, service_revision: 3n, recovery_state: 'recovery_required' });
      });

      it('finishes the work when a crash hit after the layout was created', async () => {
        const serviceId = await designed();
        const command = await materialiseCrashingAt(serviceId, 'materialise:applied');
        expect((await app.lifecycle.inspect(serviceId))['design_state']).toBe('seeded');
        expect(await app.lifecycle.materialise(command)).toMatchObject({ design_state: 'materialised', service_revision: 3n });
      });

      it('converges when the same request races itself', async () => {
        const serviceId = await designed();
        const command = { serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' };
        const outcomes = await Promise.allSettled([app.lifecycle.materialise(command), app.lifecycle.materialise(command), app.lifecycle.materialise(command)]);
        const settled = await app.lifecycle.materialise(command);
        for (const outcome of outcomes) {
          if (outcome.status === 'fulfilled') expect(outcome.value).toEqual(settled);
          else expect(['storage_busy', 'operation_uncertain']).toContain((outcome.reason as { code: string }).code);
        }
      });

      it('materialises and evolves relationships named like the NOT NULL constraints PostgreSQL 18 generates', async () => {
        // PostgreSQL 18 names a column's NOT NULL constraint <table>_<column>_not_null,
        // in the namespace that the relationships' foreign keys of that table share.
        const seeded = await app.lifecycle.seed(seedCommand());
        const serviceId = seeded['service_id'] as string;
        const linked = (name: string, extra: JsonObject[] = []): JsonObject => ({
          name,
          attributes: [...serverManaged(), { name: 'title', type: 'string', required: true }, { name: 'a', type: 'uuid' }, { name: 'b', type: 'uuid' }, ...extra],
        });
        const relationship = (name: string, from: string, field: string, to: string): JsonObject => ({ name, from: { entity: from, field }, to: { entity: to, field: 'id' }, on_delete: 'restrict' });
        const first: JsonObject = {
          manifest_version: 2n,
          schema_version: 1n,
          entities: [linked('note'), linked('topic')],
          relationships: [relationship('note_owner_id_not_null', 'note', 'a', 'topic'), relationship('note_title_not_null', 'note', 'b', 'note')],
        };
        await app.lifecycle.design({ serviceId, manifest: manifest(first), idempotencyKey: 'design-1' });
        const service = await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'mat-1' });
        expect(service).toMatchObject({ design_state: 'materialised', recovery_state: 'clear' });
        const topic = (await app.records.create({ serviceId, entityName: 'topic', record: { title: 't' }, idempotencyKey: 'r1' }))['record'] as JsonObject;
        await app.records.create({ serviceId, entityName: 'note', record: { title: 'n', a: topic['id'] as string }, idempotencyKey: 'r2' });
        const second: JsonObject = {
          ...first,
          schema_version: 2n,
          entities: [...(first['entities'] as JsonObject[]), linked('link', [{ name: 'target', type: 'uuid', required: true }])],
          relationships: [...(first['relationships'] as JsonObject[]), relationship('link_target_not_null', 'link', 'target', 'topic'), relationship('link_id_not_null', 'link', 'a', 'note')],
          migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['add link'] }],
        };
        const evolved = await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(second), idempotencyKey: 'evolve-1' });
        expect(evolved).toMatchObject({ schema_version: 2n, recovery_state: 'clear' });
        await app.records.create({ serviceId, entityName: 'link', record: { title: 'l', target: topic['id'] as string }, idempotencyKey: 'r3' });
        await rejects(app.records.delete({ serviceId, entityName: 'topic', recordId: topic['id'] as string, expectedRecordVersion: 1n, idempotencyKey: 'r4' }), 'constraint_violation');
      });
    });

    describe('recovery-required services and not_found messages', () => {
      it('a recovery-required intent refuses materialise/evolve under other keys, keeps data tools out and shows in seed replays', async () => {
        const serviceId = await materialised();
        // An intent of another key left recovery-required (a lost finalise race).
        await storage.registry.write(async (tx) => {
          await tx.insertClaim({
            principalId: 'agent-a',
            idempotencyKey: 'frozen',
            kind: 'evolve',
            fingerprint: 'f'.repeat(64),
            serviceId,
            phase: 'recovery_required',
            intent: { service_id: serviceId },
            result: null,
            createdAt: 1_800_000_000_000_100n,
            updatedAt: 1_800_000_000_000_100n,
          });
        });
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ recovery_state: 'recovery_required', service_revision: 3n });
        await rejects(app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e-other' }), 'recovery_required');
        // Precedence (contract §5.8, §5.9): a state that does not allow the request is
        // refused first; the other key's intent comes before the evolve target's acceptance.
        await rejects(app.lifecycle.materialise({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, idempotencyKey: 'm-other' }), 'unsupported_transition');
        const removed = notesManifestV2();
        const entities = removed['entities'] as JsonObject[];
        const note = entities[1] as JsonObject;
        entities[1] = { ...note, attributes: (note['attributes'] as JsonObject[]).filter((attribute) => attribute['name'] !== 'aliases') };
        await rejects(app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(removed), idempotencyKey: 'e-removed' }), 'recovery_required');
        // Data tools on a recovery-required service: storage_unavailable (contract §4 error table), not busy.
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null }), 'storage_unavailable');
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'r-frozen' }), 'storage_unavailable');
        // Nothing moved, and the refused key was not consumed.
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ schema_version: 1n, service_revision: 3n });
        // A seed/design replay carries the current recovery state, not the stored one.
        expect(await app.lifecycle.seed(seedCommand())).toMatchObject({ service_id: serviceId, recovery_state: 'recovery_required' });
        expect(await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'design-1' })).toMatchObject({ recovery_state: 'recovery_required' });
      });

      it('a seed replay shows a pending intent of the service as pending', async () => {
        const serviceId = await designed();
        await materialiseCrashingAt(serviceId, 'materialise:admitted');
        expect(await app.lifecycle.seed(seedCommand())).toMatchObject({ service_id: serviceId, recovery_state: 'pending', service_revision: 1n });
      });

      it('maps storage failures: a store unreachable before any step is storage_unavailable and leaves the intent pending, a later failure is operation_uncertain, an incompatible store freezes the intent, busy stays busy', async () => {
        const serviceId = await designed();
        const command = { serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' };
        const withStores = (overrides: Partial<StoragePorts['stores']>) => appOver(overriding(storage, { stores: overriding(storage.stores, overrides) }));
        // Observed unreachable before any physical step (ops spec §4.2): storage_unavailable; the intent stays prepared.
        await rejects(withStores({ observe: async () => ({ state: 'unavailable' }) }).lifecycle.materialise(command), 'storage_unavailable');
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ design_state: 'seeded', recovery_state: 'pending' });
        // Storage lost after admission otherwise: the outcome is uncertain (contract §5.2).
        const lost = withStores({
          observe: async () => {
            throw new StorageFailure('unavailable');
          },
        });
        await rejects(lost.lifecycle.materialise(command), 'operation_uncertain');
        const busy = appOver(
          overriding(storage, {
            registry: overriding(storage.registry, {
              read: async () => {
                throw new StorageFailure('busy');
              },
            }),
          }),
        );
        await rejects(busy.lifecycle.inspect(serviceId), 'storage_busy');
        // The same key completes the intent once storage is back.
        expect(await app.lifecycle.materialise(command)).toMatchObject({ design_state: 'materialised', service_revision: 3n, recovery_state: 'clear' });

        // A store found incompatible by the physical step: the intent becomes recovery-required, the service does not move.
        const other = (await app.lifecycle.seed(seedCommand('seed-2', 'other')))['service_id'] as string;
        await app.lifecycle.design({ serviceId: other, manifest: manifest(notesManifest()), idempotencyKey: 'design-2' });
        const incompatible = withStores({
          materialise: async () => {
            throw new StorageFailure('incompatible');
          },
        });
        await rejects(incompatible.lifecycle.materialise({ ...command, serviceId: other, idempotencyKey: 'm-2' }), 'recovery_required');
        expect(await app.lifecycle.inspect(other)).toMatchObject({ design_state: 'seeded', service_revision: 2n, storage: null, recovery_state: 'recovery_required' });
        // Its own key is refused at admission too: the frozen intent is never worked on again.
        let touched = 0;
        const watched = withStores({
          observe: async (...args) => {
            touched++;
            return storage.stores.observe(...args);
          },
        });
        await rejects(watched.lifecycle.materialise({ ...command, serviceId: other, idempotencyKey: 'm-2' }), 'recovery_required');
        expect(touched).toBe(0);
      });

      it('registry tools and data tools name an unknown service with their own not_found message', async () => {
        const unknown = '11111111-1111-4111-8111-111111111111';
        const registryMessage = 'The requested service was not found.';
        const dataMessage = 'The requested record or branch was not found.';
        await expect(app.lifecycle.inspect(unknown)).rejects.toMatchObject({ code: 'not_found', message: registryMessage });
        await expect(app.lifecycle.design({ serviceId: unknown, manifest: manifest(notesManifest()), idempotencyKey: 'd-unknown' })).rejects.toMatchObject({ code: 'not_found', message: registryMessage });
        await expect(app.records.list({ serviceId: unknown, entityName: 'note', limit: 10, cursor: null, branch: null })).rejects.toMatchObject({ code: 'not_found', message: dataMessage });
        await expect(app.records.create({ serviceId: unknown, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'r-unknown' })).rejects.toMatchObject({ code: 'not_found', message: dataMessage });
      });
    });

    describe('evolve', () => {
      it('applies an adjacent additive manifest', async () => {
        const serviceId = await materialised();
        const before = await app.lifecycle.inspect(serviceId);
        const service = await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e' });
        expect(service).toMatchObject({ schema_version: 2n, service_revision: 4n, design_state: 'materialised', materialised_at: before['materialised_at'], storage: before['storage'] });
        const created = await app.records.create({ serviceId, entityName: 'person', record: { full_name: 'Ada' }, idempotencyKey: 'p' });
        expect((created['record'] as JsonObject)['entity_name']).toBe('person');
      });

      it('keeps only the current schema version of a service parsed, so a long-lived server does not hold every version it met', async () => {
        const serviceId = await materialised();
        const row = async () => (await storage.registry.read((tx) => tx.getService('agent-a', serviceId))) as ServiceRow;
        const v1Row = await row();
        const v1 = app.lifecycle.manifestOf(v1Row);
        expect(app.lifecycle.manifestOf(v1Row)).toBe(v1);
        await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e' });
        const v2Row = await row();
        const v2 = app.lifecycle.manifestOf(v2Row);
        expect(app.lifecycle.manifestOf(v2Row)).toBe(v2);
        // Version 1 was let go when version 2 was parsed: asking again parses it anew.
        const v1Again = app.lifecycle.manifestOf(v1Row);
        expect(v1Again).toEqual(v1);
        expect(v1Again).not.toBe(v1);
      });

      it('rejects non-additive targets, stale preconditions and unmaterialised services', async () => {
        const serviceId = await designed();
        await rejects(app.lifecycle.evolve({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e0' }), 'unsupported_transition');
        await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
        await rejects(app.lifecycle.evolve({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e1' }), 'stale_revision');
        // The right revision with a schema version the service is not at.
        await rejects(app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 2n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e1b' }), 'stale_revision');
        const removed = notesManifestV2();
        const entities = removed['entities'] as JsonObject[];
        const note = entities[1] as JsonObject;
        entities[1] = { ...note, attributes: (note['attributes'] as JsonObject[]).filter((attribute) => attribute['name'] !== 'aliases') };
        await rejects(app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(removed), idempotencyKey: 'e2' }), 'unsupported_transition');
        expect((await app.lifecycle.inspect(serviceId))['recovery_state']).toBe('clear');
      });

      it('refuses at admission a unique index over duplicate data, leaving the service clear', async () => {
        const serviceId = await materialised();
        for (const key of ['a', 'b']) await app.records.create({ serviceId, entityName: 'note', record: { title: 'same' }, idempotencyKey: key });
        // Refused before any intent is admitted: the store is never asked to evolve.
        let evolves = 0;
        const watched = appOver(
          overriding(storage, {
            stores: overriding(storage.stores, {
              evolve: async (...args) => {
                evolves++;
                return storage.stores.evolve(...args);
              },
            }),
          }),
        );
        await rejects(
          watched.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2({ uniqueOnTitle: true })), idempotencyKey: 'e' }),
          'unsupported_transition',
        );
        expect(evolves).toBe(0);
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ recovery_state: 'clear', schema_version: 1n, service_revision: 3n });
        const ok = await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e2' });
        expect(ok['schema_version']).toBe(2n);
      });

      it('accepts a unique index over a field the same evolve adds, whatever the existing rows hold', async () => {
        const serviceId = await materialised();
        for (const key of ['a', 'b']) await app.records.create({ serviceId, entityName: 'note', record: { title: 'same' }, idempotencyKey: key });
        const target = notesManifestV2();
        // note.summary is new in the target: every existing row holds null there.
        target['indices'] = [...(target['indices'] as JsonObject[]), { name: 'note_summary_unique', entity: 'note', fields: ['summary'], unique: true }];
        const evolved = await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(target), idempotencyKey: 'e' });
        expect(evolved).toMatchObject({ schema_version: 2n, recovery_state: 'clear' });
      });

      it('drops the intent and refuses the evolve when a duplicate slipped in after the admission check', async () => {
        const serviceId = await materialised();
        for (const key of ['a', 'b']) await app.records.create({ serviceId, entityName: 'note', record: { title: 'same' }, idempotencyKey: key });
        // No precheck: as if the duplicate was written between the check and the DDL (D7).
        const unchecked = new LifecycleService({
          registry: storage.registry,
          stores: storage.stores,
          backend: storage.backend,
          principalId: 'agent-a',
          createdVia: 'mcp',
          manifests: MANIFEST_RULES,
          nowMicros: () => app.clock.nowMicros() + 1000n,
          newServiceId: () => '00000000-0000-4000-8000-000000000001',
          sha256,
          canonical: fingerprintText,
        });
        const command = { serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2({ uniqueOnTitle: true })), idempotencyKey: 'e' };
        // The failed DDL changed nothing: refused as at admission, the service left clear and writable.
        await rejects(unchecked.evolve(command), 'unsupported_transition');
        await rejects(unchecked.evolve(command), 'unsupported_transition');
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ recovery_state: 'clear', schema_version: 1n, service_revision: 3n });
        const records = (await app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null }))['records'] as JsonObject[];
        expect(records).toHaveLength(2);
        // Once the agent mends the data, the same key evolves.
        await app.records.delete({ serviceId, entityName: 'note', recordId: records[1]!['id'] as string, expectedRecordVersion: 1n, idempotencyKey: 'fix' });
        expect(await unchecked.evolve(command)).toMatchObject({ schema_version: 2n, service_revision: 4n, recovery_state: 'clear' });
      });

      it('replays and rejects a changed request under the key', async () => {
        const serviceId = await materialised();
        const command = { serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'e' };
        const first = await app.lifecycle.evolve(command);
        expect(await app.lifecycle.evolve(command)).toEqual(first);
        await rejects(app.lifecycle.evolve({ ...command, manifest: manifest(notesManifestV2({ uniqueOnTitle: true })) }), 'changed_fingerprint');
        await rejects(app.lifecycle.evolve({ ...command, expectedSchemaVersion: 2n }), 'changed_fingerprint');
        await rejects(app.lifecycle.evolve({ ...command, expectedServiceRevision: 4n }), 'changed_fingerprint');
      });
    });
  });
}
