// Counters at 2^63-1 (contract §10 bounds, ops spec §3.2.6) through the
// application layer, on SQLite and on each started PostgreSQL cluster: a
// change that would move a record_version, a branch_revision or a
// service_revision past the maximum is refused before anything is written
// (D40), not answered internal_error or storage_unavailable after the
// overflowing write. Records and branches answer constraint_violation, design
// invalid_state, materialise and evolve unsupported_transition; a retry with
// the same key gets the same answer and nothing is left pending.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../src/aipcs/core/application.js';
import { storeLayoutOf } from '../../src/aipcs/core/layout.js';
import type { BackendName, EntityLayout, StoredBranch, StoredRecord } from '../../src/aipcs/core/ports.js';
import { openPostgresStorage } from '../../src/aipcs/storage/postgres/index.js';
import { openSqliteStorage } from '../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../src/common/json.js';
import { notesManifest, notesManifestV2 } from '../support/manifests.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters } from '../support/postgres.js';
import { appOver, manifest, materialisedNotes } from './harness.js';

const MAX = 9223372036854775807n;

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await expect(promise).rejects.toMatchObject({ code });
}

interface Backend {
  readonly name: BackendName;
  open(): Promise<{ storage: StoragePorts; dispose(): Promise<void> }>;
}

function counterLimits(label: string, backend: Backend): void {
  describe(`counters at 2^63-1 (${label})`, () => {
    let storage: StoragePorts;
    let dispose: () => Promise<void>;
    let domains = 0;
    const noteLayout = storeLayoutOf(manifest(notesManifest())).entities.find((entity) => entity.name === 'note') as EntityLayout;

    beforeAll(async () => {
      ({ storage, dispose } = await backend.open());
    });
    afterAll(async () => {
      await storage.close();
      await dispose();
    });

    /** A fresh materialised notes service with one note at the maximum record_version and one at 1. */
    async function notesAtMaximum() {
      const { serviceId, namespace, app } = await materialisedNotes(storage, `counters_${++domains}`);
      const locator = { backend: backend.name, namespace };
      const create = async (title: string) => (await app.records.create({ serviceId, entityName: 'note', record: { title }, idempotencyKey: `c-${title}` }))['record'] as JsonObject;
      const maxed = await create('maxed');
      const plain = await create('plain');
      await storage.data.write(locator, 'agent-a', async (tx) => {
        const record = (await tx.getRecord(noteLayout, maxed['id'] as string)) as StoredRecord;
        await tx.updateRecord(noteLayout, { ...record, recordVersion: MAX });
      });
      const read = async (record: JsonObject) => app.records.get(serviceId, 'note', record['id'] as string);
      return { serviceId, app, locator, maxed: await read(maxed), plain, read };
    }

    it('refuses to update or delete a record at the maximum record_version, the same way on retry', async () => {
      const { serviceId, app, maxed, read } = await notesAtMaximum();
      const id = maxed['id'] as string;
      const history = await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 100, cursor: null });
      for (let attempt = 0; attempt < 2; attempt++) {
        // Before: internal_error (SQLite) or storage_unavailable (PostgreSQL) from the overflowing write.
        await rejects(app.records.update({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: MAX, updates: { title: 'next' }, idempotencyKey: 'u' }), 'constraint_violation');
        await rejects(app.records.delete({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: MAX, idempotencyKey: 'd' }), 'constraint_violation');
      }
      expect(await read(maxed)).toEqual(maxed);
      expect(await app.records.history({ serviceId, entityName: 'note', recordId: id, limit: 100, cursor: null })).toEqual(history);
    });

    it('refuses a branch assignment that would advance a record at the maximum, all or nothing', async () => {
      const { serviceId, app, maxed, plain, read } = await notesAtMaximum();
      const branch = (await app.branches.create({ serviceId, slug: 'topic', title: 'Topic', intent: 'Why.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b' }))['branch'] as JsonObject;
      const targets = [plain, maxed].map((record) => ({ entityName: 'note', recordId: record['id'] as string, expectedRecordVersion: record['record_version'] as bigint }));
      const assign = () => app.branches.assign({ serviceId, branchId: branch['id'] as string, role: 'primary', operation: 'assign', records: targets, idempotencyKey: 'a' });
      await rejects(assign(), 'constraint_violation');
      await rejects(assign(), 'constraint_violation');
      expect([await read(plain), await read(maxed)]).toEqual([plain, maxed]);
      const members = await app.records.list({ serviceId, entityName: 'note', branch: { branchId: branch['id'] as string, role: 'primary' }, cursor: null, limit: 10 });
      expect(members['records']).toEqual([]);
    });

    it('refuses to update a branch at the maximum branch_revision, but completes a no-op update', async () => {
      const { serviceId, app, locator } = await notesAtMaximum();
      const created = (await app.branches.create({ serviceId, slug: 'topic', title: 'Topic', intent: 'Why.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b' }))['branch'] as JsonObject;
      const branchId = created['id'] as string;
      await storage.data.write(locator, 'agent-a', async (tx) => {
        const branch = (await tx.getBranch(branchId)) as StoredBranch;
        await tx.updateBranch({ ...branch, branchRevision: MAX });
      });
      const update = (title: string, idempotencyKey: string) => app.branches.update({ serviceId, branchId, expectedBranchRevision: MAX, updates: { title }, idempotencyKey });
      await rejects(update('Renamed', 'u1'), 'constraint_violation');
      await rejects(update('Renamed', 'u1'), 'constraint_violation');
      expect(await update('Topic', 'u2')).toMatchObject({ branch: { title: 'Topic', branch_revision: MAX } });
    });

    it('still advances a counter one below the maximum to exactly 2^63-1', async () => {
      const { serviceId, app, locator, plain } = await notesAtMaximum();
      const id = plain['id'] as string;
      await storage.data.write(locator, 'agent-a', async (tx) => {
        const record = (await tx.getRecord(noteLayout, id)) as StoredRecord;
        await tx.updateRecord(noteLayout, { ...record, recordVersion: MAX - 1n });
      });
      const updated = await app.records.update({ serviceId, entityName: 'note', recordId: id, expectedRecordVersion: MAX - 1n, updates: { title: 'last' }, idempotencyKey: 'u-last' });
      expect(updated).toMatchObject({ record: { record_version: MAX } });

      const created = (await app.branches.create({ serviceId, slug: 'topic', title: 'Topic', intent: 'Why.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b-last' }))['branch'] as JsonObject;
      const branchId = created['id'] as string;
      await storage.data.write(locator, 'agent-a', async (tx) => {
        const branch = (await tx.getBranch(branchId)) as StoredBranch;
        await tx.updateBranch({ ...branch, branchRevision: MAX - 1n });
      });
      expect(await app.branches.update({ serviceId, branchId, expectedBranchRevision: MAX - 1n, updates: { title: 'Renamed' }, idempotencyKey: 'bu-last' })).toMatchObject({ branch: { branch_revision: MAX } });

      await storage.registry.write(async (tx) => {
        const row = await tx.getService('agent-a', serviceId);
        if (!row || !(await tx.updateService({ ...row, serviceRevision: MAX - 1n }, row.serviceRevision))) throw new Error('setup failed');
      });
      const evolved = await app.lifecycle.evolve({ serviceId, expectedServiceRevision: MAX - 1n, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'evolve-last' });
      expect(evolved).toMatchObject({ service_revision: MAX, schema_version: 2n, recovery_state: 'clear' });
    });

    it('refuses design, materialise and evolve of a service at the maximum service_revision, leaving it clear', async () => {
      const app = appOver(storage);
      const atMaximum = async (serviceId: string) =>
        storage.registry.write(async (tx) => {
          const row = await tx.getService('agent-a', serviceId);
          if (!row || !(await tx.updateService({ ...row, serviceRevision: MAX }, row.serviceRevision))) throw new Error('setup failed');
        });
      const seed = async (domainName: string) => (await app.lifecycle.seed({ domainName, domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: `s-${domainName}` }))['service_id'] as string;

      const seeded = await seed(`counters_${++domains}`);
      await atMaximum(seeded);
      await rejects(app.lifecycle.design({ serviceId: seeded, manifest: manifest(notesManifest()), idempotencyKey: 'design-max' }), 'invalid_state');
      await rejects(app.lifecycle.design({ serviceId: seeded, manifest: manifest(notesManifest()), idempotencyKey: 'design-max' }), 'invalid_state');

      const designed = await seed(`counters_${++domains}`);
      await app.lifecycle.design({ serviceId: designed, manifest: manifest(notesManifest()), idempotencyKey: 'design-ok' });
      await atMaximum(designed);
      const materialise = () => app.lifecycle.materialise({ serviceId: designed, expectedServiceRevision: MAX, expectedSchemaVersion: 1n, idempotencyKey: 'mat-max' });
      await rejects(materialise(), 'unsupported_transition');
      await rejects(materialise(), 'unsupported_transition');

      const { serviceId: materialised } = await materialisedNotes(storage, `counters_${++domains}`);
      await atMaximum(materialised);
      const evolve = () => app.lifecycle.evolve({ serviceId: materialised, expectedServiceRevision: MAX, expectedSchemaVersion: 1n, manifest: manifest(notesManifestV2()), idempotencyKey: 'evolve-max' });
      await rejects(evolve(), 'unsupported_transition');
      await rejects(evolve(), 'unsupported_transition');

      for (const serviceId of [seeded, designed, materialised]) {
        expect(await app.lifecycle.inspect(serviceId)).toMatchObject({ service_revision: MAX, recovery_state: 'clear' });
      }
    });
  });
}

counterLimits('sqlite', {
  name: 'sqlite',
  async open() {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-counters-'));
    const storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
    return { storage, dispose: async () => rmSync(base, { recursive: true, force: true }) };
  },
});

expectClustersUnderCi();
for (const cluster of postgresClusters()) {
  counterLimits(`postgresql ${cluster.version}`, {
    name: 'postgresql',
    async open() {
      const database = await createTestDatabase(cluster);
      const storage = await openPostgresStorage({ dsn: database.url, connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 30000 });
      return { storage, dispose: () => database.drop() };
    },
  });
}
