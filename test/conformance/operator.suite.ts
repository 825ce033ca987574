// Conformance: the operator ports and use cases (operations spec §1.9, §4.3,
// §5.9-5.10) over any adapter that offers OperatorStoragePorts: lifecycle
// transitions and the write fence, export/import between two locations of
// the same backend, purge and tombstones, and the canonical whole-store reads.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Application, Operator, OperatorStoragePorts } from '../../src/aipcs/core/application.js';
import { TRANSFER_CODEC } from '../../src/aipcs/compose.js';
import { AipcsError } from '../../src/aipcs/contract/error-codes.js';
import { storeLayoutOf } from '../../src/aipcs/core/layout.js';
import { namespaceOf } from '../../src/aipcs/core/lifecycle.js';
import { UnfinishedOperation, type TransitionKind } from '../../src/aipcs/core/operations.js';
import { StorageFailure, TOMBSTONED_FINGERPRINT, type EntityLayout, type StoredRecord } from '../../src/aipcs/core/ports.js';
import type { TransferCodec } from '../../src/aipcs/core/transfer-codec.js';
import { writeWithLimits } from '../../src/aipcs/portable/bundle-writer.js';
import { DEFAULT_LIMITS } from '../../src/aipcs/portable/format.js';
import { createHash } from 'node:crypto';

const sha256Bytes = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
import type { JsonObject } from '../../src/common/json.js';
import { notesManifest, notesManifestV2, systemColumnNamesManifest } from '../support/manifests.js';
import { overriding, testApplication, testOperator } from '../support/operator.js';
import { manifest } from './harness.js';

export interface OperatorStorageLocation {
  open(): Promise<OperatorStoragePorts>;
  destroy(): Promise<void>;
  /** Deletes the write fence's row of a service store behind the adapter's back (a damaged store); resolves with the rows deleted. */
  removeFenceRow(namespace: string): Promise<number>;
  /** Sets the write fence's generation of a service store behind the adapter's back, keeping its state; resolves with the rows changed. */
  setFenceGeneration(namespace: string, generation: bigint): Promise<number>;
}

export interface OperatorStorageHarness {
  readonly name: string;
  create(): Promise<OperatorStorageLocation>;
}

function operatorOver(
  storage: OperatorStoragePorts,
  principalId = 'agent-a',
  codec: TransferCodec = TRANSFER_CODEC,
  startMicros = 1_800_000_000_000_000n,
  checkpoint?: (name: string) => void,
): Operator {
  return testOperator(storage, { principalId, codec, startMicros, ...(checkpoint ? { checkpoint } : {}) });
}

/** The same storage as an MCP process would use it (created_via mcp). */
function mcpOver(storage: OperatorStoragePorts, principalId = 'agent-a', startMicros = 1_700_000_000_000_000n): Application {
  return testApplication(storage, { principalId, startMicros });
}

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** Exports to memory; with `gate`, the export waits at its first chunk until the gate opens. */
async function exportBytes(operator: Operator, serviceId: string, revision: bigint, operationId: string, gate?: Promise<void>): Promise<{ bytes: Buffer; result: JsonObject }> {
  const chunks: Uint8Array[] = [];
  const result = await (operator.transfer as NonNullable<Operator['transfer']>).export({ serviceId, expectedServiceRevision: revision, operationId }, async (chunk) => {
    if (chunks.length === 0 && gate) await gate;
    chunks.push(Buffer.from(chunk));
  });
  return { bytes: Buffer.concat(chunks), result };
}

async function importBytes(operator: Operator, bytes: Buffer, operationId: string): Promise<JsonObject> {
  const artefact = await TRANSFER_CODEC.read(async function* () {
    yield bytes;
  });
  return (operator.transfer as NonNullable<Operator['transfer']>).import(operationId, artefact);
}

export function operatorSuite(harness: OperatorStorageHarness): void {
  describe(`operator conformance (${harness.name})`, () => {
    let location: OperatorStorageLocation;
    let storage: OperatorStoragePorts;
    let app: ReturnType<typeof mcpOver>;
    let operator: Operator;

    beforeEach(async () => {
      location = await harness.create();
      storage = await location.open();
      app = mcpOver(storage);
      operator = operatorOver(storage);
    });

    afterEach(async () => {
      await storage.close();
      await location.destroy();
    });

    async function materialised(domainName = 'notes'): Promise<string> {
      const seeded = await app.lifecycle.seed({ domainName, domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: `seed-${domainName}` });
      const serviceId = seeded['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: `design-${domainName}` });
      await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: `mat-${domainName}` });
      return serviceId;
    }

    const locatorOf = (serviceId: string) => ({ backend: storage.backend, namespace: namespaceOf(serviceId) });

    describe('lifecycle and the write fence', () => {
      it('moves the fence with each transition and the revision by one', async () => {
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 1n, state: 'open' });
        const suspended = await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        expect(suspended).toMatchObject({ operation: 'suspend', operation_id: OP(1), service: { operational_status: 'suspended', service_revision: 4n } });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 2n, state: 'closed' });
        await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(2) });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 3n, state: 'open' });
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 5n, operationId: OP(3) });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 4n, state: 'closed' });
        // Every transition moves the generation (spec §4.3), also where the fence stays closed.
        await operator.operations.transition({ kind: 'restore', serviceId, expectedServiceRevision: 6n, operationId: OP(4) });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 5n, state: 'closed' });
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'suspended', service_revision: 7n, recovery_state: 'clear' });
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 7n, operationId: OP(5) });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 6n, state: 'closed' });
        // A replay moves nothing.
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 7n, operationId: OP(5) });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 6n, state: 'closed' });
      });

      it('a non-active service refuses design (invalid_state), materialise and evolve (unsupported_transition) and data reads (storage_unavailable), consuming no key', async () => {
        // Contract §5.1: "A non-active service refuses design (invalid_state),
        // materialise/evolve (unsupported_transition) and all data tools (storage_unavailable)."
        const seeded = (await app.lifecycle.seed({ domainName: 'seeded', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 'seed-seeded' }))['service_id'] as string;
        await operator.operations.transition({ kind: 'suspend', serviceId: seeded, expectedServiceRevision: 1n, operationId: OP(1) });
        await rejects(app.lifecycle.design({ serviceId: seeded, manifest: manifest(notesManifest()), idempotencyKey: 'design-suspended' }), 'invalid_state');
        expect(await app.lifecycle.inspect(seeded)).toMatchObject({ schema: null, service_revision: 2n, operational_status: 'suspended' });

        const designedId = (await app.lifecycle.seed({ domainName: 'designed', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 'seed-designed' }))['service_id'] as string;
        await app.lifecycle.design({ serviceId: designedId, manifest: manifest(notesManifest()), idempotencyKey: 'design-designed' });
        await operator.operations.transition({ kind: 'suspend', serviceId: designedId, expectedServiceRevision: 2n, operationId: OP(2) });
        await rejects(app.lifecycle.materialise({ serviceId: designedId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, idempotencyKey: 'mat-suspended' }), 'unsupported_transition');
        expect(await app.lifecycle.inspect(designedId)).toMatchObject({ design_state: 'seeded', storage: null, service_revision: 3n, recovery_state: 'clear' });

        const serviceId = await materialised();
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(3) });
        await rejects(app.lifecycle.evolve({ serviceId, expectedServiceRevision: 4n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'evolve-suspended' }), 'unsupported_transition');
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ schema_version: 1n, service_revision: 4n, recovery_state: 'clear' });
        await rejects(app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null }), 'storage_unavailable');
        await rejects(app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit: 10, cursor: null }), 'storage_unavailable');
        await rejects(app.discovery.summary({ serviceId, sample: 1 }), 'storage_unavailable');
        // Operator transitions from the wrong status (ops spec §1.9.3): a second suspend, and a purge of a service that is not archived.
        await rejects(operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 4n, operationId: OP(5) }), 'unsupported_transition');
        await rejects(operator.operations.purge({ serviceId, expectedServiceRevision: 4n, operationId: OP(6), authority: { kind: 'explicit_override' } }), 'unsupported_transition');
        expect(await storage.stores.isAbsent(locatorOf(serviceId))).toBe(false);
        // None of the refused keys was bound: once resumed, the same keys succeed.
        await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(4) });
        expect(await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 5n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'evolve-suspended' })).toMatchObject({ schema_version: 2n, service_revision: 6n });
      });

      it('replays, refuses changed requests, stale revisions and unsupported transitions', async () => {
        const serviceId = await materialised();
        const first = await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        expect(await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) })).toEqual(first);
        await rejects(operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 3n, operationId: OP(1) }), 'changed_fingerprint');
        await rejects(operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 3n, operationId: OP(2) }), 'stale_revision');
        await rejects(operator.operations.transition({ kind: 'restore', serviceId, expectedServiceRevision: 4n, operationId: OP(2) }), 'unsupported_transition');
        // The MCP seed key is in the same ledger.
        await rejects(operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: 'seed-notes' }), 'changed_fingerprint');
      });

      it('admits each transition only from its source statuses (ops spec §1.9.3)', async () => {
        const serviceId = await materialised();
        let n = 1;
        const refused = async (revision: bigint, kinds: readonly TransitionKind[]): Promise<void> => {
          for (const kind of kinds) await rejects(operator.operations.transition({ kind, serviceId, expectedServiceRevision: revision, operationId: OP(n++) }), 'unsupported_transition');
        };
        await refused(3n, ['resume', 'restore']);
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(n++) });
        await refused(4n, ['suspend', 'restore']);
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 4n, operationId: OP(n++) });
        await refused(5n, ['suspend', 'resume', 'archive']);
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'archived', service_revision: 5n, recovery_state: 'clear' });
        // An active service archives directly.
        const other = (await app.lifecycle.seed({ domainName: 'other', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 'seed-other' }))['service_id'] as string;
        expect(await operator.operations.transition({ kind: 'archive', serviceId: other, expectedServiceRevision: 1n, operationId: OP(n++) })).toMatchObject({ service: { operational_status: 'archived' } });
      });

      it('refuses a transition in admission order (ops spec §4.3): revision, then source status and counters, then another intent', async () => {
        const serviceId = await materialised();
        // A wrong status with a stale revision is stale_revision.
        await rejects(operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 2n, operationId: OP(1) }), 'stale_revision');
        // Another key's frozen intent: a wrong status still answers unsupported_transition.
        const frozen = { principalId: 'agent-a', idempotencyKey: 'frozen', kind: 'evolve' as const, fingerprint: 'f'.repeat(64), serviceId, phase: 'recovery_required' as const, intent: { service_id: serviceId }, result: null, createdAt: 1n, updatedAt: 1n };
        await storage.registry.write((tx) => tx.insertClaim(frozen));
        await rejects(operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 3n, operationId: OP(2) }), 'unsupported_transition');
        await rejects(operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(3) }), 'recovery_required');
        // A revision at 2^63-1 is refused before the intent is looked at.
        const MAX = 9223372036854775807n;
        await storage.registry.write(async (tx) => {
          const row = (await tx.getService('agent-a', serviceId))!;
          return tx.updateService({ ...row, serviceRevision: MAX }, row.serviceRevision);
        });
        await rejects(operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: MAX, operationId: OP(4) }), 'unsupported_transition');
      });

      it('a fence change that loses its compare and leaves the fence short of the target keeps the transition pending (storage_busy)', async () => {
        const serviceId = await materialised();
        const lost = overriding(storage, { stores: overriding(storage.stores, { changeFence: async () => null }) });
        await rejects(operatorOver(lost).operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) }), 'storage_busy');
        expect(await storage.stores.readFence(locatorOf(serviceId))).toEqual({ generation: 1n, state: 'open' });
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'active', service_revision: 3n, recovery_state: 'pending' });
        // The same operation id finishes it.
        expect(await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) })).toMatchObject({ service: { operational_status: 'suspended' } });
      });

      it('compare-and-change of the fence refuses a stale expectation and changes nothing', async () => {
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        expect(await storage.stores.changeFence(locator, { generation: 7n, state: 'open' }, 'closed')).toBeNull();
        // The state is compared as well as the generation.
        expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'closed' }, 'open')).toBeNull();
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 1n, state: 'open' });
        expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed')).toEqual({ generation: 2n, state: 'closed' });
      });

      it('an evolve moves the generation and keeps the state: a closed fence stays closed', async () => {
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed')).toEqual({ generation: 2n, state: 'closed' });
        await storage.stores.evolve(locator, storeLayoutOf(manifest(notesManifest())), storeLayoutOf(manifest(notesManifestV2())));
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 3n, state: 'closed' });
        expect(await storage.stores.changeFence(locator, { generation: 3n, state: 'closed' }, 'open')).toEqual({ generation: 4n, state: 'open' });
      });

      it('materialise writes one fence row; a store without it reads as open at generation 1, takes writes, and its first change writes the row', async () => {
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 1n, state: 'open' });
        // The row is there (PostgreSQL locks it to order a write's admission against a transition).
        expect(await location.removeFenceRow(locator.namespace)).toBe(1);
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 1n, state: 'open' });
        const created = await app.records.create({ serviceId, entityName: 'note', record: { title: 'kept' }, idempotencyKey: 'no-fence-row' });
        expect(created).toMatchObject({ record: { fields: { title: 'kept' } } });
        expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed')).toEqual({ generation: 2n, state: 'closed' });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 2n, state: 'closed' });
        expect(await location.removeFenceRow(locator.namespace)).toBe(1);
      });

      it('a write unit sees the fence: open only at the generation it names, never while closed', async () => {
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        const seen = () => storage.data.write(locator, 'agent-a', async (tx) => [await tx.fenceIsOpen(), await tx.fenceIsOpen(1n), await tx.fenceIsOpen(2n)]);
        expect(await seen()).toEqual([true, true, false]);
        await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed');
        expect(await seen()).toEqual([false, false, false]);
      });

      it('refuses a transition of a store whose fence generation is at 2^63-1, the same on retry, moving nothing', async () => {
        // Operations spec §3.2.6: generations only increase, to at most 2^63-1;
        // the fence and the revision both move on by one (D40), so the
        // transition is refused at admission, not left pending by a fence
        // change that cannot be written.
        const MAX = 9223372036854775807n;
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        expect(await location.setFenceGeneration(locator.namespace, MAX)).toBe(1);
        for (let attempt = 0; attempt < 2; attempt++) {
          await rejects(operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) }), 'unsupported_transition');
          await rejects(operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 3n, operationId: OP(2) }), 'unsupported_transition');
        }
        expect(await storage.stores.readFence(locator)).toEqual({ generation: MAX, state: 'open' });
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'active', service_revision: 3n, recovery_state: 'clear' });
        // The key was not consumed: with the fence one below, the same
        // command moves it to exactly 2^63-1, and the next transition is refused.
        expect(await location.setFenceGeneration(locator.namespace, MAX - 1n)).toBe(1);
        expect(await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) })).toMatchObject({
          operation: 'suspend',
          service: { operational_status: 'suspended', service_revision: 4n, recovery_state: 'clear' },
        });
        expect(await storage.stores.readFence(locator)).toEqual({ generation: MAX, state: 'closed' });
        await rejects(operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(3) }), 'unsupported_transition');
        expect(await storage.stores.readFence(locator)).toEqual({ generation: MAX, state: 'closed' });
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'suspended', service_revision: 4n, recovery_state: 'clear' });
      });

      it('answers storage_migration_required when a port reports that migration is required (§1.9.7, exit 3)', async () => {
        const serviceId = await materialised();
        const needsMigration: OperatorStoragePorts = {
          ...storage,
          registry: overriding(storage.registry, {
            write: async () => {
              throw new StorageFailure('migration_required');
            },
          }),
        };
        await rejects(operatorOver(needsMigration).operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) }), 'storage_migration_required');
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'active', service_revision: 3n, recovery_state: 'clear' });
      });

      it('a data write admitted while active cannot commit behind a closed fence', async () => {
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        await app.records.create({ serviceId, entityName: 'note', record: { title: 'Before' }, idempotencyKey: 'c1' });
        // The registry still says active: only the fence stands in the way.
        await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed');
        await rejects(app.records.create({ serviceId, entityName: 'note', record: { title: 'After' }, idempotencyKey: 'c2' }), 'storage_unavailable');
        // A fence that cannot be read for a busy store is storage_busy (retryable), not a closed fence
        // (where the registry reads the fence in its own snapshot, PostgreSQL, the stores port is not asked).
        if (!storage.registry.readWithFence) {
          const busyFence = async (): Promise<never> => {
            throw new StorageFailure('busy');
          };
          const busyStores = overriding(storage.stores, { readFence: busyFence, ...(storage.stores.peekFence ? { peekFence: busyFence } : {}) });
          await rejects(mcpOver(overriding(storage, { stores: busyStores })).records.create({ serviceId, entityName: 'note', record: { title: 'Busy' }, idempotencyKey: 'c2' }), 'storage_busy');
        }
        // Admission itself refuses the closed fence, before the request's own checks (an unknown entity).
        await rejects(app.records.create({ serviceId, entityName: 'unknown', record: { title: 'After' }, idempotencyKey: 'c2' }), 'storage_unavailable');
        // Closed after the admission read it open, just before the write unit: the unit's own fence check refuses.
        await storage.stores.changeFence(locator, { generation: 2n, state: 'closed' }, 'open');
        let closedLate = false;
        const late: OperatorStoragePorts = {
          ...storage,
          data: Object.assign(Object.create(storage.data) as OperatorStoragePorts['data'], {
            write: async <T>(...args: Parameters<OperatorStoragePorts['data']['write']>) => {
              if (!closedLate) closedLate = (await storage.stores.changeFence(locator, { generation: 3n, state: 'open' }, 'closed')) !== null;
              return storage.data.write(...args) as Promise<T>;
            },
          }),
          close: () => storage.close(),
        };
        await rejects(mcpOver(late).records.create({ serviceId, entityName: 'note', record: { title: 'Late' }, idempotencyKey: 'c3' }), 'storage_unavailable');
        expect(closedLate).toBe(true);
        const count = await storage.data.read(locator, 'agent-a', async (tx) => (await tx.historyPage(null, 100)).length);
        expect(count).toBe(1);
      });

      it('a mutation admitted before a suspend does not commit while a resume is pending', async () => {
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        await app.records.create({ serviceId, entityName: 'note', record: { title: 'Before' }, idempotencyKey: 'c1' });
        // A resume whose process dies after opening the fence: the registry
        // finalise never happens, the intent stays pending, the service suspended.
        let fenceMoved = false;
        const crashing: OperatorStoragePorts = {
          ...storage,
          registry: Object.assign(Object.create(storage.registry) as OperatorStoragePorts['registry'], {
            write: <T>(work: Parameters<OperatorStoragePorts['registry']['write']>[0]) =>
              fenceMoved ? Promise.reject(new StorageFailure('unavailable')) : (storage.registry.write(work) as Promise<T>),
          }),
          stores: Object.assign(Object.create(storage.stores) as OperatorStoragePorts['stores'], {
            changeFence: async (...args: Parameters<OperatorStoragePorts['stores']['changeFence']>) => {
              const changed = await storage.stores.changeFence(...args);
              fenceMoved = true;
              return changed;
            },
          }),
          close: () => storage.close(),
        };
        // Between the create's admission (service active) and its write unit,
        // the operator suspends the service and a resume gets as far as the fence.
        let interleaved = false;
        const late: OperatorStoragePorts = {
          ...storage,
          data: Object.assign(Object.create(storage.data) as OperatorStoragePorts['data'], {
            write: async <T>(...args: Parameters<OperatorStoragePorts['data']['write']>) => {
              if (!interleaved) {
                interleaved = true;
                await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
                await rejects(operatorOver(crashing).operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(2) }), 'storage_unavailable');
              }
              return storage.data.write(...args) as Promise<T>;
            },
          }),
          close: () => storage.close(),
        };
        // Its write unit finds the fence open at another generation and admits
        // it again (as after an evolve): the resume's intent is pending, so the
        // client is told to retry.
        await rejects(mcpOver(late).records.create({ serviceId, entityName: 'note', record: { title: 'Late' }, idempotencyKey: 'c2' }), 'storage_busy');
        expect(interleaved).toBe(true);
        expect(await storage.stores.readFence(locator)).toEqual({ generation: 3n, state: 'open' });
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'suspended', recovery_state: 'pending' });
        const titles = async () => (await storage.data.read(locator, 'agent-a', async (tx) => tx.historyPage(null, 100))).map((event) => event.after?.['title']);
        expect(await titles()).toEqual(['Before']);
        // Once the resume is retried and completes, mutations are admitted again.
        await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(2) });
        await app.records.create({ serviceId, entityName: 'note', record: { title: 'After' }, idempotencyKey: 'c3' });
        expect(await titles()).toEqual(['Before', 'After']);
      });
    });

    describe('inspection and canonical pages', () => {
      it('deletes only the deleted record\'s memberships, not those of the same id in another entity', async () => {
        // Ids are unique per entity: an imported store may hold a note and a
        // project with one id, each a member of branches of its own.
        const serviceId = await materialised();
        const locator = locatorOf(serviceId);
        const note = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'Shared id' }, idempotencyKey: 'c1' }))['record'] as JsonObject;
        const id = note['id'] as string;
        const branch = ((await app.branches.create({ serviceId, slug: 'b', title: 'B', intent: 'I', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b1' }))['branch'] as JsonObject)['id'] as string;
        await app.branches.assign({ serviceId, branchId: branch, role: 'primary', operation: 'assign', records: [{ entityName: 'note', recordId: id, expectedRecordVersion: 1n }], idempotencyKey: 'a1' });
        const project = storeLayoutOf(manifest(notesManifest())).entities.find((entity) => entity.name === 'project') as EntityLayout;
        const at = 1_750_000_000_000_000n;
        await storage.data.write(locator, 'agent-a', async (tx) => {
          await tx.insertRecord(project, { id, createdAt: at, updatedAt: at, createdVia: 'mcp', recordVersion: 1n, fields: { name: 'Same id', code: null } });
          await tx.putMembership('project', id, branch, 'primary', at);
        });
        await app.records.delete({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: 2n, idempotencyKey: 'd1' });
        const memberships = await storage.data.read(locator, 'agent-a', async (tx) => ({ note: await tx.getMembership('note', id, branch), project: await tx.getMembership('project', id, branch) }));
        expect(memberships).toEqual({ note: undefined, project: 'primary' });
      });

      it('inspects a store foundation, and an absent one', async () => {
        const serviceId = await materialised();
        expect(await storage.stores.inspect(locatorOf(serviceId))).toMatchObject({ status: 'ready', reason: null });
        const absent = locatorOf('0000aaaa-0000-4000-8000-000000000001');
        expect(await storage.stores.inspect(absent)).toMatchObject({ status: 'uninitialised', appliedRevision: 0n });
        expect(await storage.stores.isAbsent(absent)).toBe(true);
      });

      it('pages history and memberships in canonical order', async () => {
        const serviceId = await materialised();
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push(((await app.records.create({ serviceId, entityName: 'note', record: { title: `n${i}` }, idempotencyKey: `c${i}` }))['record'] as JsonObject)['id'] as string);
        const first = ids[0] as string;
        await app.records.update({ serviceId, entityName: 'note', recordId: first, updates: { title: 'changed' }, expectedRecordVersion: 1n, idempotencyKey: 'u1' });
        const branch = ((await app.branches.create({ serviceId, slug: 'b', title: 'B', intent: 'I', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b1' }))['branch'] as JsonObject)['id'] as string;
        await app.branches.assign({ serviceId, branchId: branch, role: 'related', operation: 'assign', records: ids.map((recordId) => ({ entityName: 'note', recordId, expectedRecordVersion: recordId === first ? 2n : 1n })), idempotencyKey: 'a1' });
        const locator = locatorOf(serviceId);
        const history = await storage.data.read(locator, 'agent-a', async (tx) => {
          const out = [];
          let after = null;
          for (;;) {
            const page = await tx.historyPage(after, 2);
            out.push(...page);
            const last = page.at(-1);
            if (page.length < 2 || !last) return out;
            after = { entityName: last.entityName, recordId: last.recordId, recordVersion: last.recordVersion };
          }
        });
        const keys = history.map((event) => `${event.entityName}/${event.recordId}/${event.recordVersion.toString().padStart(3, '0')}`);
        expect(keys).toEqual([...keys].sort());
        expect(history).toHaveLength(5 + 1 + 5);
        const memberships = await storage.data.read(locator, 'agent-a', async (tx) => {
          const one = await tx.membershipPage(null, 3);
          const two = await tx.membershipPage(one.at(-1) ?? null, 3);
          return [...one, ...two];
        });
        expect(memberships.map((row) => row.recordId)).toEqual([...ids].sort());
        expect(memberships.every((row) => row.branchId === branch && row.role === 'related' && row.entityName === 'note')).toBe(true);
      });

      it('pages memberships by branch, entity, record and role at every page size, each page full until the last', async () => {
        const serviceId = await materialised();
        // Projects are created first, so their ids sort before the notes': an
        // order by record before entity would put them first.
        const created = async (entityName: string, record: JsonObject, idempotencyKey: string) =>
          ((await app.records.create({ serviceId, entityName, record, idempotencyKey }))['record'] as JsonObject)['id'] as string;
        const projects = [await created('project', { name: 'p0' }, 'p0'), await created('project', { name: 'p1' }, 'p1')];
        const notes = [await created('note', { title: 'n0' }, 'n0'), await created('note', { title: 'n1' }, 'n1')];
        const branches: string[] = [];
        for (const slug of ['b0', 'b1']) {
          branches.push(((await app.branches.create({ serviceId, slug, title: slug, intent: 'I', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: slug }))['branch'] as JsonObject)['id'] as string);
        }
        const expected: string[] = [];
        for (const [b, branchId] of branches.entries()) {
          const role = b === 0 ? 'primary' : 'related';
          const targets = [...notes.map((recordId) => ({ entityName: 'note', recordId })), ...projects.map((recordId) => ({ entityName: 'project', recordId }))];
          await app.branches.assign({ serviceId, branchId, role, operation: 'assign', records: targets.map((target) => ({ ...target, expectedRecordVersion: BigInt(b + 1) })), idempotencyKey: `assign-${b}` });
          expected.push(...targets.map((target) => `${branchId} ${target.entityName} ${target.recordId} ${role}`));
        }
        expected.sort();
        const locator = locatorOf(serviceId);
        for (let size = 1; size <= expected.length + 1; size++) {
          const pages = await storage.data.read(locator, 'agent-a', async (tx) => {
            const out = [];
            let after = null;
            // Bounded, so a keyset that does not advance fails instead of looping.
            for (let pageCount = 0; pageCount <= expected.length; pageCount++) {
              const page = await tx.membershipPage(after, size);
              out.push(page.map((row) => `${row.branchId} ${row.entityName} ${row.recordId} ${row.role}`));
              after = page.at(-1) ?? null;
              if (page.length < size) break;
            }
            return out;
          });
          expect(pages.flat()).toEqual(expected);
          expect(pages.map((page) => page.length)).toEqual([...Array.from({ length: Math.floor(expected.length / size) }, () => size), expected.length % size]);
        }
      });
    });

    describe('export and import', () => {
      /** Replaces this test's location with a fresh one (some harnesses hold one location at a time). */
      async function freshLocation(principalId: string): Promise<Operator> {
        await storage.close();
        await location.destroy();
        location = await harness.create();
        storage = await location.open();
        app = mcpOver(storage, principalId);
        return operatorOver(storage, principalId);
      }

      it('an export run twice at once under one operation id never hands out bytes its receipt does not name; the slower one is operation_uncertain', async () => {
        const serviceId = await materialised();
        for (let i = 0; i < 5; i++) await app.records.create({ serviceId, entityName: 'note', record: { title: `Note ${i}` }, idempotencyKey: `twice-${i}` });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        // Another process: its own connections (the slower one holds its read of the store) and clock.
        const other = await location.open();
        let open = (): void => undefined;
        const slower = exportBytes(operatorOver(other, 'agent-a', TRANSFER_CODEC, 1_900_000_000_000_000n), serviceId, 4n, OP(2), new Promise<void>((resolve) => (open = resolve)));
        const faster = await exportBytes(operator, serviceId, 4n, OP(2)).finally(open);
        const rootOf = (bytes: Buffer): string => {
          const trailerStart = bytes.lastIndexOf(0x0a, bytes.length - 2) + 1;
          return sha256Bytes(bytes.subarray(0, trailerStart));
        };
        expect((faster.result['receipt'] as JsonObject)['bundle_root_sha256']).toBe(rootOf(faster.bytes));
        // The attempt that lost the race holds other bytes (another header time):
        // a concurrent same-key caller is told the outcome is uncertain (README,
        // operations spec 4.2), and the repetition replays the receipt's bytes.
        await expect(slower.finally(() => other.close())).rejects.toMatchObject({ code: 'operation_uncertain', retryable: true });
        const again = await exportBytes(operator, serviceId, 4n, OP(2));
        expect(rootOf(again.bytes)).toBe((again.result['receipt'] as JsonObject)['bundle_root_sha256']);
      });

      it('refuses to export a suspended service whose store fence is open (recovery_required), never with a receipt', async () => {
        const serviceId = await materialised();
        await app.records.create({ serviceId, entityName: 'note', record: { title: 'Behind an open fence' }, idempotencyKey: 'open-fence' });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const locator = locatorOf(serviceId);
        expect(await storage.stores.changeFence(locator, await storage.stores.readFence(locator), 'open')).toMatchObject({ state: 'open' });
        await rejects(exportBytes(operator, serviceId, 4n, OP(2)), 'recovery_required');
      });

      it('the slower of two same-key exports is operation_uncertain when the service moved on after the faster one completed', async () => {
        const serviceId = await materialised();
        for (let i = 0; i < 5; i++) await app.records.create({ serviceId, entityName: 'note', record: { title: `Note ${i}` }, idempotencyKey: `moved-${i}` });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const other = await location.open();
        let open = (): void => undefined;
        const slower = exportBytes(operatorOver(other, 'agent-a', TRANSFER_CODEC, 1_900_000_000_000_000n), serviceId, 4n, OP(2), new Promise<void>((resolve) => (open = resolve)));
        await exportBytes(operator, serviceId, 4n, OP(2));
        // The fence moves before the slower run re-checks it: its bytes are
        // not the receipt's, so it must not answer with that receipt.
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 4n, operationId: OP(3) });
        open();
        await expect(slower.finally(() => other.close())).rejects.toMatchObject({ code: 'operation_uncertain', retryable: true });
      });

      it('design waits (storage_busy) while an operator intent is pending on the seeded service, and refuses a frozen one', async () => {
        const serviceId = (await app.lifecycle.seed({ domainName: 'pending', domainClass: 'k', intentDescription: 'P.', idempotencyKey: 'seed-pending' }))['service_id'] as string;
        const claim = { principalId: 'agent-a', idempotencyKey: OP(8), kind: 'suspend' as const, fingerprint: 'f'.repeat(64), serviceId, phase: 'prepared' as const, intent: { service_id: serviceId }, result: null, createdAt: 1n, updatedAt: 1n };
        await storage.registry.write((tx) => tx.insertClaim(claim));
        const design = () => app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'design-pending' });
        await rejects(design(), 'storage_busy');
        await storage.registry.write((tx) => tx.updateClaim({ ...claim, phase: 'recovery_required' }));
        await rejects(design(), 'recovery_required');
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ service_revision: 1n, schema: null });
      });

      it('a seed waits (storage_busy) while an import holds its domain, then returns the imported service', async () => {
        const reserved = { serviceId: '11111111-2222-4333-8444-555555555555', principalId: 'agent-a', state: 'import_prepared' as const, domainName: 'incoming', idempotencyKey: OP(9), lifecycleAt: 1n };
        await storage.registry.write((tx) => tx.putIdentity(reserved));
        await rejects(app.lifecycle.seed({ domainName: 'incoming', domainClass: 'k', intentDescription: 'I.', idempotencyKey: 'seed-incoming' }), 'storage_busy');
        // Another principal's domain of that name is not reserved for this one.
        expect(await mcpOver(storage, 'agent-b').lifecycle.seed({ domainName: 'incoming', domainClass: 'k', intentDescription: 'I.', idempotencyKey: 'seed-b' })).toMatchObject({ domain_name: 'incoming' });
        // An import that ended recovery-required holds it for good: not busy (retried for ever) but unavailable.
        const frozenImport = { principalId: 'agent-a', idempotencyKey: OP(9), kind: 'import' as const, fingerprint: 'f'.repeat(64), serviceId: reserved.serviceId, phase: 'recovery_required' as const, intent: {}, result: null, createdAt: 1n, updatedAt: 1n };
        await storage.registry.write((tx) => tx.insertClaim(frozenImport));
        await expect(app.lifecycle.seed({ domainName: 'incoming', domainClass: 'k', intentDescription: 'I.', idempotencyKey: 'seed-incoming' })).rejects.toMatchObject({ code: 'storage_unavailable', retryable: false });
        await storage.registry.write((tx) => tx.deleteIdentity(reserved.serviceId));
        expect(await app.lifecycle.seed({ domainName: 'incoming', domainClass: 'k', intentDescription: 'I.', idempotencyKey: 'seed-incoming' })).toMatchObject({ domain_name: 'incoming' });
      });

      it('an import run twice at once under one operation id completes both times with the same result', async () => {
        const serviceId = await materialised();
        for (let i = 0; i < 5; i++) await app.records.create({ serviceId, entityName: 'note', record: { title: `Note ${i}` }, idempotencyKey: `twice-${i}` });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const importer = await freshLocation('agent-b');
        const [first, second] = await Promise.all([importBytes(importer, bytes, OP(3)), importBytes(importer, bytes, OP(3))]);
        expect(first).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
        expect(second).toEqual(first);
      });

      it('exports and imports a record updated by a process whose wall clock was behind the creating one', async () => {
        const serviceId = await materialised();
        const note = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'Early' }, idempotencyKey: 'clock-c' }))['record'] as JsonObject;
        // The update is written to the store directly: the record service now
        // stamps a change after its record's previous time, but a store written
        // before that rule holds updates stamped before their create.
        const layout = storeLayoutOf(manifest(notesManifest())).entities.find((entity) => entity.name === 'note') as EntityLayout;
        await storage.data.write(locatorOf(serviceId), 'agent-a', async (tx) => {
          const record = (await tx.getRecord(layout, note['id'] as string)) as StoredRecord;
          const earlier = record.createdAt - 1_000_000n;
          const fields = { ...record.fields, title: 'Later' };
          await tx.updateRecord(layout, { ...record, fields, recordVersion: 2n, updatedAt: earlier });
          await tx.appendHistory({ entityName: 'note', recordId: record.id, recordVersion: 2n, kind: 'update', before: record.fields, after: fields, occurredAt: earlier });
        });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        // updated_at is before created_at now; the export used to fail and freeze the service.
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const importer = await freshLocation('agent-b');
        expect(await importBytes(importer, bytes, OP(3))).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
        // The record's history still reads create, then update (as in the source store), though the update's time is earlier.
        await importer.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(4) });
        for (const recordId of [note['id'] as string, null]) {
          const events = (await app.records.history({ serviceId, entityName: 'note', recordId, limit: 100, cursor: null }))['events'] as JsonObject[];
          expect(events.map((event) => [event['kind'], event['record_version']])).toEqual([
            ['create', 1n],
            ['update', 2n],
          ]);
        }
      });

      it('an imported store restarts the history order at each entity, also where the next entity\'s first record has the same id', async () => {
        const serviceId = await materialised();
        const layouts = storeLayoutOf(manifest(notesManifest())).entities;
        const layout = (name: string) => layouts.find((entity) => entity.name === name) as EntityLayout;
        const [r, s] = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
        const at = 1_800_000_000_000_000n;
        await storage.data.write(locatorOf(serviceId), 'agent-a', async (tx) => {
          // The note r is the artefact's last note chain, ending late; the project r follows it.
          await tx.insertRecord(layout('note'), { id: r, createdAt: at, updatedAt: at + 1000n, createdVia: 'mcp', recordVersion: 2n, fields: { title: 'N2' } });
          await tx.appendHistory({ entityName: 'note', recordId: r, recordVersion: 1n, kind: 'create', before: null, after: { title: 'N' }, occurredAt: at });
          for (const [id, time] of [[r, at + 10n], [s, at + 20n]] as const) {
            await tx.insertRecord(layout('project'), { id, createdAt: time, updatedAt: time, createdVia: 'mcp', recordVersion: 1n, fields: { name: id } });
            await tx.appendHistory({ entityName: 'project', recordId: id, recordVersion: 1n, kind: 'create', before: null, after: { name: id }, occurredAt: time });
          }
          await tx.appendHistory({ entityName: 'note', recordId: r, recordVersion: 2n, kind: 'update', before: { title: 'N' }, after: { title: 'N2' }, occurredAt: at + 1000n });
        });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const importer = await freshLocation('agent-b');
        await importBytes(importer, bytes, OP(3));
        await importer.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(4) });
        const events = (await app.records.history({ serviceId, entityName: 'project', recordId: null, limit: 100, cursor: null }))['events'] as JsonObject[];
        expect(events.map((event) => event['id'])).toEqual([r, s]);
      });

      it('an imported store lists an entity\'s history in the order it was written, not record by record', async () => {
        // The artefact holds each record's chain together; staging numbers the
        // events by time again, so the entity-wide history reads as it did.
        const serviceId = await materialised();
        const a = ((await app.records.create({ serviceId, entityName: 'note', record: { title: 'A' }, idempotencyKey: 'order-a' }))['record'] as JsonObject)['id'] as string;
        const b = ((await app.records.create({ serviceId, entityName: 'note', record: { title: 'B' }, idempotencyKey: 'order-b' }))['record'] as JsonObject)['id'] as string;
        await app.records.update({ serviceId, entityName: 'note', recordId: a, updates: { title: 'A2' }, expectedRecordVersion: 1n, idempotencyKey: 'order-u' });
        const history = async () =>
          ((await app.records.history({ serviceId, entityName: 'note', recordId: null, limit: 100, cursor: null }))['events'] as JsonObject[]).map((event) => [event['id'], event['record_version']]);
        const expected = [[a, 1n], [b, 1n], [a, 2n]];
        expect(await history()).toEqual(expected);
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const importer = await freshLocation('agent-b');
        await importBytes(importer, bytes, OP(3));
        await importer.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(4) });
        expect(await history()).toEqual(expected);
      });

      it('an imported store answers filters as the exported one did: list members, scalar fields and a unique index', async () => {
        const serviceId = await materialised();
        const titles = (records: JsonObject[]): unknown[] => records.map((record) => (record['fields'] as JsonObject)['title']).sort();
        const project = (await app.records.create({ serviceId, entityName: 'project', record: { name: 'P', code: 'p-1' }, idempotencyKey: 'filters-p' }))['record'] as JsonObject;
        for (const [n, tags, status] of [[1, ['b', 'a'], 'draft'], [2, ['a'], 'complete'], [3, [], 'draft']] as const) {
          await app.records.create({ serviceId, entityName: 'note', record: { title: `Note ${n}`, tags: [...tags], status, project_id: project['id'] as string }, idempotencyKey: `filters-${n}` });
        }
        const filtered = async (filters: JsonObject): Promise<unknown[]> =>
          titles((await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters }))['records'] as JsonObject[]);
        const cases: JsonObject[] = [{ tags: 'a' }, { tags: 'b' }, { status: 'draft' }, { status: 'draft', tags: 'a' }, { title: 'Note 2' }];
        const before = await Promise.all(cases.map(filtered));
        expect(before).toEqual([['Note 1', 'Note 2'], ['Note 1'], ['Note 1', 'Note 3'], ['Note 1'], ['Note 2']]);
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const importer = await freshLocation('agent-b');
        await importBytes(importer, bytes, OP(3));
        await importer.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(4) });
        expect(await Promise.all(cases.map(filtered))).toEqual(before);
        // The unique index came along: a second project with the same code is refused.
        await rejects(app.records.create({ serviceId, entityName: 'project', record: { name: 'Q', code: 'p-1' }, idempotencyKey: 'filters-q' }), 'constraint_violation');
      });

      it('refuses a service too large for one artefact without keeping a claim: it stays usable, not frozen', async () => {
        const serviceId = await materialised();
        for (const i of [1, 2]) await app.records.create({ serviceId, entityName: 'note', record: { title: `Note ${i}` }, idempotencyKey: `large-${i}` });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        // Header, service and trailer fit in four lines; the members do not.
        const small = operatorOver(storage, 'agent-a', { ...TRANSFER_CODEC, write: (content, sink) => writeWithLimits(content, sink, { ...DEFAULT_LIMITS, maxLines: 4 }) });
        await expect(exportBytes(small, serviceId, 4n, OP(2))).rejects.toMatchObject({ code: 'unsupported_transition', issues: [{ code: 'invalid_length', path: 'service' }] });
        expect(await storage.registry.read((tx) => tx.getClaim('agent-a', OP(2)))).toBeUndefined();
        expect(await storage.registry.read((tx) => tx.getActiveClaim('agent-a', serviceId))).toBeUndefined();
        // The operation id is free again, and the service moves on.
        expect((await exportBytes(operator, serviceId, 4n, OP(2))).result).toMatchObject({ operation: 'export', receipt: { service_revision: 4n } });
        await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(3) });
      });

      it('refuses a number the artefact cannot carry (integral, 2^63 or more) without keeping a claim: the service stays usable', async () => {
        const serviceId = await materialised();
        // Canonical JSON writes 1e20 as 100000000000000000000, an integer token beyond 64 bits that no reader accepts.
        const note = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'Large', confidence: 1e20 }, idempotencyKey: 'huge-1' }))['record'] as JsonObject;
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        await expect(exportBytes(operator, serviceId, 4n, OP(2))).rejects.toMatchObject({ code: 'unsupported_transition', issues: [{ code: 'invalid_value', path: 'service' }] });
        expect(await storage.registry.read((tx) => tx.getClaim('agent-a', OP(2)))).toBeUndefined();
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ recovery_state: 'clear', operational_status: 'suspended' });
        await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(3) });
        await app.records.update({ serviceId, entityName: 'note', recordId: note['id'] as string, updates: { confidence: 0.5 }, expectedRecordVersion: 1n, idempotencyKey: 'huge-2' });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 5n, operationId: OP(4) });
        // The history still holds the old value: still refused, still not frozen.
        await expect(exportBytes(operator, serviceId, 6n, OP(5))).rejects.toMatchObject({ code: 'unsupported_transition' });
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ recovery_state: 'clear' });
      });

      it('names an import stopped after admission to its principal in already_exists, and finishes it when repeated', async () => {
        const serviceId = await materialised();
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const importer = await freshLocation('agent-b');
        const stopped = new Error('the process ended here');
        const crashing = operatorOver(storage, 'agent-b', TRANSFER_CODEC, undefined, (name) => {
          if (name === 'import:admitted') throw stopped;
        });
        await expect(importBytes(crashing, bytes, OP(3))).rejects.toBe(stopped);
        await expect(importBytes(importer, bytes, OP(4))).rejects.toMatchObject({ code: 'already_exists', operation: 'import', byOperator: true });
        // Another principal is told only that the id is taken.
        await expect(importBytes(operatorOver(storage, 'agent-c'), bytes, OP(5))).rejects.toSatisfy((error) => error instanceof AipcsError && error.code === 'already_exists' && !(error instanceof UnfinishedOperation));
        expect(await importBytes(importer, bytes, OP(3))).toMatchObject({ operation: 'import', service: { service_id: serviceId, operational_status: 'suspended', recovery_state: 'clear' } });
      });

      it('moves a service to another location with its content, identity, revision and status', async () => {
        const serviceId = await materialised();
        const note = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'Kept', confidence: 1, tags: ['a', 'b'] }, idempotencyKey: 'c1' }))['record'] as JsonObject;
        const before = await app.records.get(serviceId, 'note', note['id'] as string);
        await rejects(exportBytes(operator, serviceId, 3n, OP(9)), 'unsupported_transition');
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes, result } = await exportBytes(operator, serviceId, 4n, OP(2));
        expect(result).toMatchObject({ operation: 'export', receipt: { kind: 'export', service_revision: 4n, operational_status: 'suspended', verification: 'verified' } });
        // Replay: the same bytes.
        expect((await exportBytes(operator, serviceId, 4n, OP(2))).bytes.equals(bytes)).toBe(true);

        const importer = await freshLocation('agent-b');
        const imported = await importBytes(importer, bytes, OP(3));
        expect(imported).toMatchObject({ operation: 'import', service: { service_id: serviceId, operational_status: 'suspended', service_revision: 4n, design_state: 'materialised' } });
        expect(await importBytes(importer, bytes, OP(3))).toEqual(imported);
        await rejects(importBytes(importer, bytes, OP(4)), 'already_exists');
        // Exported again from here: the same lines but the header's export time (and so the trailer).
        const again = (await exportBytes(importer, serviceId, 4n, OP(6))).bytes.toString('utf8').split('\n');
        const original = bytes.toString('utf8').split('\n');
        expect(again.slice(1, -2)).toEqual(original.slice(1, -2));
        await importer.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(5) });
        expect(await app.records.get(serviceId, 'note', note['id'] as string)).toEqual(before);
      });

      it('moves a service whose fields are named after PostgreSQL system columns', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'system_names', domainClass: 'test', intentDescription: 'System column names.', idempotencyKey: 'sys-s' });
        const serviceId = seeded['service_id'] as string;
        await app.lifecycle.design({ serviceId, manifest: manifest(systemColumnNamesManifest()), idempotencyKey: 'sys-d' });
        await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'sys-m' });
        const anchor = (await app.records.create({ serviceId, entityName: 'anchor', record: { xmin: 'root' }, idempotencyKey: 'c1' }))['record'] as JsonObject;
        const record = { xmin: 'one', xmax: 7n, cmin: 'a', cmax: 0.5, ctid: ['p'], tableoid: anchor['id'] as string };
        const item = (await app.records.create({ serviceId, entityName: 'item', record, idempotencyKey: 'c2' }))['record'] as JsonObject;
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const importer = await freshLocation('agent-b');
        await importBytes(importer, bytes, OP(3));
        const again = (await exportBytes(importer, serviceId, 4n, OP(4))).bytes.toString('utf8').split('\n');
        expect(again.slice(1, -2)).toEqual(bytes.toString('utf8').split('\n').slice(1, -2));
        await importer.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 4n, operationId: OP(5) });
        expect(await app.records.get(serviceId, 'item', item['id'] as string)).toEqual(item);
        // The entity's only string list finds its members, staged one row each.
        const found = (await app.records.list({ serviceId, entityName: 'item', limit: 10, cursor: null, branch: null, filters: { ctid: 'p' } }))['records'] as JsonObject[];
        expect(found.map((one) => one['id'])).toEqual([item['id']]);
      });

      it('moves a record holding 64 KiB of values after an evolve appended a field that is null in it', async () => {
        const serviceId = await materialised();
        // The complete field set (nulls included) at exactly the contract's 65536 bytes.
        const complete = { aliases: null, confidence: null, detail: 'x'.repeat(16384), due_at: null, pinned: null, priority: null, project_id: null, status: null, tags: [] as string[], title: 'y'.repeat(16384) };
        const size = () => Buffer.byteLength(JSON.stringify(complete));
        while (size() < 65536) complete.tags.push(`${complete.tags.length}`.padEnd(Math.min(256, 65536 - size() - 3), 'z'));
        expect(size()).toBe(65536);
        const { detail, tags, title } = complete;
        const note = (await app.records.create({ serviceId, entityName: 'note', record: { detail, tags, title }, idempotencyKey: 'full-c' }))['record'] as JsonObject;
        // note.summary is appended: `"summary":null` takes the record past 64 KiB, which the store keeps and serves.
        await app.lifecycle.evolve({ serviceId, expectedServiceRevision: 3n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'full-e' });
        const before = await app.records.get(serviceId, 'note', note['id'] as string);
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 4n, operationId: OP(1) });
        // The export refused it as invalid content and froze the service (recovery_required).
        const { bytes } = await exportBytes(operator, serviceId, 5n, OP(2));
        const importer = await freshLocation('agent-b');
        await importBytes(importer, bytes, OP(3));
        const again = (await exportBytes(importer, serviceId, 5n, OP(4))).bytes.toString('utf8').split('\n');
        expect(again.slice(1, -2)).toEqual(bytes.toString('utf8').split('\n').slice(1, -2));
        await importer.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: 5n, operationId: OP(5) });
        expect(await app.records.get(serviceId, 'note', note['id'] as string)).toEqual(before);
      });

      it('moves a service larger than every page and batch of the backend, member for member', async () => {
        const serviceId = await materialised();
        const { readPage, stageBatch } = storage.data.transferBatching;
        const count = 2 * Math.max(readPage, stageBatch) + 3;
        const admission = await app.lifecycle.admitData(serviceId);
        const layout = admission.layout.entities.find((entity) => entity.name === 'note');
        if (!layout || !admission.service.storage) throw new Error('no note layout');
        // Bulk rows through the data port (an MCP create per record would only slow the test).
        await storage.data.write(admission.service.storage, 'agent-a', async (tx) => {
          for (let i = 0; i < count; i++) {
            const at = 1_750_000_000_000_000n + BigInt(i);
            const id = `10000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
            const fields = { title: `note ${i}`, detail: null, status: 'draft', confidence: i / 8, priority: BigInt(i), pinned: i % 2 === 0, due_at: null, tags: [`t${i % 7}`], aliases: [], project_id: null };
            await tx.insertRecord(layout, { id, createdAt: at, updatedAt: at, createdVia: 'mcp', recordVersion: 1n, fields });
            await tx.appendHistory({ entityName: 'note', recordId: id, recordVersion: 1n, kind: 'create', before: null, after: fields, occurredAt: at });
          }
        });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes, result } = await exportBytes(operator, serviceId, 4n, OP(2));
        expect((result['summary'] as JsonObject)['sections']).toMatchObject({ record: BigInt(count), history: BigInt(count) });
        const original = bytes.toString('utf8').split('\n');

        const importer = await freshLocation('agent-a');
        await importBytes(importer, bytes, OP(3));
        const again = (await exportBytes(importer, serviceId, 4n, OP(4))).bytes.toString('utf8').split('\n');
        expect(again.length).toBe(original.length);
        expect(again.slice(1, -2)).toEqual(original.slice(1, -2));
      });

      it('moves a record whose history straddles a read page, and a second entity\'s records that sort below it by id', async () => {
        // The history page edge falls inside one record's chain (versions on
        // both sides of it), and the next entity's ids are all below that
        // record's: a keyset that compares less than the full position, or in
        // another order, skips or repeats events there. All the note's events
        // share one time, so only the artefact's order keeps its versions in
        // order when staging numbers the history again.
        const serviceId = await materialised();
        const { readPage } = storage.data.transferBatching;
        const versions = readPage + 5;
        const admission = await app.lifecycle.admitData(serviceId);
        const entity = (name: string): EntityLayout => {
          const found = admission.layout.entities.find((candidate) => candidate.name === name);
          if (!found) throw new Error(`no ${name} layout`);
          return found;
        };
        if (!admission.service.storage) throw new Error('no store');
        const noteId = '20000000-0000-4000-8000-000000000000';
        const at = 1_750_000_000_000_000n;
        const noteFields = (version: number) => ({ title: `v${version}`, detail: null, status: null, confidence: null, priority: null, pinned: null, due_at: null, tags: null, aliases: null, project_id: null });
        await storage.data.write(admission.service.storage, 'agent-a', async (tx) => {
          await tx.insertRecord(entity('note'), { id: noteId, createdAt: at, updatedAt: at, createdVia: 'mcp', recordVersion: BigInt(versions), fields: noteFields(versions) });
          for (let v = 1; v <= versions; v++) {
            await tx.appendHistory({ entityName: 'note', recordId: noteId, recordVersion: BigInt(v), kind: v === 1 ? 'create' : 'update', before: v === 1 ? null : noteFields(v - 1), after: noteFields(v), occurredAt: at });
          }
          for (let i = 0; i < 3; i++) {
            const id = `10000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
            const earlier = at - 1000n + BigInt(i);
            const fields = { name: `p${i}`, code: null };
            await tx.insertRecord(entity('project'), { id, createdAt: earlier, updatedAt: earlier, createdVia: 'mcp', recordVersion: 1n, fields });
            await tx.appendHistory({ entityName: 'project', recordId: id, recordVersion: 1n, kind: 'create', before: null, after: fields, occurredAt: earlier });
          }
        });
        const noteHistory = async (over: OperatorStoragePorts) =>
          over.data.read(admission.service.storage as NonNullable<typeof admission.service.storage>, 'agent-a', async (tx) => (await tx.history('note', null, null, versions + 10)).events.map((event) => event.recordVersion));
        const inOrder = Array.from({ length: versions }, (_, i) => BigInt(i + 1));
        expect(await noteHistory(storage)).toEqual(inOrder);
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes, result } = await exportBytes(operator, serviceId, 4n, OP(2));
        expect((result['summary'] as JsonObject)['sections']).toMatchObject({ record: 4n, history: BigInt(versions + 3) });
        const original = bytes.toString('utf8').split('\n');
        const historyKeys = original
          .filter((line) => line.startsWith('{"kind":"history"'))
          .map((line) => {
            const payload = (JSON.parse(line) as { payload: { entity_name: string; record_id: string; record_version: number } }).payload;
            return `${payload.entity_name}/${payload.record_id}/${payload.record_version}`;
          });
        expect(historyKeys).toEqual([
          ...inOrder.map((v) => `note/${noteId}/${v}`),
          ...[0, 1, 2].map((i) => `project/10000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}/1`),
        ]);

        const importer = await freshLocation('agent-a');
        await importBytes(importer, bytes, OP(3));
        expect(await noteHistory(storage)).toEqual(inOrder);
        const again = (await exportBytes(importer, serviceId, 4n, OP(4))).bytes.toString('utf8').split('\n');
        expect(again.slice(1, -2)).toEqual(original.slice(1, -2));
      });

      it('moves a deleted record\'s history, its delete event last, with no record line for it', async () => {
        const serviceId = await materialised();
        const kept = ((await app.records.create({ serviceId, entityName: 'note', record: { title: 'kept' }, idempotencyKey: 'del-a' }))['record'] as JsonObject)['id'] as string;
        const gone = ((await app.records.create({ serviceId, entityName: 'note', record: { title: 'gone' }, idempotencyKey: 'del-b' }))['record'] as JsonObject)['id'] as string;
        await app.records.delete({ serviceId, entityName: 'note', recordId: gone, expectedRecordVersion: 1n, idempotencyKey: 'del-d' });
        await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes } = await exportBytes(operator, serviceId, 4n, OP(2));
        const original = bytes.toString('utf8').split('\n');
        const members = original
          .map((line) => JSON.parse(line || '{}') as { kind?: string; payload?: { record_id?: string; kind?: string } })
          .filter((line) => line.kind === 'record' || line.kind === 'history')
          .map((line) => [line.kind, line.payload?.record_id, line.payload?.kind ?? null]);
        // History in record id order (byte order; both ids are lowercase hex).
        const keptHistory = [['history', kept, 'create']];
        const goneHistory = [['history', gone, 'create'], ['history', gone, 'delete']];
        expect(members).toEqual([['record', kept, null], ...(kept < gone ? [...keptHistory, ...goneHistory] : [...goneHistory, ...keptHistory])]);
        const importer = await freshLocation('agent-a');
        await importBytes(importer, bytes, OP(3));
        const again = (await exportBytes(importer, serviceId, 4n, OP(4))).bytes.toString('utf8').split('\n');
        expect(again.slice(1, -2)).toEqual(original.slice(1, -2));
      });

      it('a seeded service exports in any status and imports without a store', async () => {
        const seeded = await app.lifecycle.seed({ domainName: 'seed_only', domainClass: 'k', intentDescription: 'x', idempotencyKey: 's1' });
        const serviceId = seeded['service_id'] as string;
        const { bytes } = await exportBytes(operator, serviceId, 1n, OP(1));
        const importer = await freshLocation('agent-a');
        const imported = await importBytes(importer, bytes, OP(2));
        expect(imported).toMatchObject({ service: { service_id: serviceId, design_state: 'seeded', operational_status: 'active', storage: null } });
        expect(await storage.stores.isAbsent(locatorOf(serviceId))).toBe(true);
      });
    });

    describe('purge', () => {
      it('removes the store, leaves a tombstone and strips the other claims', async () => {
        const serviceId = await materialised();
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { bytes, result } = await exportBytes(operator, serviceId, 4n, OP(2));
        const receiptId = (result['receipt'] as JsonObject)['receipt_id'] as string;
        await rejects(operator.operations.purge({ serviceId, expectedServiceRevision: 4n, operationId: OP(3), authority: { kind: 'verified_receipt', receiptId: OP(99) } }), 'unsupported_transition');
        const purged = await operator.operations.purge({ serviceId, expectedServiceRevision: 4n, operationId: OP(3), authority: { kind: 'verified_receipt', receiptId } });
        expect(purged).toMatchObject({ operation: 'purge', tombstone: { service_id: serviceId, authority: 'verified_receipt', receipt_id: receiptId } });
        expect(await storage.stores.isAbsent(locatorOf(serviceId))).toBe(true);
        await rejects(app.lifecycle.inspect(serviceId), 'not_found');
        expect(await operator.operations.purge({ serviceId, expectedServiceRevision: 4n, operationId: OP(3), authority: { kind: 'verified_receipt', receiptId } })).toEqual(purged);
        await rejects(operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 3n, operationId: OP(1) }), 'conflict');
        await rejects(app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 'seed-notes' }), 'conflict');
        await rejects(operator.operations.transition({ kind: 'restore', serviceId, expectedServiceRevision: 4n, operationId: OP(4) }), 'stale_revision');
        await rejects(importBytes(operator, bytes, OP(5)), 'already_exists');
        const tombstone = await storage.registry.read((tx) => tx.getIdentity(serviceId));
        expect(tombstone).toMatchObject({ state: 'tombstoned', domainName: null, idempotencyKey: OP(3) });
        expect(await storage.registry.read((tx) => tx.getReceipt(receiptId))).toBeUndefined();
        // The domain name is free again.
        expect((await app.lifecycle.seed({ domainName: 'notes', domainClass: 'k', intentDescription: 'again', idempotencyKey: 'seed-again' }))['service_id']).not.toBe(serviceId);
      });

      // The port's own word, checked directly: the purge that calls it rewrites
      // its kept claim afterwards anyway (mutation review BA: tombstoning the
      // kept claim too survived every purge test).
      it('tombstones every claim of the service but the kept one, and no other service’s (registry port)', async () => {
        const serviceId = await materialised();
        const other = await materialised('other');
        const claimsOf = (keys: string[]) => storage.registry.read(async (tx) => Promise.all(keys.map((key) => tx.getClaim('agent-a', key))));
        const [mat, otherSeed] = await claimsOf(['mat-notes', 'seed-other']);
        await storage.registry.write((tx) => tx.tombstoneClaims('agent-a', serviceId, 'mat-notes', 77n));
        const [seed, design, kept, untouched] = await claimsOf(['seed-notes', 'design-notes', 'mat-notes', 'seed-other']);
        for (const claim of [seed, design]) {
          expect(claim).toMatchObject({ serviceId, phase: 'completed', fingerprint: TOMBSTONED_FINGERPRINT, result: null, updatedAt: 77n });
          expect(claim?.intent).toEqual({});
        }
        expect(kept).toEqual(mat);
        expect(untouched).toEqual(otherSeed);
        expect(untouched?.serviceId).toBe(other);
      });

      it('takes as purge authority only a verified export receipt of this principal and service, at this revision, while archived', async () => {
        const serviceId = await materialised();
        const other = await materialised('other');
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const { result } = await exportBytes(operator, serviceId, 4n, OP(2));
        const receiptId = (result['receipt'] as JsonObject)['receipt_id'] as string;
        const valid = await storage.registry.read((tx) => tx.getReceipt(receiptId));
        if (!valid) throw new Error('no receipt');
        const variants: Partial<typeof valid>[] = [
          { kind: 'import' },
          { verification: 'unverified' },
          { serviceRevision: 3n },
          { operationalStatus: 'suspended' },
          { serviceId: other },
          { principalId: 'agent-b' },
        ];
        for (const [index, variant] of variants.entries()) {
          const variantId = OP(100 + index);
          await storage.registry.write((tx) => tx.insertReceipt({ ...valid, ...variant, receiptId: variantId, idempotencyKey: OP(200 + index) }));
          await rejects(operator.operations.purge({ serviceId, expectedServiceRevision: 4n, operationId: OP(300 + index), authority: { kind: 'verified_receipt', receiptId: variantId } }), 'unsupported_transition');
        }
        expect(await storage.stores.isAbsent(locatorOf(serviceId))).toBe(false);
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ operational_status: 'archived', recovery_state: 'clear' });
        expect(await operator.operations.purge({ serviceId, expectedServiceRevision: 4n, operationId: OP(3), authority: { kind: 'verified_receipt', receiptId } })).toMatchObject({ operation: 'purge' });
      });

      it('refuses a store whose fence is open', async () => {
        const serviceId = await materialised();
        await expect(storage.stores.remove(locatorOf(serviceId), operator.application.lifecycle.layoutOf(manifest(notesManifest())))).rejects.toMatchObject({ kind: 'incompatible' });
        expect(await storage.stores.inspect(locatorOf(serviceId))).toMatchObject({ status: 'ready' });
      });

      it('replays or completes a concurrent run of the same purge that removed the store under it, and leaves a failed removal prepared', async () => {
        const serviceId = await materialised();
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const command = { serviceId, expectedServiceRevision: 4n, operationId: OP(3), authority: { kind: 'explicit_override' as const } };
        // The removal fails as a store file vanishing mid-check does (SQLite:
        // unavailable), optionally after another run of the command finished.
        const racing = (before: () => Promise<unknown>): OperatorStoragePorts => ({
          ...storage,
          stores: overriding(storage.stores, {
            remove: async () => {
              await before();
              throw new StorageFailure('unavailable');
            },
          }),
        });
        // A removal that fails with the store still there: refused, the claim kept for a retry.
        await rejects(operatorOver(racing(async () => undefined)).operations.purge(command), 'storage_unavailable');
        expect(await storage.stores.isAbsent(locatorOf(serviceId))).toBe(false);
        await expect(operator.operations.transition({ kind: 'restore', serviceId, expectedServiceRevision: 4n, operationId: OP(4) })).rejects.toMatchObject({
          code: 'operation_in_progress',
          operation: 'purge',
          byOperator: true,
        });
        // The other run finished: its result is replayed.
        let winner: JsonObject | undefined;
        const loser = await operatorOver(racing(async () => (winner = await operator.operations.purge(command)))).operations.purge(command);
        expect(winner).toMatchObject({ operation: 'purge', tombstone: { service_id: serviceId, authority: 'explicit_override' } });
        expect(loser).toEqual(winner);
        expect(await storage.stores.isAbsent(locatorOf(serviceId))).toBe(true);
      });

      it('a second run of a transition or purge that finds the first completed it replays its result, never recovery_required', async () => {
        const serviceId = await materialised();
        // Run B resumes run A's prepared claim, then reads the service only after A completed (two processes, one operation id).
        const interleaved = async (run: (operator: Operator) => Promise<JsonObject>): Promise<[JsonObject, JsonObject]> => {
          let bAdmitted = (): void => undefined;
          let aDone = (): void => undefined;
          const bAdmission = new Promise<void>((resolve) => (bAdmitted = resolve));
          const aCompletion = new Promise<void>((resolve) => (aDone = resolve));
          const gated = (readsAfterAdmissionWaitFor: Promise<void>, onAdmitted: () => void): OperatorStoragePorts => {
            let writes = 0;
            const registry = storage.registry;
            return {
              ...storage,
              registry: overriding(registry, {
                read: async (work) => {
                  if (writes > 0) await readsAfterAdmissionWaitFor;
                  return registry.read(work);
                },
                write: async (work) => {
                  const result = await registry.write(work);
                  if (++writes === 1) onAdmitted();
                  return result;
                },
              }),
            };
          };
          const a = run(operatorOver(gated(bAdmission, () => undefined))).finally(aDone);
          const b = run(operatorOver(gated(aCompletion, bAdmitted)));
          return Promise.all([a, b]);
        };
        const [suspended, again] = await interleaved((o) => o.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) }));
        expect(suspended).toMatchObject({ operation: 'suspend', service: { operational_status: 'suspended', service_revision: 4n } });
        expect(again).toEqual(suspended);
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 4n, operationId: OP(2) });
        const [purged, purgedAgain] = await interleaved((o) => o.operations.purge({ serviceId, expectedServiceRevision: 5n, operationId: OP(3), authority: { kind: 'explicit_override' } }));
        expect(purged).toMatchObject({ operation: 'purge', tombstone: { service_id: serviceId } });
        expect(purgedAgain).toEqual(purged);
      });

      it('completes a purge whose store another run of it removed before failing', async () => {
        const serviceId = await materialised();
        await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
        const command = { serviceId, expectedServiceRevision: 4n, operationId: OP(3), authority: { kind: 'explicit_override' as const } };
        const layout = operator.application.lifecycle.layoutOf(manifest(notesManifest()));
        const removedUnder: OperatorStoragePorts = {
          ...storage,
          stores: overriding(storage.stores, {
            remove: async () => {
              await storage.stores.remove(locatorOf(serviceId), layout);
              throw new StorageFailure('unavailable');
            },
          }),
        };
        const purged = await operatorOver(removedUnder).operations.purge(command);
        expect(purged).toMatchObject({ operation: 'purge', tombstone: { service_id: serviceId, authority: 'explicit_override' } });
        expect(await operator.operations.purge(command)).toEqual(purged);
      });
    });
  });
}
