// One SQLite connection with the pragmas the storage policy requires, and
// async units of work on it: readers BEGIN, writers BEGIN IMMEDIATE, one at
// a time per connection. SQLITE_BUSY becomes storage_busy; the busy timeout
// is the only wait. Also the runtime version floor.

import { lstatSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { sleepSync } from '../../../common/clock.js';
import { errorCode } from '../../../common/errors.js';
import { Mutex } from '../../../common/mutex.js';
import { StorageFailure } from '../../core/ports.js';
import { isClosedWalDatabase, UnsafeLocationError } from './location.js';

export const SQLITE_MINIMUM_VERSION = '3.51.3';

export type SqliteDatabase = Database.Database;

// Statements are prepared once per connection and reused: preparing costs
// more than running most of our statements. One bound holds for every
// connection of the process, least recently used out first: search SQL
// differs with each set of filter fields, and each kept statement holds
// native memory (kilobytes for a wide table), so a per-connection bound
// times the open stores let a client's searches pile up hundreds of MB.
interface CachedStatement {
  readonly statement: Database.Statement;
  readonly owner: Map<string, CachedStatement>;
  readonly key: string;
}

/** Statements kept at most, over all connections of the process. */
export const MAX_CACHED_STATEMENTS = 2048;

const statementCache = new WeakMap<SqliteDatabase, Map<string, CachedStatement>>();
/** Every kept statement, least recently used first. */
const statementUse = new Set<CachedStatement>();

export function prepared(db: SqliteDatabase, sql: string): Database.Statement {
  return cachedStatement(db, sql, false);
}

/**
 * prepared() in raw mode: rows come back as arrays of column values in
 * select-list order (cached apart, since raw mode belongs to the statement).
 */
export function preparedRaw(db: SqliteDatabase, sql: string): Database.Statement {
  return cachedStatement(db, sql, true);
}

function cachedStatement(db: SqliteDatabase, sql: string, raw: boolean): Database.Statement {
  let cache = statementCache.get(db);
  if (!cache) {
    cache = new Map();
    statementCache.set(db, cache);
  }
  const key = raw ? `raw\u0000${sql}` : sql;
  let entry = cache.get(key);
  if (entry) {
    statementUse.delete(entry);
    statementUse.add(entry);
    return entry.statement;
  }
  const statement = db.prepare(sql);
  if (raw) statement.raw(true);
  entry = { statement, owner: cache, key };
  cache.set(key, entry);
  statementUse.add(entry);
  // A statement let go here is finalised when collected (or when its
  // connection closes); a caller still stepping it keeps it alive.
  for (const oldest of statementUse) {
    if (statementUse.size <= MAX_CACHED_STATEMENTS) break;
    statementUse.delete(oldest);
    oldest.owner.delete(oldest.key);
  }
  return statement;
}

/** Tables, indexes and the like in a database's schema. */
export function schemaObjectCount(db: SqliteDatabase): number {
  return Number(prepared(db, 'SELECT count(*) FROM sqlite_schema').pluck().get());
}

/** How many statements the process keeps prepared (for tests). */
export function cachedStatementCount(): number {
  return statementUse.size;
}

/** Lets go of a closing connection's statements, so that they leave the bound to the open ones. */
function forgetStatements(db: SqliteDatabase): void {
  const cache = statementCache.get(db);
  if (!cache) return;
  for (const entry of cache.values()) statementUse.delete(entry);
  statementCache.delete(db);
}

/**
 * The revision a drifted database's meta table still names, for reporting
 * only (a migration state keeps it, as the reference's does): the
 * `applied_revision` of the table's one row when that row names `adapterId`
 * and a revision in `known`, else null. Whatever the drift (the table gone or
 * made a view, its columns changed), it answers rather than fails.
 */
export function metaRevisionOf(db: SqliteDatabase, table: string, adapterId: string, known: readonly bigint[]): bigint | null {
  try {
    if (db.prepare(`SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?`).get(table) === undefined) return null;
    const rows = db.prepare(`SELECT adapter_id, applied_revision FROM "${table.replaceAll('"', '""')}" LIMIT 2`).all() as { adapter_id: unknown; applied_revision: unknown }[];
    const [row] = rows;
    if (rows.length !== 1 || row?.adapter_id !== adapterId || typeof row.applied_revision !== 'bigint') return null;
    return known.includes(row.applied_revision) ? row.applied_revision : null;
  } catch {
    return null;
  }
}

let detectedVersion: string | null | undefined;

/** The SQLite library version better-sqlite3 runs on, or null when unreadable. */
export function sqliteRuntimeVersion(): string | null {
  if (detectedVersion !== undefined) return detectedVersion;
  try {
    const db = new Database(':memory:');
    detectedVersion = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
    db.close();
  } catch {
    detectedVersion = null;
  }
  return detectedVersion;
}

export function versionAtLeast(version: string, minimum: string): boolean {
  const a = version.split('.').map(Number);
  const b = minimum.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

export interface SqliteConnectionOptions {
  readonly busyTimeoutMs: number;
  readonly readonly: boolean;
}

/** Maps a driver error to a StorageFailure without keeping any of its text visible. */
export function toStorageFailure(error: unknown): StorageFailure {
  if (error instanceof StorageFailure) return error;
  const code = errorCode(error);
  if (code !== undefined) {
    if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED' || code.startsWith('SQLITE_LOCKED_')) return new StorageFailure('busy', { cause: error });
    if (code.startsWith('SQLITE_CONSTRAINT')) return new StorageFailure('constraint', { cause: error });
  }
  return new StorageFailure('unavailable', { cause: error });
}

// The reasons an operator reads for the identity checks (storage/failure-reason.ts).
const DATABASE_REPLACED = 'a database file was removed or replaced while in use';
const SIDECAR_REPLACED = "a database's -wal or -shm file was removed or replaced while in use";

/**
 * A write's COMMIT that failed. In WAL mode SQLite writes the transaction's
 * frames, the commit frame last, then syncs the WAL and updates its index: a
 * failure after the commit frame was written (an fsync error, the shared
 * index) is reported as failed, yet the next recovery (a crash, a restart)
 * finds the transaction committed. Its outcome is uncertain (retry the same
 * key). Certain are only the failures that stop before a commit frame exists:
 * busy, a constraint checked at commit, and a frame that could not be written
 * (SQLITE_FULL, SQLITE_IOERR_WRITE; with powersafe overwrite, SQLite's
 * default, nothing is written after the commit frame).
 */
function commitFailure(error: unknown): StorageFailure {
  const failure = toStorageFailure(error);
  const code = errorCode(error);
  if (failure.kind !== 'unavailable' || code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_WRITE') return failure;
  return new StorageFailure('uncertain', { cause: error });
}

/** Device and inode of a database file, or null when the path no longer names a regular file. */
function fileIdentity(path: string): string | null {
  try {
    const stats = lstatSync(path);
    return stats.isFile() ? `${stats.dev}:${stats.ino}` : null;
  } catch {
    return null;
  }
}

/** A write whose BEGIN IMMEDIATE found the writer slot taken, before its deadline. */
const WRITER_SLOT_BUSY = Symbol('writer slot busy');
const WRITER_SLOT_MAX_PAUSE_MS = 25;

/** Milliseconds on a monotonic clock: busy-wait deadlines must not move when the wall clock is stepped. */
const monotonicMs = (): number => performance.now();

export class SqliteConnection {
  readonly db: SqliteDatabase;
  private readonly mutex = new Mutex();
  private readonly busyTimeoutMs: number;
  /** The file this connection opened: every unit of work checks the path still names it (spec 3.2.2). */
  private readonly identity: string | null;
  /** The `-wal` and `-shm` files this connection uses, once it has used them: it keeps them open until it closes. */
  private walIdentity: string | null = null;
  /** Units begun and not yet ended, including writes pausing between attempts at the writer slot. */
  private users = 0;

  constructor(
    private readonly path: string,
    options: SqliteConnectionOptions,
  ) {
    this.busyTimeoutMs = options.busyTimeoutMs;
    const version = sqliteRuntimeVersion();
    if (version === null || !versionAtLeast(version, SQLITE_MINIMUM_VERSION)) throw new StorageFailure('unavailable');
    // A read-only connection to a WAL database that lies closed would create
    // its -wal and -shm and, unable to remove them, leave them behind after a
    // read-only command (ops spec §1: those create nothing). Opened
    // read-write but query-only, SQLite removes them again when it closes as
    // the last connection; its WAL stays empty, so nothing is written.
    const openWritable = !options.readonly || isClosedWalDatabase(path);
    try {
      this.db = new Database(path, { readonly: !openWritable, fileMustExist: true, timeout: options.busyTimeoutMs });
    } catch (error) {
      throw toStorageFailure(error);
    }
    this.identity = fileIdentity(path);
    try {
      this.db.defaultSafeIntegers(true);
      this.db.unsafeMode(false);
      const pragmas: [string, string | number][] = [
        ['busy_timeout', options.busyTimeoutMs],
        ['foreign_keys', 1],
        ['trusted_schema', 0],
        ['recursive_triggers', 0],
        ['locking_mode', 'normal'],
        ['synchronous', 2],
        ['wal_autocheckpoint', 1000],
      ];
      if (options.readonly) pragmas.push(['query_only', 1]);
      // Set and verify each (operations spec §3.2.3): a value SQLite does not take is no usable connection.
      for (const [name, value] of pragmas) {
        this.db.pragma(`${name} = ${value}`);
        const actual = this.db.pragma(name, { simple: true });
        if (String(actual).toLowerCase() !== String(value)) throw new StorageFailure('unavailable');
      }
    } catch (error) {
      this.db.close();
      throw toStorageFailure(error);
    }
  }

  /** The identity (device and inode) of the file this connection opened. */
  get fileIdentity(): string | null {
    return this.identity;
  }

  /** Whether no unit of work is running or waiting on this connection, so closing it interrupts nothing. */
  get idle(): boolean {
    return this.users === 0;
  }

  /**
   * Reads once outside any unit, so that SQLite opens a WAL database's -wal
   * and -shm now rather than in the first unit. Only a file it could not
   * open (for want of descriptors, say) is reported here; any other failure
   * is the first unit's to report, as it was before. Answers the number of
   * schema objects (0 when unread), a measure of what the connection holds.
   */
  openSidecars(): number {
    try {
      return schemaObjectCount(this.db);
    } catch (error) {
      if (errorCode(error) === 'SQLITE_CANTOPEN') throw toStorageFailure(error);
      return 0;
    }
  }

  journalMode(): string {
    return String(this.db.pragma('journal_mode', { simple: true }));
  }

  /**
   * Switches to WAL (outside any transaction); true when WAL is in force
   * afterwards. The switch needs an exclusive lock; a reader in another
   * process is waited out by the busy handler, but another process's writer
   * (a concurrent starter switching the same fresh file) makes SQLite answer
   * BUSY at once, so this retries within the same busy timeout.
   */
  enableWal(): boolean {
    const deadline = monotonicMs() + this.busyTimeoutMs;
    for (;;) {
      try {
        return String(this.db.pragma('journal_mode = WAL', { simple: true })).toLowerCase() === 'wal';
      } catch (error) {
        const failure = toStorageFailure(error);
        if (failure.kind !== 'busy' || monotonicMs() >= deadline) throw failure;
        sleepSync(5);
      }
    }
  }

  async read<T>(work: (db: SqliteDatabase) => Promise<T> | T): Promise<T> {
    this.users++;
    try {
      return await this.transaction('BEGIN', work);
    } finally {
      this.users--;
    }
  }

  /**
   * One read in autocommit between units (the mutex keeps it out of any
   * unit's open transaction), without a unit's BEGIN, COMMIT and file
   * identity checks: only for a value a later unit checks again (a data
   * mutation's admission fence generation, D41).
   */
  async peek<T>(work: (db: SqliteDatabase) => T): Promise<T> {
    this.users++;
    try {
      return await this.mutex.run(async () => {
        try {
          return work(this.db);
        } catch (error) {
          throw error instanceof Database.SqliteError ? toStorageFailure(error) : error;
        }
      });
    } finally {
      this.users--;
    }
  }

  /**
   * Waits for the writer slot within the busy timeout without blocking the
   * event loop: SQLite's own busy handler sleeps in the calling thread, which
   * stalled every other request of the process (other services, reads) for
   * the whole timeout, and concurrent writers one timeout after another.
   * BEGIN IMMEDIATE is tried without a wait and tried again after a pause,
   * with this connection free meanwhile, until the timeout has passed.
   */
  async write<T>(work: (db: SqliteDatabase) => Promise<T> | T): Promise<T> {
    const deadline = monotonicMs() + this.busyTimeoutMs;
    this.users++;
    try {
      for (let pause = 1; ; pause = Math.min(pause * 2, WRITER_SLOT_MAX_PAUSE_MS)) {
        const outcome = await this.transaction('BEGIN IMMEDIATE', work, deadline);
        if (outcome !== WRITER_SLOT_BUSY) return outcome;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(pause, deadline - monotonicMs()))));
      }
    } finally {
      this.users--;
    }
  }

  private transaction<T>(begin: string, work: (db: SqliteDatabase) => Promise<T> | T): Promise<T>;
  private transaction<T>(begin: string, work: (db: SqliteDatabase) => Promise<T> | T, deadline: number): Promise<T | typeof WRITER_SLOT_BUSY>;
  private transaction<T>(begin: string, work: (db: SqliteDatabase) => Promise<T> | T, deadline?: number): Promise<T | typeof WRITER_SLOT_BUSY> {
    return this.mutex.run(async () => {
      try {
        if (deadline === undefined) {
          this.db.exec(begin);
        } else {
          this.db.pragma('busy_timeout = 0');
          try {
            this.db.exec(begin);
          } finally {
            this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
          }
        }
      } catch (error) {
        const failure = toStorageFailure(error);
        if (failure.kind === 'busy' && deadline !== undefined && monotonicMs() < deadline) return WRITER_SLOT_BUSY;
        throw failure;
      }
      try {
        // A database removed or replaced under an open connection would
        // otherwise keep answering from the unlinked file, and writes would
        // vanish with it: refuse instead (checked inside the transaction).
        if (this.identity === null || fileIdentity(this.path) !== this.identity) throw new StorageFailure('unavailable', { cause: new UnsafeLocationError(DATABASE_REPLACED) });
        const result = await work(this.db);
        // A -wal removed (or replaced) under the open connection would take
        // this commit into a file no other connection or restart ever reads;
        // a -shm, into a WAL whose index other processes no longer share, so
        // their commits and this one overwrite each other. Checked once, after
        // the work: a read or write made meanwhile is refused with the unit.
        this.checkWal();
        try {
          this.db.exec('COMMIT');
        } catch (error) {
          throw begin === 'BEGIN' ? toStorageFailure(error) : commitFailure(error);
        }
        return result;
      } catch (error) {
        if (this.db.inTransaction) {
          try {
            this.db.exec('ROLLBACK');
          } catch {
            // The connection is unusable after a failed rollback; the next call reports it.
          }
        }
        // Application outcomes thrown to abort the unit pass through unchanged.
        throw error instanceof Database.SqliteError ? toStorageFailure(error) : error;
      }
    });
  }

  /**
   * Refuses when the paths no longer name the `-wal` and `-shm` files this
   * connection has in use; the first unit that finds them (after its work
   * has read, when SQLite holds them open until the connection closes)
   * records them.
   */
  private checkWal(): void {
    const wal = fileIdentity(`${this.path}-wal`);
    const shm = fileIdentity(`${this.path}-shm`);
    const current = wal === null || shm === null ? null : `${wal}/${shm}`;
    if (this.walIdentity !== null) {
      if (current !== this.walIdentity) throw new StorageFailure('unavailable', { cause: new UnsafeLocationError(SIDECAR_REPLACED) });
    } else if (current !== null && this.journalMode().toLowerCase() === 'wal') {
      this.walIdentity = current;
    }
  }

  close(): void {
    forgetStatements(this.db);
    if (this.db.open) this.db.close();
  }
}
