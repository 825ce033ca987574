// SQLite adapter: how the registry file classifies (registry.ts,
// classifyRegistry) and what serve and the admin view do with each class:
// a meta row that is not ours, or names a revision other than the one its
// objects are at, is incompatible; a dirty one keeps its revision; a
// revision-1 registry is upgraded by serve alone, in any journal mode, but
// never when a row does not decode; a file that is not ready is never
// switched to WAL. Written in mutation review S: each survived removing or
// loosening its check.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { migrateSqliteRegistry, openSqliteRegistryForAdmin, REGISTRY_DDL_R1, REGISTRY_DDL_R2 } from '../../../src/aipcs/storage/sqlite/registry.js';
import { materialisedNotes } from '../../conformance/harness.js';
import { freshDataRoot } from '../../support/aipcs-client.js';

const require = createRequire(import.meta.url);

const optionsFor = (dataRoot: string) => ({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });

/** A fresh ready registry (serve's migration), closed; its file path. */
async function readyRegistry(dataRoot: string): Promise<string> {
  (await migrateSqliteRegistry(optionsFor(dataRoot))).close();
  return join(dataRoot, 'registry.sqlite');
}

/** Runs `sql` on the closed registry file with another connection, leaving no -wal behind. */
function change(path: string, sql: string): void {
  const db = new Database(path);
  db.exec(sql);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

/** What the read-only admin view makes of the registry (closing it when open). */
async function inspected(dataRoot: string): Promise<{ status: string; appliedRevision: bigint | null }> {
  const opening = await openSqliteRegistryForAdmin(optionsFor(dataRoot), { writable: false });
  opening.registry?.close();
  return { status: opening.state.status, appliedRevision: opening.state.appliedRevision };
}

/** Takes a ready registry back to revision 1: its revision-2 objects dropped and its meta row saying 1. */
const TO_REVISION_1 = `DROP TABLE aipcs_registry_identity; DROP TABLE aipcs_registry_receipt; DROP INDEX aipcs_registry_claim_service;
  UPDATE aipcs_registry_meta SET applied_revision = 1`;

/** The journal mode the database header records (bytes 18-19): 1 rollback, 2 WAL. */
const headerMode = (path: string): number => readFileSync(path)[18] ?? 0;

describe('SQLite registry classification', () => {
  it.each([
    ['a meta row of another adapter', `UPDATE aipcs_registry_meta SET adapter_id = 'someone.else'`],
    ['no meta row', `DELETE FROM aipcs_registry_meta`],
  ])('calls a registry with %s incompatible at no revision, and serve refuses it', async (_name, sql) => {
    const dataRoot = freshDataRoot();
    change(await readyRegistry(dataRoot), sql);
    expect(await inspected(dataRoot)).toEqual({ status: 'incompatible', appliedRevision: null });
    await expect(migrateSqliteRegistry(optionsFor(dataRoot))).rejects.toMatchObject({ kind: 'unavailable' });
  });

  // SQLite's own objects (ANALYZE's statistics table) are no drift: the
  // object set compared is the registry's own (mutation review BE).
  it('stays ready once SQLite has added its statistics table', async () => {
    const dataRoot = freshDataRoot();
    change(await readyRegistry(dataRoot), 'ANALYZE');
    expect(await inspected(dataRoot)).toEqual({ status: 'ready', appliedRevision: 2n });
  });

  it('keeps the revision of a dirty registry', async () => {
    const dataRoot = freshDataRoot();
    change(await readyRegistry(dataRoot), 'UPDATE aipcs_registry_meta SET dirty = 1');
    expect(await inspected(dataRoot)).toEqual({ status: 'dirty', appliedRevision: 2n });
  });

  it('calls revision-2 objects under a meta row naming another revision incompatible, at that revision only when this build knows it', async () => {
    const dataRoot = freshDataRoot();
    const path = await readyRegistry(dataRoot);
    change(path, 'UPDATE aipcs_registry_meta SET applied_revision = 1');
    expect(await inspected(dataRoot)).toEqual({ status: 'incompatible', appliedRevision: 1n });
    change(path, 'UPDATE aipcs_registry_meta SET applied_revision = 7');
    expect(await inspected(dataRoot)).toEqual({ status: 'incompatible', appliedRevision: null });
  });

  it('is incompatible when its objects differ from this build\'s DDL in whitespace only (byte-identical CREATE text, ops spec 3.2.5)', async () => {
    const dataRoot = freshDataRoot();
    const path = await readyRegistry(dataRoot);
    const db = new Database(path);
    const meta = db.prepare('SELECT * FROM aipcs_registry_meta').get() as Record<string, unknown>;
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    const again = new Database(path);
    chmodSync(path, 0o600);
    again.pragma('journal_mode = WAL');
    for (const [i, ddl] of [...REGISTRY_DDL_R1, ...REGISTRY_DDL_R2].entries()) again.exec(i === 0 ? ddl.replace(/\n/, '\n ') : ddl);
    again.prepare('INSERT INTO aipcs_registry_meta VALUES (@singleton, @adapter_id, @applied_revision, @dirty)').run(meta);
    again.close();
    expect(await inspected(dataRoot)).toEqual({ status: 'incompatible', appliedRevision: 2n });
  });

  it('is upgraded from revision 1 by serve, also when the file was put back in rollback-journal mode', async () => {
    const dataRoot = freshDataRoot();
    const path = await readyRegistry(dataRoot);
    change(path, `${TO_REVISION_1}; PRAGMA journal_mode = DELETE`);
    expect(headerMode(path)).toBe(1);
    expect(await inspected(dataRoot)).toEqual({ status: 'outdated', appliedRevision: 1n });
    (await migrateSqliteRegistry(optionsFor(dataRoot))).close();
    expect(await inspected(dataRoot)).toEqual({ status: 'ready', appliedRevision: 2n });
    expect(headerMode(path)).toBe(2);
  });

  it('is not upgraded from revision 1 when a row does not decode: incompatible at revision 1, and left as it is', async () => {
    const dataRoot = freshDataRoot();
    const storage = await openSqliteStorage(optionsFor(dataRoot));
    await materialisedNotes(storage);
    await storage.close();
    const path = join(dataRoot, 'registry.sqlite');
    change(path, `${TO_REVISION_1}; UPDATE aipcs_registry_claim SET operation_kind = 'teleport'`);
    expect(await inspected(dataRoot)).toEqual({ status: 'incompatible', appliedRevision: 1n });
    await expect(migrateSqliteRegistry(optionsFor(dataRoot))).rejects.toMatchObject({ kind: 'unavailable' });
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT applied_revision FROM aipcs_registry_meta').pluck().get()).toBe(1);
    db.close();
  });

  it('refuses a dirty registry in rollback-journal mode without switching it to WAL', async () => {
    const dataRoot = freshDataRoot();
    const path = await readyRegistry(dataRoot);
    change(path, 'UPDATE aipcs_registry_meta SET dirty = 1; PRAGMA journal_mode = DELETE');
    const before = readFileSync(path);
    await expect(migrateSqliteRegistry(optionsFor(dataRoot))).rejects.toMatchObject({ kind: 'unavailable' });
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  // A page only quick_check reads (an index's): mutation review BE.
  it('refuses a damaged registry in rollback-journal mode without switching it to WAL', async () => {
    const dataRoot = freshDataRoot();
    const path = await readyRegistry(dataRoot);
    change(path, 'PRAGMA journal_mode = DELETE');
    const db = new Database(path, { readonly: true });
    const { rootpage, size } = db.prepare(`SELECT rootpage, (SELECT page_size FROM pragma_page_size) AS size FROM sqlite_schema WHERE name = 'aipcs_registry_service_list'`).get() as { rootpage: number; size: number };
    db.close();
    const bytes = readFileSync(path);
    // The index's root page is no b-tree page any more.
    bytes[(rootpage - 1) * size] = 0xff;
    writeFileSync(path, bytes);
    expect(headerMode(path)).toBe(1);
    await expect(migrateSqliteRegistry(optionsFor(dataRoot))).rejects.toMatchObject({ kind: 'unavailable' });
    expect(readFileSync(path).equals(bytes)).toBe(true);
  });

  it.each([
    ['a ready registry', ''],
    ['a revision-1 registry', TO_REVISION_1],
  ])('refuses %s in rollback-journal mode whose rows do not decode without switching it to WAL', async (_name, sql) => {
    const dataRoot = freshDataRoot();
    const storage = await openSqliteStorage(optionsFor(dataRoot));
    await materialisedNotes(storage);
    await storage.close();
    const path = join(dataRoot, 'registry.sqlite');
    change(path, `${sql}; UPDATE aipcs_registry_claim SET operation_kind = 'teleport'; PRAGMA journal_mode = DELETE`);
    const before = readFileSync(path);
    expect(headerMode(path)).toBe(1);
    await expect(migrateSqliteRegistry(optionsFor(dataRoot))).rejects.toMatchObject({ kind: 'unavailable' });
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  // Any change to the DDL beyond whitespace makes every registry an earlier
  // build wrote incompatible: it needs a new revision and its migration, and
  // then a new value here.
  it('has the objects of revision 2 exactly', async () => {
    const db = new Database(await readyRegistry(freshDataRoot()), { readonly: true });
    const objects = db.prepare(`SELECT type, name, sql FROM sqlite_schema WHERE substr(name, 1, 7) <> 'sqlite_' ORDER BY type, name`).all() as { type: string; name: string; sql: string }[];
    db.close();
    const spelled = JSON.stringify(objects.map(({ type, name, sql }) => [type, name, sql.replace(/\s+/g, ' ')]));
    expect(createHash('sha256').update(spelled).digest('hex')).toBe('def1598114cec7323da8c7470847bd696a5a7d6b8df8d1ebf9f2ad9d7481fae7');
  });
});

describe('SQLite registry inspection (read-only)', () => {
  it('throws for a root the textual rules refuse, before looking at the disk', async () => {
    await expect(openSqliteRegistryForAdmin(optionsFor('/tmp/../tmp/data'), { writable: false })).rejects.toMatchObject({ name: 'UnsafeLocationError' });
  });

  it('leaves the -wal of a server killed after a commit where it is, the database unchanged', async () => {
    const dataRoot = freshDataRoot();
    const path = await readyRegistry(dataRoot);
    // A server killed with a commit still in its -wal (no checkpoint ran).
    const killed = spawnSync(
      process.execPath,
      [
        '-e',
        `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const db = new D(${JSON.stringify(path)});
         db.pragma('wal_autocheckpoint = 0'); db.exec('CREATE TABLE passing (x INTEGER); DROP TABLE passing');
         process.kill(process.pid, 'SIGKILL');`,
      ],
      { env: { ...process.env, NODE_OPTIONS: '' } },
    );
    expect(killed.signal).toBe('SIGKILL');
    for (const suffix of ['-wal', '-shm']) chmodSync(path + suffix, 0o600);
    const database = readFileSync(path);
    const wal = readFileSync(`${path}-wal`);
    expect(wal.length).toBeGreaterThan(0);
    expect(await inspected(dataRoot)).toEqual({ status: 'ready', appliedRevision: 2n });
    // A read-only command writes nothing: a connection opened read-write would checkpoint and remove the -wal on close.
    expect(existsSync(`${path}-wal`)).toBe(true);
    expect(readFileSync(`${path}-wal`).equals(wal)).toBe(true);
    expect(readFileSync(path).equals(database)).toBe(true);
  });
});
