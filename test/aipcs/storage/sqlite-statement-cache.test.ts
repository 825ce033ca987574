// Prepared statements are kept for reuse within one bound for the whole
// process, least recently used out first: search SQL differs with every set
// of filter fields, and a bound per connection times the open stores let a
// client's searches keep hundreds of MB of native statements.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cachedStatementCount, MAX_CACHED_STATEMENTS, prepared, SqliteConnection } from '../../../src/aipcs/storage/sqlite/connection.js';

describe('the prepared-statement cache', () => {
  let base: string;
  const open: Database.Database[] = [];

  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-statements-'));
  });

  afterEach(() => {
    for (const db of open.splice(0)) db.close();
    rmSync(base, { recursive: true, force: true });
  });

  it('keeps one bound over every connection, and the statements used lately', () => {
    const first = new Database(':memory:');
    const second = new Database(':memory:');
    open.push(first, second);
    const kept = prepared(first, 'SELECT 0 AS n');
    const early = prepared(first, 'SELECT 1 AS n');
    for (let i = 2; i < MAX_CACHED_STATEMENTS + 100; i++) {
      prepared(i % 2 === 0 ? first : second, `SELECT ${i} AS n`);
      // Used all along: never the least recently used.
      if (i % 100 === 0) expect(prepared(first, 'SELECT 0 AS n')).toBe(kept);
    }
    expect(cachedStatementCount()).toBeLessThanOrEqual(MAX_CACHED_STATEMENTS);
    expect(prepared(first, 'SELECT 0 AS n')).toBe(kept);
    const again = prepared(first, 'SELECT 1 AS n');
    expect(again).not.toBe(early);
    expect(again.get()).toEqual({ n: 1 });
    // A statement let go of still runs for whoever holds it.
    expect(early.get()).toEqual({ n: 1 });
  });

  it('lets go of a connection\'s statements when it closes', () => {
    const path = join(base, 'closing.sqlite');
    new Database(path).close();
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    const before = cachedStatementCount();
    for (let i = 0; i < 50; i++) prepared(connection.db, `SELECT ${i} AS closing`);
    expect(cachedStatementCount()).toBe(Math.min(before + 50, MAX_CACHED_STATEMENTS));
    connection.close();
    expect(cachedStatementCount()).toBe(Math.min(before + 50, MAX_CACHED_STATEMENTS) - 50);
  });
});
