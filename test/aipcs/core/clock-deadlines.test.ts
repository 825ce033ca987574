// The SQLite busy wait measures its timeout on a monotonic clock: a wall
// clock stepped forwards must not end the wait at once, and one stepped
// backwards must not stretch it (a 1 s wait into an hour).

import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteConnection } from '../../../src/aipcs/storage/sqlite/connection.js';
import { storageOutcome, walDatabase } from '../../support/sqlite.js';
import { steppableWallClock } from '../../support/wall-clock.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a SQLite write waiting for the writer slot while the wall clock steps', () => {
  it('keeps waiting after a forward step and commits once the slot is free', async () => {
    const path = walDatabase('aipcs-clock-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 3000, readonly: false });
    const holder = new Database(path);
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      const wall = steppableWallClock(3_600_000);
      holder.exec('BEGIN IMMEDIATE');
      const write = storageOutcome(connection.write((db) => db.exec('INSERT INTO t VALUES (2)')), 'done');
      wall.step();
      setTimeout(() => holder.open && holder.exec('COMMIT'), 100);
      expect(await write).toBe('done');
    } finally {
      holder.close();
      connection.close();
    }
  });

  it('still gives up within its timeout after a backward step', async () => {
    const path = walDatabase('aipcs-clock-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 200, readonly: false });
    const holder = new Database(path);
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      const wall = steppableWallClock(-3_600_000);
      holder.exec('BEGIN IMMEDIATE');
      const write = storageOutcome(connection.write((db) => db.exec('INSERT INTO t VALUES (2)')), 'done');
      wall.step();
      expect(await write).toBe('busy');
      holder.exec('ROLLBACK');
    } finally {
      holder.close();
      connection.close();
    }
  }, 10_000);
});
