// The location policy accepts a lone hot journal beside a WAL-mode database
// only when SQLite's rollback of it (a truncation to the journal's original
// size, zero pages) can lose nothing: the database holds at most one page of
// its own page size (D26). The journal's page-size field is the journal's
// claim, not the database's: a crafted or foreign journal claiming 64 KiB
// pages must not make a small store with content look like a fresh one.

import Database from 'better-sqlite3';
import { closeSync, mkdtempSync, openSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDatabaseFile } from '../../../src/aipcs/storage/sqlite/location.js';

/** A 512-byte hot journal: SQLite's magic, no page records, the given original size in pages (0 unless said) and page size. */
function writeEmptyDatabaseJournal(database: string, pageSize: number, { originalPages = 0, magic = true } = {}): void {
  const header = Buffer.alloc(512);
  if (magic) Buffer.from([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]).copy(header, 0);
  header.writeUInt32BE(0x9af39eb5, 12);
  header.writeUInt32BE(originalPages, 16);
  header.writeUInt32BE(512, 20);
  header.writeUInt32BE(pageSize, 24);
  writeFileSync(`${database}-journal`, header, { mode: 0o600, flag: 'wx' });
}

/** A closed WAL-mode database file (mode 0600, 4096-byte pages), after `sql`. */
function walDatabase(sql = ''): string {
  const path = join(mkdtempSync(join(tmpdir(), 'aipcs-walswitch-')), 'store.sqlite');
  closeSync(openSync(path, 'wx', 0o600));
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  if (sql !== '') db.exec(sql);
  db.close();
  return path;
}

describe('a hot journal of an empty database beside a WAL-mode file', () => {
  it('is refused beside a store with content even when the journal claims pages as large as the store', () => {
    const path = walDatabase(`CREATE TABLE kept (value TEXT); INSERT INTO kept VALUES ('content')`);
    const bytes = statSync(path).size;
    expect(bytes).toBeGreaterThan(4096);
    expect(bytes).toBeLessThanOrEqual(65536);
    writeEmptyDatabaseJournal(path, 65536);
    expect(() => checkDatabaseFile(path)).toThrow(/rollback journal lies beside WAL files/);
  });

  it('is accepted beside the one page an interrupted switch of an empty database leaves', () => {
    const path = walDatabase();
    expect(statSync(path).size).toBe(4096);
    writeEmptyDatabaseJournal(path, 4096);
    expect(checkDatabaseFile(path)).toBe(true);
  });

  it('is refused when the journal names another page size than the one-page database', () => {
    const path = walDatabase();
    writeEmptyDatabaseJournal(path, 8192);
    expect(() => checkDatabaseFile(path)).toThrow(/rollback journal lies beside WAL files/);
  });

  // Mutation review S: each of these was accepted with its part of the check removed.
  it('is refused beside a store with content of the page size it names', () => {
    const path = walDatabase(`CREATE TABLE kept (value TEXT); INSERT INTO kept VALUES ('content')`);
    expect(statSync(path).size).toBeGreaterThan(4096);
    writeEmptyDatabaseJournal(path, 4096);
    expect(() => checkDatabaseFile(path)).toThrow(/rollback journal lies beside WAL files/);
  });

  it('is refused when it records an original size of one page or more', () => {
    const path = walDatabase();
    writeEmptyDatabaseJournal(path, 4096, { originalPages: 1 });
    expect(() => checkDatabaseFile(path)).toThrow(/rollback journal lies beside WAL files/);
  });

  it('is refused without SQLite\'s journal magic', () => {
    const path = walDatabase();
    writeEmptyDatabaseJournal(path, 4096, { magic: false });
    expect(() => checkDatabaseFile(path)).toThrow(/rollback journal lies beside WAL files/);
  });

  it('is refused when a -wal and -shm lie beside it too (the switch had finished)', () => {
    const path = walDatabase();
    writeEmptyDatabaseJournal(path, 4096);
    for (const suffix of ['-wal', '-shm']) writeFileSync(path + suffix, '', { mode: 0o600 });
    expect(() => checkDatabaseFile(path)).toThrow(/rollback journal lies beside WAL files/);
  });
});
