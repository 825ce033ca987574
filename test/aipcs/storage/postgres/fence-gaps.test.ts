// Mutation-testing gaps of the PostgreSQL write fence (review mutD): cases
// the existing suites did not pin down.

import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { Operator, OperatorStoragePorts } from '../../../../src/aipcs/core/application.js';
import { TRANSFER_CODEC } from '../../../../src/aipcs/compose.js';
import { openPostgresStorage } from '../../../../src/aipcs/storage/postgres/index.js';
import { manifest } from '../../../conformance/harness.js';
import { testOperator } from '../../../support/operator.js';
import { notesManifest } from '../../../support/manifests.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../../support/postgres.js';

const timeouts = { connectTimeoutSeconds: 5, lockTimeoutMs: 2000, statementTimeoutMs: 10000 };
async function materialised(operator: Operator): Promise<string> {
  const app = operator.application;
  const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
  await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
  await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
  return serviceId;
}

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s write fence gaps', (_version, cluster) => {
  const databases: TestDatabase[] = [];
  const opened: OperatorStoragePorts[] = [];
  const pgStorage = async (): Promise<{ storage: OperatorStoragePorts; db: TestDatabase }> => {
    const db = await createTestDatabase(cluster);
    databases.push(db);
    const storage = await openPostgresStorage({ dsn: db.url, ...timeouts });
    opened.push(storage);
    return { storage, db };
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((storage) => storage.close()));
    await Promise.all(databases.splice(0).map((db) => db.drop()));
  });

  it('a fence change waits for an admitted unit even when the store has no fence row yet (it reads as open at generation 1)', async () => {
    const { storage, db } = await pgStorage();
    const operator = testOperator(storage);
    const serviceId = await materialised(operator);
    const namespace = `svc_${serviceId.replaceAll('-', '')}`;
    const locator = { backend: 'postgresql' as const, namespace };
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect((await client.query(`DELETE FROM "${namespace}"."__aipcs_write_fence"`)).rowCount).toBe(1);
    } finally {
      await client.end();
    }
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let admitted!: (open: boolean) => void;
    const sawFence = new Promise<boolean>((resolve) => (admitted = resolve));
    const unit = storage.data.write(locator, 'agent-a', async (tx) => {
      admitted(await tx.fenceIsOpen(1n));
      await held;
      await tx.putReplay({ idempotencyKey: 'inside', kind: 'create', fingerprint: 'f', result: {}, completedAt: 1n });
    });
    expect(await sawFence).toBe(true);
    let changed = false;
    const change = storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed').then((fence) => {
      changed = true;
      return fence;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The admitted unit has not committed: the suspend must not be in effect yet.
      expect(changed).toBe(false);
    } finally {
      release();
      await unit;
    }
    expect(await change).toEqual({ generation: 2n, state: 'closed' });
  });

  it('compare-and-change is atomic: of two changes from the same expectation, racing behind an admitted unit, exactly one wins', async () => {
    const { storage } = await pgStorage();
    const operator = testOperator(storage);
    const serviceId = await materialised(operator);
    const locator = { backend: 'postgresql' as const, namespace: `svc_${serviceId.replaceAll('-', '')}` };
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let admitted!: (open: boolean) => void;
    const sawFence = new Promise<boolean>((resolve) => (admitted = resolve));
    const unit = storage.data.write(locator, 'agent-a', async (tx) => {
      admitted(await tx.fenceIsOpen(1n));
      await held;
    });
    expect(await sawFence).toBe(true);
    const first = storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed');
    const second = storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed');
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await unit;
    const outcomes = await Promise.all([first, second]);
    expect(outcomes.filter((fence) => fence !== null)).toEqual([{ generation: 2n, state: 'closed' }]);
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 2n, state: 'closed' });
  });

  it('compare-and-change compares the state as well as the generation', async () => {
    const { storage } = await pgStorage();
    const operator = testOperator(storage);
    const serviceId = await materialised(operator);
    const namespace = `svc_${serviceId.replaceAll('-', '')}`;
    const locator = { backend: 'postgresql' as const, namespace };
    expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'closed' }, 'open')).toBeNull();
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 1n, state: 'open' });
    // And at a later generation.
    expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed')).toEqual({ generation: 2n, state: 'closed' });
    expect(await storage.stores.changeFence(locator, { generation: 2n, state: 'open' }, 'closed')).toBeNull();
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 2n, state: 'closed' });
  });

  it('materialise refuses a schema of the locator\'s name that someone else made (incompatible, nothing adopted)', async () => {
    const { storage, db } = await pgStorage();
    const operator = testOperator(storage);
    const app = operator.application;
    const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
    const namespace = `svc_${serviceId.replaceAll('-', '')}`;
    const locator = { backend: 'postgresql' as const, namespace };
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA "${namespace}"`);
      await client.query(`CREATE TABLE "${namespace}"."squatter" ("x" int)`);
    } finally {
      await client.end();
    }
    const layout = app.lifecycle.layoutOf(manifest(notesManifest()));
    await expect(storage.stores.materialise(locator, layout)).rejects.toMatchObject({ kind: 'incompatible' });
    expect((await storage.stores.observe(locator, layout)).state).toBe('incompatible');
  });

  it('evolve refuses a store that is not at the current layout (here: gone) as incompatible, never as an outage', async () => {
    const { storage, db } = await pgStorage();
    const operator = testOperator(storage);
    const serviceId = await materialised(operator);
    const namespace = `svc_${serviceId.replaceAll('-', '')}`;
    const locator = { backend: 'postgresql' as const, namespace };
    const current = operator.application.lifecycle.layoutOf(manifest(notesManifest()));
    const target = { ...current, entities: [...current.entities, { ...current.entities[0]!, name: 'extra' }] };
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA "${namespace}" CASCADE`);
    } finally {
      await client.end();
    }
    await expect(storage.stores.evolve(locator, current, target)).rejects.toMatchObject({ kind: 'incompatible' });
  });

  it('an imported store finds records by string-list membership, as the exported one did', async () => {
    const source = await pgStorage();
    const sourceOperator = testOperator(source.storage);
    const app = sourceOperator.application;
    const serviceId = await materialised(sourceOperator);
    const created = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'one', tags: ['b', 'a'] }, idempotencyKey: 'n1' }))['record'] as { id: string };
    await sourceOperator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: 'op-suspend' });
    const chunks: Uint8Array[] = [];
    await sourceOperator.transfer!.export({ serviceId, expectedServiceRevision: 4n, operationId: 'op-export' }, (chunk) => {
      chunks.push(chunk);
    });
    const bytes = Buffer.concat(chunks);
    const target = await pgStorage();
    const targetOperator = testOperator(target.storage);
    const artefact = await TRANSFER_CODEC.read(async function* () {
      yield bytes;
    });
    await targetOperator.transfer!.import('op-import', artefact);
    await targetOperator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: (await targetOperator.operations.current(serviceId)).serviceRevision, operationId: 'op-resume' });
    const found = await targetOperator.application.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null, filters: { tags: 'a' } });
    expect((found['records'] as { id: string }[]).map((record) => record.id)).toEqual([created.id]);
  });
});
