// A running SQLite connection when others misbehave: files changed under it
// are refused (StorageFailure unavailable) rather than read or written where
// they no longer sit, and a writer slot held elsewhere answers busy within
// the busy timeout without holding up anything else in the process.

import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../src/aipcs/core/ports.js';
import { SqliteConnection } from '../../../src/aipcs/storage/sqlite/connection.js';
import { SqliteServiceStores } from '../../../src/aipcs/storage/sqlite/service-store.js';
import { migrateSqliteRegistry, openSqliteRegistryForAdmin } from '../../../src/aipcs/storage/sqlite/registry.js';
import { storageOutcome, walDatabase } from '../../support/sqlite.js';
import { storeLayoutOf } from '../../../src/aipcs/core/layout.js';
import { notesManifest } from '../../support/manifests.js';
import { manifest } from '../../conformance/harness.js';

describe('an open SQLite connection', () => {
  it('runs with every pragma of the storage policy set (ops 3.2.3), query_only on read-only connections only', () => {
    const path = walDatabase('aipcs-pragmas-');
    for (const readonly of [false, true]) {
      const connection = new SqliteConnection(path, { busyTimeoutMs: 1234, readonly });
      try {
        const pragma = (name: string): string => String(connection.db.pragma(name, { simple: true })).toLowerCase();
        expect({
          busy_timeout: pragma('busy_timeout'),
          foreign_keys: pragma('foreign_keys'),
          trusted_schema: pragma('trusted_schema'),
          recursive_triggers: pragma('recursive_triggers'),
          locking_mode: pragma('locking_mode'),
          synchronous: pragma('synchronous'),
          wal_autocheckpoint: pragma('wal_autocheckpoint'),
          query_only: pragma('query_only'),
        }).toEqual({
          busy_timeout: '1234',
          foreign_keys: '1',
          trusted_schema: '0',
          recursive_triggers: '0',
          locking_mode: 'normal',
          synchronous: '2',
          wal_autocheckpoint: '1000',
          query_only: readonly ? '1' : '0',
        });
      } finally {
        connection.close();
      }
    }
  });

  it('keeps its busy timeout after write units, including one that found the writer slot taken', async () => {
    // A write tries BEGIN IMMEDIATE without a wait (busy_timeout 0) and must
    // put the configured timeout back: every later statement of the
    // connection (reads, COMMIT, checkpoints) would otherwise fail busy at once.
    const path = walDatabase('aipcs-busy-restore-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1234, readonly: false });
    const other = new Database(path);
    try {
      const busyTimeout = (): string => String(connection.db.pragma('busy_timeout', { simple: true }));
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      expect(busyTimeout()).toBe('1234');
      other.exec('BEGIN IMMEDIATE');
      setTimeout(() => other.exec('COMMIT'), 30);
      await connection.write((db) => db.exec('INSERT INTO t VALUES (2)'));
      expect(busyTimeout()).toBe('1234');
      expect(await connection.read((db) => busyTimeout() + ':' + String(db.prepare('SELECT count(*) FROM t').pluck().get()))).toBe('1234:2');
    } finally {
      other.close();
      connection.close();
    }
  });

  it('reports a registry held exclusively elsewhere as unavailable for the reason busy (retry), not as broken', async () => {
    const dataRoot = join(mkdtempSync(join(tmpdir(), 'aipcs-busy-inspect-')), 'data');
    const options = { dataRoot, busyTimeoutMs: 50, defaultRoot: false };
    (await migrateSqliteRegistry(options)).close();
    const other = new Database(join(dataRoot, 'registry.sqlite'));
    try {
      other.pragma('locking_mode = EXCLUSIVE');
      other.exec('BEGIN EXCLUSIVE');
      const opening = await openSqliteRegistryForAdmin(options, { writable: false });
      expect(opening.registry).toBeNull();
      expect(opening.state).toMatchObject({ status: 'unavailable', reason: 'busy' });
      expect(opening.state.failure?.kind).toBe('busy');
      other.exec('COMMIT');
    } finally {
      other.close();
    }
    const opening = await openSqliteRegistryForAdmin(options, { writable: false });
    expect(opening.state).toMatchObject({ status: 'ready', reason: null });
    opening.registry?.close();
  });

  it('peeks only between units: never into the open transaction of a unit still running', async () => {
    const path = walDatabase('aipcs-peek-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      let resume!: () => void;
      let entered!: () => void;
      const paused = new Promise<void>((resolve) => (resume = resolve));
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const unit = connection.write(async (db) => {
        db.exec('INSERT INTO t VALUES (1)');
        entered();
        await paused;
        throw new Error('rolled back');
      });
      await inside;
      const count = (db: Database.Database): unknown => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: bigint }).n;
      const peeked = connection.peek(count);
      resume();
      await expect(unit).rejects.toThrow('rolled back');
      expect(await peeked).toBe(0n);
      await connection.write((db) => db.exec('INSERT INTO t VALUES (2)'));
      expect(await connection.peek(count)).toBe(1n);
    } finally {
      connection.close();
    }
  });

  it('refuses once its -wal file is removed, instead of committing into the unlinked file', async () => {
    const path = walDatabase('aipcs-runtime-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      rmSync(`${path}-wal`);
      expect(await storageOutcome(connection.write((db) => db.exec('INSERT INTO t VALUES (2)')))).toBe('unavailable');
      expect(await storageOutcome(connection.read((db) => db.prepare('SELECT count(*) FROM t').get()))).toBe('unavailable');
    } finally {
      connection.close();
    }
  });

  it('refuses once its -wal file is replaced by another one', async () => {
    const path = walDatabase('aipcs-runtime-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      copyFileSync(`${path}-wal`, `${path}-copy`);
      renameSync(`${path}-copy`, `${path}-wal`);
      expect(await storageOutcome(connection.write((db) => db.exec('INSERT INTO t VALUES (2)')))).toBe('unavailable');
    } finally {
      connection.close();
    }
  });

  it('refuses once its -shm file is removed: another process would index the WAL apart from it', async () => {
    const path = walDatabase('aipcs-runtime-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 1000, readonly: false });
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      rmSync(`${path}-shm`);
      expect(await storageOutcome(connection.write((db) => db.exec('INSERT INTO t VALUES (2)')))).toBe('unavailable');
    } finally {
      connection.close();
    }
  });

  it('keeps working while other connections come and go', async () => {
    const path = walDatabase('aipcs-runtime-');
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

describe('a SQLite connection whose writer slot another connection holds', () => {
  it('answers busy within the timeout, concurrent writers too, and reads meanwhile', async () => {
    const path = walDatabase('aipcs-runtime-');
    const connection = new SqliteConnection(path, { busyTimeoutMs: 600, readonly: false });
    const holder = new Database(path);
    try {
      await connection.write((db) => db.exec('INSERT INTO t VALUES (1)'));
      holder.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      const settled: string[] = [];
      const writes = [1, 2, 3, 4].map((n) =>
        storageOutcome(connection.write((db) => db.exec(`INSERT INTO t VALUES (${n})`))).then((kind) => {
          settled.push('write');
          return kind;
        }),
      );
      const read = connection.read((db) => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: bigint }).n).then((n) => {
        settled.push('read');
        return n;
      });
      expect(await read).toBe(1n);
      expect(await Promise.all(writes)).toEqual(['busy', 'busy', 'busy', 'busy']);
      // Four writers waiting one after another would take at least 4 x 600 ms; they wait side by side.
      expect(Date.now() - started).toBeLessThan(2400);
      expect(settled[0]).toBe('read');
      holder.exec('ROLLBACK');
      await connection.write((db) => db.exec('INSERT INTO t VALUES (5)'));
    } finally {
      holder.close();
      connection.close();
    }
  });
});

describe('service stores under a data root swapped for a symlink', () => {
  it('are neither created nor opened through it', () => {
    const parent = mkdtempSync(join(tmpdir(), 'aipcs-runtime-'));
    const dataRoot = join(parent, 'data');
    mkdirSync(dataRoot, { mode: 0o700 });
    const stores = new SqliteServiceStores({ dataRoot, busyTimeoutMs: 1000 });
    const first = { backend: 'sqlite', namespace: `svc_${'1'.repeat(32)}` } as const;
    const second = { backend: 'sqlite', namespace: `svc_${'2'.repeat(32)}` } as const;
    try {
      expect(stores.connection(first, true)).toBeDefined();
      renameSync(dataRoot, join(parent, 'elsewhere'));
      symlinkSync(join(parent, 'elsewhere'), dataRoot);
      expect(() => stores.connection(second, true)).toThrow(StorageFailure);
      expect(readdirSync(join(parent, 'elsewhere', 'service-stores')).filter((name) => name.includes('2222'))).toEqual([]);
      rmSync(dataRoot);
      expect(stores.connection(second, false)).toBeUndefined();
      expect(existsSync(dataRoot)).toBe(false);
    } finally {
      void stores.close();
    }
  });
});

describe('removing a service store', () => {
  const layout = storeLayoutOf(manifest(notesManifest()));
  const locator = { backend: 'sqlite', namespace: `svc_${'3'.repeat(32)}` } as const;

  /** Two processes' views of one data root, with a closed store that the second has open. */
  async function closedStoreOpenTwice(): Promise<{ dataRoot: string; first: SqliteServiceStores; second: SqliteServiceStores; path: string }> {
    const dataRoot = mkdtempSync(join(tmpdir(), 'aipcs-remove-'));
    const first = new SqliteServiceStores({ dataRoot, busyTimeoutMs: 1000 });
    const second = new SqliteServiceStores({ dataRoot, busyTimeoutMs: 1000 });
    await first.materialise(locator, layout);
    expect(await first.changeFence(locator, await first.readFence(locator), 'closed')).toMatchObject({ state: 'closed' });
    expect(await second.readFence(locator)).toMatchObject({ state: 'closed' });
    return { dataRoot, first, second, path: join(dataRoot, 'service-stores', `${locator.namespace}.sqlite`) };
  }

  /** Runs `meanwhile` when the second view's connection starts its next unit. */
  function beforeNextUnit(stores: SqliteServiceStores, meanwhile: () => Promise<void>): void {
    const connection = stores.connection(locator) as SqliteConnection;
    const write = connection.write.bind(connection);
    connection.write = (async (work: Parameters<typeof write>[0]) => {
      await meanwhile();
      return write(work);
    }) as typeof connection.write;
  }

  it('succeeds when another removal (a concurrent run of the same purge) unlinked the store under its open connection', async () => {
    const { first, second } = await closedStoreOpenTwice();
    try {
      beforeNextUnit(second, () => first.remove(locator));
      await second.remove(locator);
      expect(await second.isAbsent(locator)).toBe(true);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('refuses, and leaves the file, when another file was put at the path meanwhile', async () => {
    const { first, second, path } = await closedStoreOpenTwice();
    try {
      beforeNextUnit(second, async () => {
        await first.close();
        copyFileSync(path, `${path}.copy`);
        renameSync(`${path}.copy`, path);
      });
      await expect(second.remove(locator)).rejects.toMatchObject({ kind: 'unavailable' });
      expect(existsSync(path)).toBe(true);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
