// Counters at 2^63-1 (contract §10 bounds, ops spec §3.2.6) through the
// application layer, on SQLite and on each started PostgreSQL cluster: a
// change that would move a service_revision past the maximum is refused
// before anything is written (D40), not left pending after the overflowing
// write. Design answers invalid_state, materialise and evolve
// unsupported_transition; a retry with the same key gets the same answer.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../src/aipcs/core/application.js';
import type { BackendName } from '../../src/aipcs/core/ports.js';
import { openPostgresStorage } from '../../src/aipcs/storage/postgres/index.js';
import { openSqliteStorage } from '../../src/aipcs/storage/sqlite/index.js';
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

    beforeAll(async () => {
      ({ storage, dispose } = await backend.open());
    });
    afterAll(async () => {
      await storage.close();
      await dispose();
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
