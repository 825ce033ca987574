// SQLite service stores: a process keeps at most a bounded number of idle
// store connections open (each holds the database, -wal and -shm files), so
// a server that touches every service of a large principal does not run out
// of descriptors. A connection in use is never closed under its unit, and a
// store file replaced while its connection was closed is still refused. A
// process whose descriptors run out before the bound (a low `ulimit -n`)
// closes its idle stores instead of failing every new one.

import { copyFileSync, mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OperatorStoragePorts } from '../../../src/aipcs/core/application.js';
import { openSqliteStorage, type SqliteStorageOptions } from '../../../src/aipcs/storage/sqlite/index.js';
import { BOOKKEEPING_DDL, layoutDdl } from '../../../src/aipcs/storage/sqlite/service-store.js';
import { storeLayoutOf } from '../../../src/aipcs/core/layout.js';
import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { createNote, freshDataRoot, materialisedService } from '../../support/aipcs-admin.js';
import { sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { notesManifest } from '../../support/manifests.js';
import { appOver, manifest, type TestApp } from '../../conformance/harness.js';

/** Files under `folder` this process has open (database, -wal and -shm of each open store). */
function openFilesUnder(folder: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(folder);
    } catch {
      return false;
    }
  }).length;
}

/**
 * A fresh data root opened with `bounds` for each test of the calling
 * describe, with notes services made through its lifecycle.
 */
function storesUnder(bounds: Pick<SqliteStorageOptions, 'maxOpenStores' | 'maxOpenSchemaObjects'>) {
  let base = '';
  let storage: OperatorStoragePorts | undefined;
  const opened = { stores: '', app: undefined as unknown as TestApp };

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-open-stores-'));
    const dataRoot = join(base, 'data');
    opened.stores = join(dataRoot, 'service-stores');
    storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false, ...bounds });
    opened.app = appOver(storage);
  });

  afterEach(async () => {
    await storage?.close();
    rmSync(base, { recursive: true, force: true });
  });

  return {
    get stores(): string {
      return opened.stores;
    },
    get app(): TestApp {
      return opened.app;
    },
    /** Seeds, designs and materialises a notes service: its id and its store file. */
    async service(name: string): Promise<{ serviceId: string; file: string }> {
      const { app } = opened;
      const serviceId = (await app.lifecycle.seed({ domainName: name, domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: `s-${name}` }))['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: `d-${name}` });
      const materialised = await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: `m-${name}` });
      const namespace = (materialised['storage'] as JsonObject)['namespace'] as string;
      return { serviceId, file: join(opened.stores, `${namespace}.sqlite`) };
    },
    async titles(serviceId: string): Promise<JsonValue[]> {
      const listed = await opened.app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null });
      return (listed['records'] as JsonObject[]).map((record) => (record['fields'] as JsonObject)['title'] as JsonValue);
    },
  };
}

describe('open SQLite service stores', () => {
  const under = storesUnder({ maxOpenStores: 1 });
  const { service, titles } = under;

  it.skipIf(process.platform !== 'linux')('keeps idle store files open only up to the bound, and reopens a closed store on use', async () => {
    const services: string[] = [];
    for (const name of ['one', 'two', 'three', 'four']) {
      const { serviceId } = await service(name);
      await under.app.records.create({ serviceId, entityName: 'note', record: { title: name }, idempotencyKey: `c-${name}` });
      services.push(serviceId);
    }
    // One store: its database, -wal and -shm.
    expect(openFilesUnder(under.stores)).toBeLessThanOrEqual(3);
    for (const [i, serviceId] of services.entries()) expect(await titles(serviceId)).toEqual([['one', 'two', 'three', 'four'][i]]);
    expect(openFilesUnder(under.stores)).toBeLessThanOrEqual(3);
  });

  it('never closes a connection whose write waits for the writer slot', async () => {
    const a = await service('waiting');
    const b = await service('other');
    const holder = new Database(a.file);
    holder.exec('BEGIN IMMEDIATE');
    const pending = under.app.records.create({ serviceId: a.serviceId, entityName: 'note', record: { title: 'waited' }, idempotencyKey: 'c-waited' });
    // Using another store goes past the bound while the write waits.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await titles(b.serviceId)).toEqual([]);
    holder.exec('COMMIT');
    holder.close();
    await expect(pending).resolves.toMatchObject({ record: { fields: { title: 'waited' } } });
    expect(await titles(a.serviceId)).toEqual(['waited']);
  });

  it('refuses a store file replaced while its connection was closed', async () => {
    const a = await service('replaced');
    const b = await service('bystander');
    await under.app.records.create({ serviceId: a.serviceId, entityName: 'note', record: { title: 'kept' }, idempotencyKey: 'c-kept' });
    expect(await titles(b.serviceId)).toEqual([]); // a's connection is closed now
    copyFileSync(a.file, `${a.file}.copy`);
    renameSync(`${a.file}.copy`, a.file);
    await expect(titles(a.serviceId)).rejects.toMatchObject({ code: 'storage_unavailable' });
  });
});

/** Schema objects of a notes store (tables and indexes, SQLite's own included), as the bound on schemas counts them. */
function notesStoreObjects(): number {
  const db = new Database(':memory:');
  for (const ddl of [...BOOKKEEPING_DDL, ...layoutDdl(storeLayoutOf(manifest(notesManifest())))]) db.exec(ddl);
  const objects = db.prepare('SELECT count(*) FROM sqlite_schema').pluck().get() as number;
  db.close();
  return objects;
}

// The bounds close only what passes them: a bound of two keeps two idle stores.
describe.each([
  ['two stores', { maxOpenStores: 2 }],
  ['the schemas of two stores', { maxOpenSchemaObjects: 2 * notesStoreObjects() }],
])('open SQLite service stores bounded by %s', (_bound, bounds) => {
  const under = storesUnder(bounds);

  it.skipIf(process.platform !== 'linux')('keeps the two stores used last open, not fewer, as stores are made and used', async () => {
    const services: string[] = [];
    for (const name of ['one', 'two', 'three', 'four']) {
      services.push((await under.service(name)).serviceId);
      // Each open store: its database, -wal and -shm.
      expect(openFilesUnder(under.stores)).toBe(3 * Math.min(services.length, 2));
    }
    for (const serviceId of services) {
      expect(await under.titles(serviceId)).toEqual([]);
      expect(openFilesUnder(under.stores)).toBe(6);
    }
  });
});

// SQLite keeps each connection's parsed schema in memory: a store of a
// manifest near its bounds (thousands of tables and indexes) holds about
// 10 MB, so the bound on open stores also weighs their schemas.
describe('open SQLite service stores weighed by their schemas', () => {
  // Any store has more than one schema object: only the store in use stays open.
  const under = storesUnder({ maxOpenSchemaObjects: 1 });

  it.skipIf(process.platform !== 'linux')('closes idle stores once their schemas pass the bound, counting a store materialised while open', async () => {
    const services: string[] = [];
    // Each store opens empty in its materialise and gains its tables in that unit.
    for (const name of ['one', 'two', 'three']) services.push((await under.service(name)).serviceId);
    expect(openFilesUnder(under.stores)).toBeLessThanOrEqual(3);
    for (const [i, serviceId] of services.entries()) {
      await under.app.records.create({ serviceId, entityName: 'note', record: { title: `note ${i}` }, idempotencyKey: `c-${i}` });
      expect(openFilesUnder(under.stores)).toBeLessThanOrEqual(3);
    }
    expect(await under.titles(services[0] as string)).toEqual(['note 0']);
  });
});

describe('a serving process short of descriptors', () => {
  let server: AipcsClient | undefined;
  afterEach(async () => {
    await server?.close();
  });

  // 200 descriptors: enough for Node to load the server (about 150), not for
  // the 64 idle stores of the bound (three each) besides: before, the store
  // opened past the limit, and every one after it, failed.
  it('gives back idle stores when opening one more fails, and keeps serving every service', { timeout: 120_000 }, async () => {
    server = await startAipcs(sqliteArgs(freshDataRoot()), {}, { openFiles: 200 });
    const services: string[] = [];
    for (let i = 0; i < 70; i++) {
      const serviceId = await materialisedService(server, `many_${i}`);
      await createNote(server, serviceId, { title: `note ${i}` });
      services.push(serviceId);
    }
    for (const [i, serviceId] of services.entries()) {
      const listed = await server.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note', limit: 10 });
      expect((listed.result?.['records'] as { fields: { title: string } }[]).map((record) => record.fields.title)).toEqual([`note ${i}`]);
    }
    expect(server.stderr()).toBe('');
  });
});
