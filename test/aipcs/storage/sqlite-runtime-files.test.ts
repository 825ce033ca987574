// Files changed under a running SQLite connection: the connection refuses
// (StorageFailure unavailable) rather than reading or writing files that no
// longer sit at their paths.

import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../src/aipcs/core/ports.js';
import { SqliteConnection } from '../../../src/aipcs/storage/sqlite/connection.js';

function walDatabase(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'aipcs-runtime-')), 'store.sqlite');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER)');
  db.close();
  return path;
}

async function failureOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof StorageFailure) return error.kind;
    throw error;
  }
  return 'none';
}

describe('an open SQLite connection', () => {
  it('refuses once its -wal file is removed, instead of committing into the unlinked file', async () => {
    const path = walDatabase();
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      rmSync(`${path}-wal`);
      expect(await failureOf(connection.write((db) => db.exec('INSERT INTO t VALUES (2)')))).toBe('unavailable');
      expect(await failureOf(connection.read((db) => db.prepare('SELECT count(*) FROM t').get()))).toBe('unavailable');
    } finally {
      connection.close();
    }
  });

  it('refuses once its -wal file is replaced by another one', async () => {
    const path = walDatabase();
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      copyFileSync(`${path}-wal`, `${path}-copy`);
      renameSync(`${path}-copy`, `${path}-wal`);
      expect(await failureOf(connection.write((db) => db.exec('INSERT INTO t VALUES (2)')))).toBe('unavailable');
    } finally {
      connection.close();
    }
  });

  it('keeps working while other connections come and go', async () => {
    const path = walDatabase();
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      await connection.read((db) => db.prepare('SELECT count(*) FROM t').get());
      for (let round = 0; round < 3; round++) {
        const other = new Database(path);
        other.exec(`INSERT INTO t VALUES (${round})`);
        other.close();
        await connection.write((db) => db.exec('INSERT INTO t VALUES (9)'));
      }
      const count = await connection.read((db) => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: bigint }).n);
      expect(count).toBe(6n);
    } finally {
      connection.close();
    }
  });
});
