// Details of the SQLite connection layer that the broader tests pass either
// way (left alive by mutation review BE): opening never creates a database,
// the switch to WAL waits out another process's writer, a unit's driver
// errors reach the caller as StorageFailure,
// a path that is not a regular file is no identity to check units against,
// the statement cache fills its bound exactly and keeps raw statements
// apart, and the revision a drifted meta table names is reported only from
// one row naming a known revision.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { cachedStatementCount, MAX_CACHED_STATEMENTS, metaRevisionOf, prepared, preparedRaw, SqliteConnection } from '../../../src/aipcs/storage/sqlite/connection.js';
import { storageOutcome, walDatabase } from '../../support/sqlite.js';

const require = createRequire(import.meta.url);
const open: Database.Database[] = [];

afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

function memory(): Database.Database {
  const db = new Database(':memory:');
  db.defaultSafeIntegers(true);
  open.push(db);
  return db;
}

describe('opening a SQLite connection', () => {
  it('never creates a missing database, read-only or not', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'aipcs-missing-')), 'store.sqlite');
    for (const readonly of [false, true]) {
      expect(() => new SqliteConnection(path, { busyTimeoutMs: 1000, readonly })).toThrow();
      expect(existsSync(path)).toBe(false);
    }
  });

  it('through a symbolic link has no file identity, so every unit refuses', async () => {
    const path = walDatabase('aipcs-linked-');
    const link = join(mkdtempSync(join(tmpdir(), 'aipcs-link-')), 'store.sqlite');
    symlinkSync(path, link);
    const connection = new SqliteConnection(link, { busyTimeoutMs: 1000, readonly: false });
    try {
      expect(connection.fileIdentity).toBeNull();
      expect(await storageOutcome(connection.read((db) => db.prepare('SELECT count(*) FROM t').get()))).toBe('unavailable');
    } finally {
      connection.close();
    }
  });
});

describe('switching to WAL', () => {
  it('waits, within the busy timeout, for a writer of another process to let go', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'aipcs-wal-switch-')), 'store.sqlite');
    new Database(path).close();
    // Another process holds the writer lock for 300 ms; SQLite answers the
    // switch busy at once then, without its busy handler.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const db = new D(${JSON.stringify(path)});
         db.exec('BEGIN IMMEDIATE'); console.log('held');
         setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);`,
      ],
      { env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    const connection = new SqliteConnection(path, { busyTimeoutMs: 5000, readonly: false });
    try {
      expect(connection.enableWal()).toBe(true);
    } finally {
      connection.close();
      await new Promise((resolve) => holder.once('exit', resolve));
    }
  });
});

describe('a unit whose work fails in SQLite', () => {
  it('rejects with the StorageFailure of the error (no driver error escapes), and leaves no transaction open', async () => {
    const path = walDatabase('aipcs-work-fails-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      connection.db.exec('CREATE UNIQUE INDEX t_v ON t (v)');
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      expect(await storageOutcome(connection.write((db) => db.exec('INSERT INTO t VALUES (1)')))).toBe('constraint');
      expect(await storageOutcome(connection.read((db) => db.exec('SELECT * FROM missing')))).toBe('unavailable');
      expect(connection.db.inTransaction).toBe(false);
    } finally {
      connection.close();
    }
  });
});

describe('the prepared-statement cache', () => {
  it('keeps as many statements as its bound, not one fewer', () => {
    const db = memory();
    for (let i = 0; i < MAX_CACHED_STATEMENTS + 10; i++) prepared(db, `SELECT ${i} AS filled`);
    expect(cachedStatementCount()).toBe(MAX_CACHED_STATEMENTS);
  });

  it('keeps a raw statement apart from the plain one of the same SQL', () => {
    const db = memory();
    const sql = 'SELECT 7 AS n';
    expect(prepared(db, sql).get()).toEqual({ n: 7n });
    expect(preparedRaw(db, sql).get()).toEqual([7n]);
    expect(prepared(db, sql).get()).toEqual({ n: 7n });
  });
});

describe('the revision a drifted meta table names', () => {
  const meta = (rows: [string, bigint][]): Database.Database => {
    const db = memory();
    db.exec('CREATE TABLE m (adapter_id TEXT, applied_revision INTEGER)');
    for (const [adapter, revision] of rows) db.prepare('INSERT INTO m VALUES (?, ?)').run(adapter, revision);
    return db;
  };

  it('is the one row\'s known revision', () => {
    expect(metaRevisionOf(meta([['ours', 2n]]), 'm', 'ours', [1n, 2n])).toBe(2n);
  });

  it('is null for two rows, another adapter, or a revision this build does not know', () => {
    expect(metaRevisionOf(meta([['ours', 2n], ['ours', 2n]]), 'm', 'ours', [1n, 2n])).toBeNull();
    expect(metaRevisionOf(meta([['theirs', 2n]]), 'm', 'ours', [1n, 2n])).toBeNull();
    expect(metaRevisionOf(meta([['ours', 7n]]), 'm', 'ours', [1n, 2n])).toBeNull();
    expect(metaRevisionOf(memory(), 'm', 'ours', [1n, 2n])).toBeNull();
  });
});
