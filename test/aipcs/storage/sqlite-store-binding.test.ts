// A service store's meta row binds the file to its service and to the store
// revision this build writes (operations spec §3.2.6: the namespace "binds the
// file to its locator; a copy under another name never reports ready"). Data
// tools read and write only a store whose meta says so: a copy of another
// service's store, or a store a newer build has moved to a later revision,
// answers storage_unavailable, as `doctor` reports it incompatible, instead
// of serving another service's records or writing rows the newer layout
// does not expect. So does a store holding a trigger or a view, which our
// DDL never makes: a trigger would run inside our writes.

import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createNote, freshDataRoot, key, materialisedService, seedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { foreignRollbackDatabase } from '../../support/sqlite.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

let client: AipcsClient | undefined;
afterEach(async () => {
  await client?.close();
  client = undefined;
});

const storePath = (dataRoot: string, serviceId: string): string => join(dataRoot, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);

function noteCount(path: string): bigint {
  const db = new Database(path, { readonly: true });
  db.defaultSafeIntegers(true);
  try {
    return (db.prepare('SELECT count(*) AS n FROM note').get() as { n: bigint }).n;
  } finally {
    db.close();
  }
}

describe('a service store bound to its service and revision', () => {
  it("refuses data tools on a copy of another service's store", async () => {
    const dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    const first = await materialisedService(client, 'first');
    const second = await materialisedService(client, 'second');
    await createNote(client, first, { title: 'Belongs to first' });
    await client.close();
    // Put in place with no server running: the copy is a new file, identity checks cannot tell.
    const target = storePath(dataRoot, second);
    for (const name of readdirSync(join(dataRoot, 'service-stores'))) if (name.startsWith(`svc_${second.replaceAll('-', '')}.sqlite`)) rmSync(join(dataRoot, 'service-stores', name));
    copyFileSync(storePath(dataRoot, first), target);
    client = await serveOn(dataRoot);
    const list = await client.call('aipcs_record_list', { service_id: second, entity_name: 'note' });
    expect(list.error?.code).toBe('storage_unavailable');
    const create = await client.call('aipcs_record_create', { service_id: second, entity_name: 'note', record: { title: 'Into the copy?' }, idempotency_key: key('c') });
    expect(create.error?.code).toBe('storage_unavailable');
    await client.close();
    client = undefined;
    expect(noteCount(target)).toBe(1n);
  });

  it('leaves some other rollback-journal database at a store path untouched (not switched to WAL)', async () => {
    const dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'foreign');
    await client.close();
    const path = storePath(dataRoot, serviceId);
    for (const name of readdirSync(join(dataRoot, 'service-stores'))) rmSync(join(dataRoot, 'service-stores', name));
    const before = foreignRollbackDatabase(path);
    expect(before.subarray(18, 20)).toEqual(Buffer.from([1, 1]));
    client = await serveOn(dataRoot);
    const list = await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
    expect(list.error?.code).toBe('storage_unavailable');
    await client.close();
    client = undefined;
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(join(dataRoot, 'service-stores'))).toEqual([`svc_${serviceId.replaceAll('-', '')}.sqlite`]);
  });

  it('ends a materialise that meets another rollback-journal database at the store path recovery_required, leaving it untouched', async () => {
    const dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    const serviceId = await seedService(client, 'occupied');
    const designed = await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: key('design') });
    expect(designed.ok).toBe(true);
    const path = storePath(dataRoot, serviceId);
    mkdirSync(join(dataRoot, 'service-stores'), { recursive: true, mode: 0o700 });
    const before = foreignRollbackDatabase(path);
    const materialise = { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: key('mat') };
    // The same answer on the retry: a terminal state, not operation_uncertain for ever.
    for (let attempt = 0; attempt < 2; attempt++) {
      expect((await client.call('aipcs_service_materialise', materialise)).error?.code, `attempt ${attempt}`).toBe('recovery_required');
    }
    const inspected = await client.call('aipcs_service_inspect', { service_id: serviceId });
    expect(inspected.result).toMatchObject({ recovery_state: 'recovery_required', design_state: 'seeded' });
    await client.close();
    client = undefined;
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('refuses data tools on a store a newer build moved to a later revision', async () => {
    const dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'newer');
    await createNote(client, serviceId, { title: 'Before' });
    await client.close();
    const path = storePath(dataRoot, serviceId);
    const db = new Database(path);
    db.prepare('UPDATE __aipcs_service_store_meta SET applied_revision = applied_revision + 1').run();
    db.close();
    client = await serveOn(dataRoot);
    const create = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'After' }, idempotency_key: key('c') });
    expect(create.error?.code).toBe('storage_unavailable');
    const list = await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
    expect(list.error?.code).toBe('storage_unavailable');
    await client.close();
    client = undefined;
    expect(noteCount(path)).toBe(1n);
  });

  it('refuses data tools on a store holding a trigger or a view, which could rewrite a memory as it is saved, until it is dropped', async () => {
    const dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    const serviceId = await materialisedService(client, 'planted');
    await createNote(client, serviceId, { title: 'Before' });
    const path = storePath(dataRoot, serviceId);
    for (const [plant, remove] of [
      [`CREATE TRIGGER "sqliteevil" AFTER INSERT ON "note" BEGIN UPDATE "note" SET "title" = 'pwned' WHERE "id" = NEW."id"; END`, 'DROP TRIGGER "sqliteevil"'],
      ['CREATE VIEW "note_view" AS SELECT "id" FROM "note"', 'DROP VIEW "note_view"'],
    ] as const) {
      // Planted while the server runs and holds the store open.
      const db = new Database(path);
      db.exec(plant);
      db.close();
      const create = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'Saved as written?' }, idempotency_key: key('c') });
      expect(create.error?.code).toBe('storage_unavailable');
      const list = await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
      expect(list.error?.code).toBe('storage_unavailable');
      expect(noteCount(path)).toBe(1n);
      const again = new Database(path);
      again.exec(remove);
      again.close();
      const listed = await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
      expect(listed.ok).toBe(true);
    }
    await createNote(client, serviceId, { title: 'After' });
    expect(noteCount(path)).toBe(2n);
  });
});
