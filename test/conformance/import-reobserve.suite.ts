// Import re-observation (operations spec §5.9 import step 7): after staging,
// the store is read back through a fresh snapshot and compared with the
// artefact; a mismatch is operation_uncertain and nothing is published. The
// comparison must see every part of every member: a staging that wrote a
// different field value, history snapshot, fence or branch membership must
// not pass. Also the transfer's admission rules around it (a domain an
// unfinished import reserved, an export beside an unfinished operation).
// Any adapter: the staging writer is wrapped to tamper with what it writes.
// One location is in use at a time (a harness may hold only one): the
// artefact is exported to memory, then the location is replaced by the
// destination.

import { afterEach, describe, expect, it } from 'vitest';
import type { Operator, OperatorStoragePorts } from '../../src/aipcs/core/application.js';
import { TRANSFER_CODEC } from '../../src/aipcs/compose.js';
import type { HistoryEvent, StagingWriter, StoredRecord } from '../../src/aipcs/core/ports.js';
import type { JsonObject } from '../../src/common/json.js';
import { notesManifest } from '../support/manifests.js';
import { overriding, testApplication, testOperator } from '../support/operator.js';
import { manifest } from './harness.js';
import type { OperatorStorageHarness, OperatorStorageLocation } from './operator.suite.js';

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

export function importReobserveSuite(harness: OperatorStorageHarness): void {
  describe(`import re-observation (${harness.name})`, () => {
    let location: OperatorStorageLocation | undefined;
    let current: OperatorStoragePorts | undefined;

    async function close(): Promise<void> {
      await current?.close();
      await location?.destroy();
      current = undefined;
      location = undefined;
    }

    /** Replaces the location in use by a fresh, empty one. */
    async function fresh(): Promise<OperatorStoragePorts> {
      await close();
      location = await harness.create();
      current = await location.open();
      return current;
    }

    afterEach(close);

    /** The artefact of a suspended service with one note created, then updated. */
    let source: OperatorStoragePorts;

    async function exported(withProject = false, withBranch = false): Promise<{ serviceId: string; bytes: Buffer }> {
      source = await fresh();
      const app = testApplication(source);
      const seeded = await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 'seed' });
      const serviceId = seeded['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'design' });
      await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'mat' });
      // The manifest lists `project` before `note`; the artefact orders records by entity name.
      const project = withProject ? ((await app.records.create({ serviceId, entityName: 'project', record: { name: 'P', code: 'p1' }, idempotencyKey: 'p1' }))['record'] as JsonObject) : null;
      const note = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'Kept', tags: ['a'], ...(project ? { project_id: project['id'] } : {}) }, idempotencyKey: 'c1' }))['record'] as JsonObject;
      await app.records.update({ serviceId, entityName: 'note', recordId: note['id'] as string, updates: { title: 'Kept again' }, expectedRecordVersion: 1n, idempotencyKey: 'u1' });
      if (withBranch) {
        const branch = (await app.branches.create({ serviceId, slug: 'topic', title: 'Topic', intent: 'Why.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b1' }))['branch'] as JsonObject;
        await app.branches.assign({ serviceId, branchId: branch['id'] as string, role: 'primary', operation: 'assign', records: [{ entityName: 'note', recordId: note['id'] as string, expectedRecordVersion: 2n }], idempotencyKey: 'a1' });
      }
      const operator = testOperator(source, { principalId: 'agent-a' });
      await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: OP(1) });
      const chunks: Uint8Array[] = [];
      const result = await (operator.transfer as NonNullable<Operator['transfer']>).export({ serviceId, expectedServiceRevision: 4n, operationId: OP(2) }, (chunk) => {
        chunks.push(Buffer.from(chunk));
      });
      const bytes = Buffer.concat(chunks);
      // Spec §1.9.4: the receipt's time is the artefact header's time (what a replay re-emits).
      const header = JSON.parse(bytes.toString('utf8').split('\n')[0] as string) as { payload: { created_at: string } };
      expect((result['receipt'] as JsonObject)['created_at']).toBe(header.payload.created_at);
      return { serviceId, bytes };
    }

    /** The destination storage with each staging unit's writer altered by `tamper`. */
    let destination: OperatorStoragePorts;

    async function tampered(tamper: (tx: StagingWriter) => Partial<StagingWriter>, stores: Partial<OperatorStoragePorts['stores']> = {}): Promise<OperatorStoragePorts> {
      const storage = await fresh();
      destination = storage;
      const data = overriding(storage.data, {
        stage: (locator, principalId, layout, work) => storage.data.stage(locator, principalId, layout, (tx) => work(overriding(tx, tamper(tx)))),
      } as Partial<OperatorStoragePorts['data']>);
      return overriding(storage, { data, stores: overriding(storage.stores, stores) });
    }

    async function importInto(storage: OperatorStoragePorts, bytes: Buffer): Promise<JsonObject> {
      const artefact = await TRANSFER_CODEC.read(async function* () {
        yield bytes;
      });
      return (testOperator(storage, { principalId: 'agent-b' }).transfer as NonNullable<Operator['transfer']>).import(OP(3), artefact);
    }

    it('notices a staged record field that differs from the artefact', async () => {
      const { serviceId, bytes } = await exported();
      const storage = await tampered((tx) => ({
        insertRecords: (entity, records: readonly StoredRecord[]) => tx.insertRecords(entity, records.map((record) => ({ ...record, fields: { ...record.fields, title: 'Tampered' } }))),
      }));
      await expect(importInto(storage, bytes)).rejects.toMatchObject({ code: 'operation_uncertain' });
      await expect(testOperator(storage, { principalId: 'agent-b' }).operations.inspect(serviceId)).rejects.toMatchObject({ code: 'not_found' });
      // Repeated (an honest store now): the store staged by the first attempt holds other content
      // than the artefact, so it is not adopted (spec §5.9 import step 6: different → recovery_required).
      await expect(importInto(destination, bytes)).rejects.toMatchObject({ code: 'recovery_required' });
      await expect(testOperator(destination, { principalId: 'agent-b' }).operations.inspect(serviceId)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('notices a staged fence that is not the artefact\'s', async () => {
      const { serviceId, bytes } = await exported();
      const storage = await tampered((tx) => ({ setFence: (fence) => tx.setFence({ ...fence, generation: fence.generation + 1n }) }));
      await expect(importInto(storage, bytes)).rejects.toMatchObject({ code: 'operation_uncertain' });
      await expect(testOperator(storage, { principalId: 'agent-b' }).operations.inspect(serviceId)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('a staged store that cannot be observed afterwards is operation_uncertain, not recovery_required', async () => {
      const { serviceId, bytes } = await exported();
      const storage = await tampered(() => ({}), { observe: async () => ({ state: 'unavailable' }) as never });
      await expect(importInto(storage, bytes)).rejects.toMatchObject({ code: 'operation_uncertain' });
      // Repeated while still unobservable: the staged store is found, cannot be read back, and is
      // still not a different one (spec §4.2): uncertain again, never recovery_required.
      await expect(importInto(storage, bytes)).rejects.toMatchObject({ code: 'operation_uncertain' });
      // The claim stays prepared: the same operation id completes it once the store can be observed.
      expect(await importInto(destination, bytes)).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
    });

    it('notices a staged history snapshot that differs from the artefact', async () => {
      const { serviceId, bytes } = await exported();
      const storage = await tampered((tx) => ({
        holdHistory: (events: readonly HistoryEvent[]) => tx.holdHistory(events.map((event) => (event.after === null ? event : { ...event, after: { ...event.after, title: 'Tampered' } }))),
      }));
      await expect(importInto(storage, bytes)).rejects.toMatchObject({ code: 'operation_uncertain' });
      await expect(testOperator(storage, { principalId: 'agent-b' }).operations.inspect(serviceId)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('notices a staged branch membership that differs from the artefact', async () => {
      const { serviceId, bytes } = await exported(false, true);
      // The harness alone (another destination) imports it.
      expect(await importInto(await tampered(() => ({})), bytes)).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
      const storage = await tampered((tx) => ({
        putMemberships: (rows, assignedAt) => tx.putMemberships(rows.map((row) => ({ ...row, role: row.role === 'primary' ? 'related' : 'primary' })), assignedAt),
      }));
      await expect(importInto(storage, bytes)).rejects.toMatchObject({ code: 'operation_uncertain' });
    });

    it('refuses an import of another service of a domain an unfinished import has reserved (already_exists)', async () => {
      const first = await exported();
      const second = await exported(); // the same domain name, another service id
      expect(second.serviceId).not.toBe(first.serviceId);
      const storage = await fresh();
      const stopped = new Error('the process ended here');
      const crashing = testOperator(storage, { principalId: 'agent-b', checkpoint: (name) => {
        if (name === 'import:admitted') throw stopped;
      } });
      const artefact = async (bytes: Buffer) =>
        TRANSFER_CODEC.read(async function* () {
          yield bytes;
        });
      await expect((crashing.transfer as NonNullable<Operator['transfer']>).import(OP(3), await artefact(first.bytes))).rejects.toBe(stopped);
      await expect((testOperator(storage, { principalId: 'agent-b' }).transfer as NonNullable<Operator['transfer']>).import(OP(4), await artefact(second.bytes))).rejects.toMatchObject({ code: 'already_exists' });
      // The first import, repeated under its operation id, completes.
      expect(await importInto(storage, first.bytes)).toMatchObject({ operation: 'import', service: { service_id: first.serviceId } });
    });

    it('publishes an untampered staging (the harness itself changes nothing)', async () => {
      const { serviceId, bytes } = await exported();
      const storage = await tampered(() => ({}));
      expect(await importInto(storage, bytes)).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
    });

    it('exports and imports records of several entities in entity-name order, whatever the manifest order', async () => {
      const { serviceId, bytes } = await exported(true);
      const kinds = bytes
        .toString('utf8')
        .split('\n')
        .filter((line) => line.startsWith('{"kind":"record"'))
        .map((line) => (JSON.parse(line) as { payload: { entity_name: string } }).payload.entity_name);
      expect(kinds).toEqual(['note', 'project']);
      const storage = await tampered(() => ({}));
      expect(await importInto(storage, bytes)).toMatchObject({ operation: 'import', service: { service_id: serviceId } });
    });

    it('refuses an export while another operation on the service is unfinished (operation_in_progress)', async () => {
      const { serviceId } = await exported();
      const stopped = new Error('the process ended here');
      const crashing = testOperator(source, { principalId: 'agent-a', checkpoint: (name) => {
        if (name === 'archive:admitted') throw stopped;
      } });
      await expect(crashing.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: 4n, operationId: OP(7) })).rejects.toBe(stopped);
      const exporting = testOperator(source, { principalId: 'agent-a' }).transfer as NonNullable<Operator['transfer']>;
      await expect(exporting.export({ serviceId, expectedServiceRevision: 4n, operationId: OP(8) }, () => undefined)).rejects.toMatchObject({ code: 'operation_in_progress' });
    });
  });
}
