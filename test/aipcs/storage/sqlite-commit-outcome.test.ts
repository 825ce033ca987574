// A SQLite COMMIT that reports an I/O error after its commit frame may have
// reached the WAL (an fsync failure) can be found committed by the next
// recovery, so a write that fails there is operation_uncertain (retry the same
// key; contract §3.4), never the certain storage_unavailable. A COMMIT whose
// frames could not be written at all (a full disk) stays unavailable (D33).
// Fault injection with a failing fsync under a running server showed such a
// write reported unavailable and present after a crash.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../src/aipcs/core/ports.js';
import { SqliteConnection, toStorageFailure } from '../../../src/aipcs/storage/sqlite/connection.js';

/** A WAL database with one table, opened by the adapter; `failCommit` makes the next COMMIT throw `code` (after committing, when `committed`). */
function connectionWithFailingCommit(): { connection: SqliteConnection; path: string; failCommit(code: string, committed: boolean): void } {
  const path = join(mkdtempSync(join(tmpdir(), 'aipcs-commit-')), 'store.sqlite');
  const setup = new Database(path);
  setup.pragma('journal_mode = WAL');
  setup.exec('CREATE TABLE t (n INTEGER)');
  setup.close();
  const connection = new SqliteConnection(path, { busyTimeoutMs: 100, readonly: false });
  const exec = connection.db.exec.bind(connection.db);
  let failure: { code: string; committed: boolean } | undefined;
  connection.db.exec = (sql: string) => {
    if (sql !== 'COMMIT' || !failure) return exec(sql);
    const { code, committed } = failure;
    failure = undefined;
    if (committed) exec(sql);
    throw new Database.SqliteError('injected', code);
  };
  return { connection, path, failCommit: (code, committed) => (failure = { code, committed }) };
}

async function failureOf(promise: Promise<unknown>): Promise<StorageFailure> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StorageFailure);
  return error as StorageFailure;
}

const rows = (path: string): unknown[] => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT n FROM t').all();
  } finally {
    db.close();
  }
};

describe('a SQLite COMMIT that fails', () => {
  it('is uncertain when the failure comes after the commit may be durable (fsync)', async () => {
    const { connection, path, failCommit } = connectionWithFailingCommit();
    try {
      failCommit('SQLITE_IOERR_FSYNC', true);
      expect((await failureOf(connection.write((db) => db.prepare('INSERT INTO t VALUES (1)').run()))).kind).toBe('uncertain');
      // It was in fact committed: "unavailable" would have told the client it was not.
      expect(rows(path)).toEqual([{ n: 1 }]);
      // The connection goes on.
      await connection.write((db) => db.prepare('INSERT INTO t VALUES (2)').run());
      expect(rows(path)).toHaveLength(2);
    } finally {
      connection.close();
    }
  });

  it('stays unavailable when no frame could be written (full disk), and busy stays busy', async () => {
    const { connection, path, failCommit } = connectionWithFailingCommit();
    try {
      for (const [code, kind] of [['SQLITE_FULL', 'unavailable'], ['SQLITE_IOERR_WRITE', 'unavailable'], ['SQLITE_BUSY', 'busy']] as const) {
        failCommit(code, false);
        expect((await failureOf(connection.write((db) => db.prepare('INSERT INTO t VALUES (1)').run()))).kind).toBe(kind);
      }
      expect(rows(path)).toEqual([]);
    } finally {
      connection.close();
    }
  });

  it('of a read is unavailable, never uncertain', async () => {
    const { connection, failCommit } = connectionWithFailingCommit();
    try {
      failCommit('SQLITE_IOERR_FSYNC', true);
      expect((await failureOf(connection.read((db) => db.prepare('SELECT n FROM t').all()))).kind).toBe('unavailable');
    } finally {
      connection.close();
    }
  });
});

describe('a SQLite error outside COMMIT', () => {
  // Contention is storage_busy (retry), whatever extended code or lock kind
  // reports it; a constraint stays a constraint; the rest is unavailable.
  it('maps every busy and locked code to busy, constraints to constraint, the rest to unavailable', () => {
    const kind = (code: string) => toStorageFailure(new Database.SqliteError('injected', code)).kind;
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED', 'SQLITE_LOCKED_SHAREDCACHE']) expect(kind(code)).toBe('busy');
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_FOREIGNKEY']) expect(kind(code)).toBe('constraint');
    for (const code of ['SQLITE_IOERR', 'SQLITE_CORRUPT', 'SQLITE_FULL', 'SQLITE_CANTOPEN']) expect(kind(code)).toBe('unavailable');
    expect(toStorageFailure(new Error('not a driver error')).kind).toBe('unavailable');
  });
});
