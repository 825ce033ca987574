// PostgreSQL adapter under the operator services: suspend/resume move the
// write fence and data writes obey it; export from PostgreSQL imports into
// PostgreSQL and into SQLite (and back) with every record, history event,
// branch and membership intact; purge removes the service schema and leaves
// a tombstone; the admin opening inspects without creating anything.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { Operator, OperatorStoragePorts } from '../../../../src/aipcs/core/application.js';
import { TRANSFER_CODEC } from '../../../../src/aipcs/compose.js';
import { namespaceOf } from '../../../../src/aipcs/core/lifecycle.js';
import { openPostgresStorage, openPostgresStorageForAdmin } from '../../../../src/aipcs/storage/postgres/index.js';
import { openSqliteStorage } from '../../../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../../../src/common/json.js';
import { manifest } from '../../../conformance/harness.js';
import { notesManifest } from '../../../support/manifests.js';
import { heldWriteUnit, testOperator } from '../../../support/operator.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../../support/postgres.js';

const timeouts = { connectTimeoutSeconds: 5, lockTimeoutMs: 2000, statementTimeoutMs: 10000 };

function operatorOver(storage: OperatorStoragePorts): Operator {
  return testOperator(storage, { stepMicros: 7n });
}

async function exportBytes(operator: Operator, serviceId: string, revision: bigint, operationId: string): Promise<{ bytes: Buffer; result: JsonObject }> {
  const chunks: Uint8Array[] = [];
  const transfer = operator.transfer;
  if (!transfer) throw new Error('no codec');
  const result = await transfer.export({ serviceId, expectedServiceRevision: revision, operationId }, (chunk) => {
    chunks.push(chunk);
  });
  return { bytes: Buffer.concat(chunks), result };
}

async function importBytes(operator: Operator, bytes: Buffer, operationId: string): Promise<JsonObject> {
  const artefact = await TRANSFER_CODEC.read(async function* () {
    yield bytes;
  });
  const transfer = operator.transfer;
  if (!transfer) throw new Error('no codec');
  return transfer.import(operationId, artefact);
}

/** Seeds, designs and materialises a notes service with records, history, a branch tree and memberships. */
async function populated(operator: Operator): Promise<string> {
  const app = operator.application;
  const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
  await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
  await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
  const project = (await app.records.create({ serviceId, entityName: 'project', record: { name: 'Apollo', code: 'AP' }, idempotencyKey: 'p' }))['record'] as JsonObject;
  const notes: JsonObject[] = [];
  for (const [i, record] of [
    { title: 'one', confidence: 1.0, priority: 9223372036854775807n, tags: ['b', 'a'], project_id: project['id'] as string },
    { title: 'two', confidence: 1n, pinned: true, due_at: '2030-01-01T00:00:00+00:00' },
    { title: '  três  ', status: 'draft', aliases: ['x'] },
  ].entries()) {
    notes.push((await app.records.create({ serviceId, entityName: 'note', record: record as JsonObject, idempotencyKey: `n${i}` }))['record'] as JsonObject);
  }
  const first = notes[0] as JsonObject;
  await app.records.update({ serviceId, entityName: 'note', recordId: first['id'] as string, updates: { status: 'complete' }, expectedRecordVersion: 1n, idempotencyKey: 'u' });
  const parent = (await app.branches.create({ serviceId, slug: 'parent', title: 'Parent', intent: 'Top.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: 'b1' }))['branch'] as JsonObject;
  const child = (await app.branches.create({ serviceId, slug: 'child', title: 'Child', intent: 'Below.', branchType: 'thread', parentBranchId: parent['id'] as string, retrievalSummary: 'S.', idempotencyKey: 'b2' }))['branch'] as JsonObject;
  const second = notes[1] as JsonObject;
  await app.branches.assign({
    serviceId,
    branchId: child['id'] as string,
    role: 'primary',
    operation: 'assign',
    records: [{ entityName: 'note', recordId: second['id'] as string, expectedRecordVersion: 1n }],
    idempotencyKey: 'a1',
  });
  await app.branches.assign({
    serviceId,
    branchId: parent['id'] as string,
    role: 'related',
    operation: 'assign',
    records: [{ entityName: 'project', recordId: project['id'] as string, expectedRecordVersion: 1n }],
    idempotencyKey: 'a2',
  });
  return serviceId;
}

/** Seeds, designs and materialises an empty notes service. */
async function materialised(operator: Operator): Promise<string> {
  const app = operator.application;
  const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
  await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
  await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
  return serviceId;
}

/** Everything a client can read of the service, for comparing two copies. */
async function contentOf(operator: Operator, serviceId: string): Promise<JsonObject> {
  const app = operator.application;
  const out: JsonObject = {};
  for (const entityName of ['note', 'project']) {
    out[`${entityName}:records`] = (await app.records.list({ serviceId, entityName, limit: 100, cursor: null, branch: null }))['records'] as JsonObject[];
    out[`${entityName}:history`] = (await app.records.history({ serviceId, entityName, recordId: null, limit: 100, cursor: null }))['events'] as JsonObject[];
  }
  const branches = (await app.branches.list({ serviceId, status: null, branchType: null, parentBranchId: null, limit: 100, cursor: null }))['branches'] as JsonObject[];
  out['branches'] = branches;
  for (const branch of branches) {
    for (const role of ['primary', 'related'] as const) {
      for (const entityName of ['note', 'project']) {
        out[`${branch['slug'] as string}:${role}:${entityName}`] = (
          (await app.records.list({ serviceId, entityName, limit: 100, cursor: null, branch: { branchId: branch['id'] as string, role } }))['records'] as JsonObject[]
        ).map((record) => record['id'] as JsonObject[keyof JsonObject]);
      }
    }
  }
  return out;
}

/** The store layout of notesManifest, what purge passes to remove. */
const notesLayout = (operator: Operator) => operator.application.lifecycle.layoutOf(manifest(notesManifest()));

async function revisionOf(operator: Operator, serviceId: string): Promise<bigint> {
  return (await operator.operations.current(serviceId)).serviceRevision;
}

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s under the operator services', (_version, cluster) => {
  const databases: TestDatabase[] = [];
  const opened: OperatorStoragePorts[] = [];
  const folders: string[] = [];
  const pgStorage = async (): Promise<{ storage: OperatorStoragePorts; db: TestDatabase }> => {
    const db = await createTestDatabase(cluster);
    databases.push(db);
    const storage = await openPostgresStorage({ dsn: db.url, ...timeouts });
    opened.push(storage);
    return { storage, db };
  };
  const sqliteStorage = async (): Promise<OperatorStoragePorts> => {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-operator-'));
    folders.push(base);
    const storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
    opened.push(storage);
    return storage;
  };

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((storage) => storage.close()));
    await Promise.all(databases.splice(0).map((db) => db.drop()));
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  });

  it('suspend closes the write fence, resume opens it, and data writes follow', async () => {
    const { storage } = await pgStorage();
    const operator = operatorOver(storage);
    const serviceId = await populated(operator);
    const locator = { backend: 'postgresql' as const, namespace: namespaceOf(serviceId) };
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 1n, state: 'open' });
    await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: await revisionOf(operator, serviceId), operationId: 'op-suspend' });
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 2n, state: 'closed' });
    // Registry admission refuses first; the fence refuses a unit that was already admitted.
    await expect(operator.application.records.create({ serviceId, entityName: 'note', record: { title: 'late' }, idempotencyKey: 'late' })).rejects.toMatchObject({ code: 'storage_unavailable' });
    expect(await storage.data.write(locator, 'agent-a', (tx) => tx.fenceIsOpen())).toBe(false);
    await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: await revisionOf(operator, serviceId), operationId: 'op-resume' });
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 3n, state: 'open' });
    await operator.application.records.create({ serviceId, entityName: 'note', record: { title: 'late' }, idempotencyKey: 'late' });
    // Compare-and-change refuses a stale expectation and changes nothing.
    expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed')).toBeNull();
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 3n, state: 'open' });
  });

  // A store without its fence row (made before the fence existed) reads as
  // open at generation 1: the change must still wait for an admitted unit.
  it.each([
    ['', false],
    [' (on a store without a fence row)', true],
  ] as const)('never lets a mutation straddle a fence change: the change waits for an admitted unit, later units see it closed%s', async (_case, withoutFenceRow) => {
    const { storage, db } = await pgStorage();
    const operator = operatorOver(storage);
    const serviceId = await populated(operator);
    const namespace = namespaceOf(serviceId);
    const locator = { backend: 'postgresql' as const, namespace };
    if (withoutFenceRow) {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        expect((await client.query(`DELETE FROM "${namespace}"."__aipcs_write_fence"`)).rowCount).toBe(1);
      } finally {
        await client.end();
      }
    }
    const unit = await heldWriteUnit(storage, locator, {
      rest: (tx) => tx.putReplay({ idempotencyKey: 'inside', kind: 'create', fingerprint: 'f', result: {}, completedAt: 1n }),
    });
    expect(unit.sawOpen).toBe(true);
    let changed = false;
    const change = storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed').then((fence) => {
      changed = true;
      return fence;
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The admitted unit has not committed: the change must not be in effect yet.
      expect(changed).toBe(false);
    } finally {
      unit.release();
      await unit.ended;
    }
    expect(await change).toEqual({ generation: 2n, state: 'closed' });
    expect(await storage.data.write(locator, 'agent-a', (tx) => tx.fenceIsOpen())).toBe(false);
    expect(await storage.data.read(locator, 'agent-a', (tx) => tx.writeFence())).toEqual({ generation: 2n, state: 'closed' });
  });

  it('exports from PostgreSQL and imports into PostgreSQL and SQLite with identical content, and back', async () => {
    const source = await pgStorage();
    const sourceOperator = operatorOver(source.storage);
    const serviceId = await populated(sourceOperator);
    const before = await contentOf(sourceOperator, serviceId);
    await sourceOperator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: await revisionOf(sourceOperator, serviceId), operationId: 'op-suspend' });
    const revision = await revisionOf(sourceOperator, serviceId);
    const exported = await exportBytes(sourceOperator, serviceId, revision, 'op-export');
    expect((exported.result['receipt'] as JsonObject)['verification']).toBe('verified');
    // A replayed export is byte-identical.
    expect((await exportBytes(sourceOperator, serviceId, revision, 'op-export')).bytes.equals(exported.bytes)).toBe(true);

    for (const target of [await pgStorage().then((opened) => opened.storage), await sqliteStorage()]) {
      const operator = operatorOver(target);
      const imported = await importBytes(operator, exported.bytes, 'op-import');
      expect(imported['service']).toMatchObject({ service_id: serviceId, operational_status: 'suspended', storage: { backend: target.backend } });
      expect(await importBytes(operator, exported.bytes, 'op-import')).toEqual(imported);
      await operator.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: await revisionOf(operator, serviceId), operationId: 'op-resume' });
      expect(await contentOf(operator, serviceId)).toEqual(before);
      // The imported store takes writes like a materialised one.
      await operator.application.records.create({ serviceId, entityName: 'note', record: { title: 'after import' }, idempotencyKey: 'after' });
    }

    // SQLite → PostgreSQL: the round trip closes.
    const sqlite = await sqliteStorage();
    const sqliteOperator = operatorOver(sqlite);
    await importBytes(sqliteOperator, exported.bytes, 'op-import');
    const again = await exportBytes(sqliteOperator, serviceId, await revisionOf(sqliteOperator, serviceId), 'op-export-2');
    const back = operatorOver((await pgStorage()).storage);
    await importBytes(back, again.bytes, 'op-import-2');
    await back.operations.transition({ kind: 'resume', serviceId, expectedServiceRevision: await revisionOf(back, serviceId), operationId: 'op-resume' });
    expect(await contentOf(back, serviceId)).toEqual(before);
  });

  it('refuses to export a store whose meta row binds it to another service, handing out no bytes', async () => {
    // Export reads in its own snapshot unit (not the data tools' read unit), which checks the binding too (D42).
    const { storage, db } = await pgStorage();
    const operator = operatorOver(storage);
    const serviceId = await materialised(operator);
    await operator.application.records.create({ serviceId, entityName: 'note', record: { title: 'kept' }, idempotencyKey: 'n' });
    await operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: 'op-suspend' });
    const schema = namespaceOf(serviceId);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`UPDATE "${schema}"."__aipcs_service_store_meta" SET "namespace" = $1 WHERE "singleton" = 1`, [`svc_${'0'.repeat(32)}`]);
    } finally {
      await client.end();
    }
    const chunks: Uint8Array[] = [];
    const transfer = operator.transfer;
    if (!transfer) throw new Error('no codec');
    await expect(transfer.export({ serviceId, expectedServiceRevision: 4n, operationId: 'op-export' }, (chunk) => void chunks.push(chunk))).rejects.toMatchObject({ code: 'storage_unavailable' });
    expect(chunks).toEqual([]);
  });

  it('purges an archived service: the schema goes, a tombstone stays, and the id cannot come back', async () => {
    const { storage, db } = await pgStorage();
    const operator = operatorOver(storage);
    const serviceId = await populated(operator);
    const namespace = namespaceOf(serviceId);
    const locator = { backend: 'postgresql' as const, namespace };
    await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: await revisionOf(operator, serviceId), operationId: 'op-archive' });
    const revision = await revisionOf(operator, serviceId);
    const exported = await exportBytes(operator, serviceId, revision, 'op-export');
    const receiptId = (exported.result['receipt'] as JsonObject)['receipt_id'] as string;
    expect(await storage.stores.isAbsent(locator)).toBe(false);
    await operator.operations.purge({ serviceId, expectedServiceRevision: revision, operationId: 'op-purge', authority: { kind: 'verified_receipt', receiptId } });
    expect(await storage.stores.isAbsent(locator)).toBe(true);
    expect(await storage.stores.inspect(locator)).toMatchObject({ status: 'uninitialised', appliedRevision: 0n });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect((await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [namespace])).rowCount).toBe(0);
      const identity = await client.query(`SELECT identity_state, domain_name FROM aipcs_registry.aipcs_registry_identity WHERE service_id = $1`, [serviceId]);
      expect(identity.rows).toEqual([{ identity_state: 'tombstoned', domain_name: null }]);
    } finally {
      await client.end();
    }
    await expect(operator.operations.inspect(serviceId)).rejects.toMatchObject({ code: 'not_found' });
    await expect(importBytes(operator, exported.bytes, 'op-import')).rejects.toMatchObject({ code: 'already_exists' });
    // Removing again is not an error: the store is already absent.
    await storage.stores.remove(locator, notesLayout(operator));
  });

  it('refuses to remove a store whose fence is open, or one that is not this locator’s', async () => {
    const { storage, db } = await pgStorage();
    const operator = operatorOver(storage);
    const serviceId = await populated(operator);
    const locator = { backend: 'postgresql' as const, namespace: namespaceOf(serviceId) };
    await expect(storage.stores.remove(locator, notesLayout(operator))).rejects.toMatchObject({ kind: 'incompatible' });
    const fence = await storage.stores.readFence(locator);
    await storage.stores.changeFence(locator, fence, 'closed');
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`UPDATE "${locator.namespace}"."__aipcs_service_store_meta" SET namespace = 'svc_${'f'.repeat(32)}'`);
      await expect(storage.stores.remove(locator, notesLayout(operator))).rejects.toMatchObject({ kind: 'incompatible' });
      expect(await storage.stores.inspect(locator)).toMatchObject({ status: 'incompatible' });
      await client.query(`UPDATE "${locator.namespace}"."__aipcs_service_store_meta" SET namespace = $1`, [locator.namespace]);
      expect(await storage.stores.inspect(locator)).toEqual({ status: 'ready', appliedRevision: 1n, targetRevision: 1n, reason: null });
      await storage.stores.remove(locator, notesLayout(operator));
      expect(await storage.stores.isAbsent(locator)).toBe(true);
    } finally {
      await client.end();
    }
  });

  it('purge drops only the store’s own tables, RESTRICT: a view on them or a foreign table in the schema stops it, and the same purge retries once they are gone', async () => {
    const { storage, db } = await pgStorage();
    const operator = operatorOver(storage);
    const serviceId = await populated(operator);
    const namespace = namespaceOf(serviceId);
    const locator = { backend: 'postgresql' as const, namespace };
    await operator.operations.transition({ kind: 'archive', serviceId, expectedServiceRevision: await revisionOf(operator, serviceId), operationId: 'op-archive' });
    const revision = await revisionOf(operator, serviceId);
    const purge = () => operator.operations.purge({ serviceId, expectedServiceRevision: revision, operationId: 'op-purge', authority: { kind: 'explicit_override' } });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const count = async (sql: string) => Number((await client.query<{ n: string }>(sql)).rows[0]?.n);
      // Someone else's report over the store, outside it: CASCADE dropped it silently.
      await client.query(`CREATE VIEW public.note_report AS SELECT title FROM "${namespace}"."note"`);
      await expect(purge()).rejects.toMatchObject({ code: 'storage_unavailable' });
      expect(await count(`SELECT count(*) AS n FROM pg_views WHERE viewname = 'note_report'`)).toBe(1);
      expect(await storage.stores.inspect(locator)).toMatchObject({ status: 'ready' });
      await client.query(`DROP VIEW public.note_report`);
      // A table the store does not know, inside its schema.
      await client.query(`CREATE TABLE "${namespace}"."extra" (x integer)`);
      await expect(purge()).rejects.toMatchObject({ code: 'storage_unavailable' });
      expect(await count(`SELECT count(*) AS n FROM pg_tables WHERE schemaname = '${namespace}' AND tablename = 'extra'`)).toBe(1);
      expect(await storage.stores.inspect(locator)).toMatchObject({ status: 'ready' });
      await client.query(`DROP TABLE "${namespace}"."extra"`);
      // The claim stayed prepared: the same purge completes now.
      expect(await purge()).toMatchObject({ operation: 'purge', tombstone: { service_id: serviceId, authority: 'explicit_override' } });
      expect(await storage.stores.isAbsent(locator)).toBe(true);
    } finally {
      await client.end();
    }
  });

  it('an import retry whose re-observation of the staged store loses its connection stays prepared (operation_uncertain) and the same key then completes', async () => {
    const source = await pgStorage();
    const sourceOperator = operatorOver(source.storage);
    const serviceId = await populated(sourceOperator);
    await sourceOperator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: await revisionOf(sourceOperator, serviceId), operationId: 'op-suspend' });
    const exported = await exportBytes(sourceOperator, serviceId, await revisionOf(sourceOperator, serviceId), 'op-export');

    const { storage, db } = await pgStorage();
    const operator = operatorOver(storage);
    const role = new URL(db.url).username;
    const holder = new pg.Client({ connectionString: db.url });
    const watcher = new pg.Client({ connectionString: db.url });
    for (const client of [holder, watcher]) {
      // A failed run leaves them to the database's forced drop.
      client.on('error', () => undefined);
      await client.connect();
    }
    /** A transaction of the role (not the holder's) waiting for a lock: only the holder's lock on the store's metadata table is there to wait for. */
    const waiting = async (): Promise<{ pid: number; xact: string }> => {
      for (;;) {
        const rows = await watcher.query<{ pid: number; xact: string }>(
          `SELECT pid, xact_start::text AS xact FROM pg_stat_activity WHERE usename = $1 AND pid <> $2 AND wait_event_type = 'Lock'`,
          [role, (holder as unknown as { processID: number }).processID],
        );
        const found = rows.rows[0];
        if (found !== undefined) return found;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    try {
      // First attempt: staged and re-observed, but publication cannot take the
      // registry's service table, so the claim stays prepared over a staged store.
      await holder.query(`BEGIN; LOCK TABLE aipcs_registry.aipcs_registry_service IN EXCLUSIVE MODE`);
      await expect(importBytes(operator, exported.bytes, 'op-import')).rejects.toMatchObject({ code: 'storage_busy' });
      await holder.query('COMMIT');
      const namespace = namespaceOf(serviceId);
      expect(await storage.stores.inspect({ backend: 'postgresql', namespace })).toMatchObject({ status: 'ready' });

      // Second attempt (waits for locks as long as the test needs): inspection
      // finds the staged store ready; the re-observation that follows loses
      // its connection.
      const patientStorage = await openPostgresStorage({ dsn: db.url, ...timeouts, lockTimeoutMs: 120_000, statementTimeoutMs: 120_000 });
      opened.push(patientStorage);
      const patient = operatorOver(patientStorage);
      const meta = `"${namespace}"."__aipcs_service_store_meta"`;
      await holder.query(`BEGIN; LOCK TABLE ${meta} IN ACCESS EXCLUSIVE MODE`);
      const retry = importBytes(patient, exported.bytes, 'op-import');
      retry.catch(() => undefined);
      // The inspection waits (maybe more than once: catalog functions take
      // and drop the lock) in its own transaction; each time it is let through
      // and the lock taken again. The first wait of another transaction is
      // the re-observation's: its backend is terminated.
      const inspection = await waiting();
      for (;;) {
        await holder.query(`COMMIT; BEGIN; LOCK TABLE ${meta} IN ACCESS EXCLUSIVE MODE`);
        const next = await waiting();
        if (next.pid === inspection.pid && next.xact === inspection.xact) continue;
        await watcher.query('SELECT pg_terminate_backend($1)', [next.pid]);
        break;
      }
      await expect(retry).rejects.toMatchObject({ code: 'operation_uncertain' });
      await holder.query('COMMIT');

      // Nothing was found to differ: the same key completes the import.
      const imported = await importBytes(patient, exported.bytes, 'op-import');
      expect(imported['service']).toMatchObject({ service_id: serviceId, operational_status: 'suspended', recovery_state: 'clear' });
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await watcher.end();
    }
  });

  it('opens for admin without creating or migrating anything, read-only unless asked', async () => {
    const db = await createTestDatabase(cluster);
    databases.push(db);
    const empty = await openPostgresStorageForAdmin({ dsn: db.url, ...timeouts }, { writable: false });
    expect(empty).toEqual({ registry: { status: 'uninitialised', appliedRevision: 0n, targetRevision: 1n, reason: null }, ports: null });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      expect((await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'aipcs_registry'`)).rowCount).toBe(0);
      const served = await openPostgresStorage({ dsn: db.url, ...timeouts });
      const serviceId = await populated(operatorOver(served));
      await served.close();
      const readOnly = await openPostgresStorageForAdmin({ dsn: db.url, ...timeouts }, { writable: false });
      expect(readOnly.registry).toEqual({ status: 'ready', appliedRevision: 1n, targetRevision: 1n, reason: null });
      const ports = readOnly.ports as OperatorStoragePorts;
      opened.push(ports);
      const operator = operatorOver(ports);
      expect((await operator.operations.inspect(serviceId))['service_revision']).toBe(3n);
      await expect(
        operator.operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: 'op-suspend' }),
      ).rejects.toMatchObject({ code: 'storage_unavailable' });
      expect((await client.query(`SELECT count(*)::int AS n FROM aipcs_registry.aipcs_registry_claim WHERE idempotency_key = 'op-suspend'`)).rows).toEqual([{ n: 0 }]);
      const writable = await openPostgresStorageForAdmin({ dsn: db.url, ...timeouts }, { writable: true });
      const writablePorts = writable.ports as OperatorStoragePorts;
      opened.push(writablePorts);
      await operatorOver(writablePorts).operations.transition({ kind: 'suspend', serviceId, expectedServiceRevision: 3n, operationId: 'op-suspend' });
      await client.query(`UPDATE aipcs_registry.aipcs_registry_meta SET dirty = true`);
      expect(await openPostgresStorageForAdmin({ dsn: db.url, ...timeouts }, { writable: false })).toEqual({
        registry: { status: 'dirty', appliedRevision: 1n, targetRevision: 1n, reason: null },
        ports: null,
      });
    } finally {
      await client.end();
    }
  });

  // From a mutation review of the PostgreSQL adapter: cases the tests above did not pin down.
  it('compare-and-change is atomic: of two changes from the same expectation, racing behind an admitted unit, exactly one wins', async () => {
    const { storage } = await pgStorage();
    const operator = testOperator(storage);
    const serviceId = await materialised(operator);
    const locator = { backend: 'postgresql' as const, namespace: namespaceOf(serviceId) };
    const unit = await heldWriteUnit(storage, locator, { generation: 1n });
    expect(unit.sawOpen).toBe(true);
    const first = storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed');
    const second = storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed');
    await new Promise((resolve) => setTimeout(resolve, 300));
    unit.release();
    await unit.ended;
    const outcomes = await Promise.all([first, second]);
    expect(outcomes.filter((fence) => fence !== null)).toEqual([{ generation: 2n, state: 'closed' }]);
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 2n, state: 'closed' });
  });

  it('compare-and-change compares the state as well as the generation', async () => {
    const { storage } = await pgStorage();
    const operator = testOperator(storage);
    const serviceId = await materialised(operator);
    const namespace = namespaceOf(serviceId);
    const locator = { backend: 'postgresql' as const, namespace };
    expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'closed' }, 'open')).toBeNull();
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 1n, state: 'open' });
    // And at a later generation.
    expect(await storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed')).toEqual({ generation: 2n, state: 'closed' });
    expect(await storage.stores.changeFence(locator, { generation: 2n, state: 'open' }, 'closed')).toBeNull();
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 2n, state: 'closed' });
  });

  // Mutation review BG: the fence row is also read FOR UPDATE (operations spec
  // §3.3.3), so a change compares against the latest committed fence even when
  // a peer changed the row without the store lock while the change waited.
  it('compare-and-change compares against a fence a peer committed while the change waited for the row', async () => {
    const { storage, db } = await pgStorage();
    const serviceId = await materialised(testOperator(storage));
    const locator = { backend: 'postgresql' as const, namespace: namespaceOf(serviceId) };
    const peer = new pg.Client({ connectionString: db.url });
    await peer.connect();
    try {
      await peer.query('BEGIN');
      await peer.query(`UPDATE "${locator.namespace}"."__aipcs_write_fence" SET "generation" = 5`);
      const change = storage.stores.changeFence(locator, { generation: 1n, state: 'open' }, 'closed');
      // Well within lock_timeout: the change is waiting on the row by now.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await peer.query('COMMIT');
      expect(await change).toBeNull();
    } finally {
      await peer.end();
    }
    expect(await storage.stores.readFence(locator)).toEqual({ generation: 5n, state: 'open' });
  });

  // Mutation review BG: datetime values may carry any number of fraction digits
  // (contract §4.3, digits beyond six dropped), so a datetime column is indexed
  // through a hash of its text as a string column is; a long one broke the write.
  it('writes and finds string and datetime values far longer than a btree entry in their indexed columns', async () => {
    const { storage } = await pgStorage();
    const operator = testOperator(storage);
    const app = operator.application;
    const serviceId = await materialised(operator);
    // Random digits and letters: pglz cannot shrink them below a third of a page.
    const random = (alphabet: string, length: number): string => Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join('');
    const dueAt = `2024-01-01T00:00:00.${random('0123456789', 12000)}Z`;
    const code = random('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 12000);
    await app.records.create({ serviceId, entityName: 'project', record: { name: 'p', code }, idempotencyKey: 'lp' });
    const note = (await app.records.create({ serviceId, entityName: 'note', record: { title: 'n', due_at: dueAt }, idempotencyKey: 'ln' }))['record'] as JsonObject;
    const found = await app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null, filters: { due_at: dueAt } });
    expect((found['records'] as JsonObject[]).map((record) => record['id'])).toEqual([note['id']]);
    // The unique index on project.code still refuses an equal value.
    await expect(app.records.create({ serviceId, entityName: 'project', record: { name: 'q', code }, idempotencyKey: 'lq' })).rejects.toMatchObject({ code: 'constraint_violation' });
  });

  it('materialise refuses a schema of the locator\'s name that someone else made (incompatible, nothing adopted)', async () => {
    const { storage, db } = await pgStorage();
    const operator = testOperator(storage);
    const app = operator.application;
    const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
    const namespace = namespaceOf(serviceId);
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
    const namespace = namespaceOf(serviceId);
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
