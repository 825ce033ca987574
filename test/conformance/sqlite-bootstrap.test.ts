// SQLite only: aipcs_bootstrap reads registry projections and never opens,
// allocates or migrates a service store. The store file is replaced by
// unreadable garbage; bootstrap's answer stays the same and the file is left
// untouched (no WAL or SHM sibling appears), while data tools fail closed.

import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dataRootPaths } from '../../src/aipcs/storage/sqlite/location.js';
import { openSqliteStorage } from '../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../src/common/json.js';
import { notesManifest } from '../support/manifests.js';
import { appOver, manifest } from './harness.js';

describe('bootstrap never opens a service store (sqlite)', () => {
  let base: string | undefined;

  afterEach(() => {
    if (base === undefined) return;
    const stores = dataRootPaths(join(base, 'data')).serviceStores;
    if (existsSync(stores)) for (const name of readdirSync(stores)) chmodSync(join(stores, name), 0o600);
    rmSync(base, { recursive: true, force: true });
    base = undefined;
  });

  it('answers the same from the registry alone when the store is unreadable', async () => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-bootstrap-'));
    const dataRoot = join(base, 'data');
    const open = () => openSqliteStorage({ dataRoot, busyTimeoutMs: 1000, defaultRoot: false });

    const storage = await open();
    const app = appOver(storage);
    const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
    await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
    await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
    await app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'r' });
    const before = await app.discovery.bootstrap({ limit: 100 });
    await storage.close();

    const stores = dataRootPaths(dataRoot).serviceStores;
    const storeFile = join(stores, `svc_${serviceId.replaceAll('-', '')}.sqlite`);
    expect(existsSync(storeFile)).toBe(true);
    for (const suffix of ['-wal', '-shm']) rmSync(storeFile + suffix, { force: true });
    const garbage = Buffer.from('this is not a database '.repeat(64));
    writeFileSync(storeFile, garbage);
    chmodSync(storeFile, 0o000);

    const reopened = await open();
    try {
      const again = appOver(reopened);
      const after = await again.discovery.bootstrap({ limit: 100 });
      expect(after).toEqual(before);
      expect((after['services'] as JsonObject[])[0]).toMatchObject({ service_id: serviceId, state: 'materialised', entities: ['note', 'project'] });
      expect(readdirSync(stores).sort()).toEqual([`svc_${serviceId.replaceAll('-', '')}.sqlite`]);
      chmodSync(storeFile, 0o600);
      expect(readFileSync(storeFile).equals(garbage)).toBe(true);
      // The store really is broken: a data tool that needs it fails closed.
      await expect(again.discovery.summary({ serviceId, sample: 0 })).rejects.toMatchObject({ code: 'storage_unavailable' });
    } finally {
      await reopened.close();
    }
  });
});
