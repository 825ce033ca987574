// Details of the SQLite connection layer that the broader tests pass either
// way (left alive by mutation review BE): the statement cache fills its
// bound exactly and keeps raw statements apart, and the revision a drifted
// meta table names is reported only from one row naming a known revision.

import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { cachedStatementCount, MAX_CACHED_STATEMENTS, metaRevisionOf, prepared, preparedRaw } from '../../../src/aipcs/storage/sqlite/connection.js';

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
