// SQLite service stores: one private database per materialised service
// (service-stores/svc_<hex>.sqlite) with its domain tables and __aipcs_
// bookkeeping; creation and evolution are single transactions, observation
// compares structure. Operators also inspect, move the fence and remove stores.

import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { closeSync, constants, fsyncSync, lstatSync, openSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  StorageFailure,
  type ColumnLayout,
  type EntityLayout,
  type FenceState,
  type MigrationState,
  type OperatorStorePort,
  type StorageLocator,
  type StoreLayout,
  type StoreObservation,
  type WriteFence,
} from '../../core/ports.js';
import { canAdvance } from '../../core/counters.js';
import { metaRevisionOf, prepared, schemaObjectCount, SqliteConnection, toStorageFailure, type SqliteDatabase } from './connection.js';
import { errorCode } from '../../../common/errors.js';
import { WeighedCache } from '../../../common/weighed-cache.js';
import { folderSyncUnsupported } from '../../../common/folder-sync.js';
import { causeChain } from '../failure-reason.js';
import { checkDatabaseFile, checkPrivateSubdirectory, createDatabaseFile, dataRootPaths } from './location.js';
import { unavailableState } from '../shared/migration-state.js';
import { quoteIdentifier, toWriteFence, upsertWriteFence, writeFenceRow } from '../shared/statements.js';
import type { Row } from '../shared/record-codec.js';

export const SERVICE_STORE_ADAPTER_ID = 'aipcs.sqlite.service_store';
export const SERVICE_STORE_REVISION = 1n;


const SQL_TYPES: Record<ColumnLayout['type'], string> = {
  text: 'TEXT',
  integer: 'INTEGER',
  real: 'REAL',
  boolean: 'INTEGER',
  datetime: 'TEXT',
  uuid: 'TEXT',
  string_list: 'TEXT',
};

/** Bookkeeping tables every store has, whatever its manifest. */
export const BOOKKEEPING_DDL = [
  `CREATE TABLE __aipcs_service_store_meta (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  adapter_id TEXT NOT NULL,
  namespace TEXT NOT NULL,
  applied_revision INTEGER NOT NULL
) STRICT`,
  `CREATE TABLE __aipcs_record_mutation (
  principal_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  operation_kind TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  result_json TEXT NOT NULL,
  completed_at INTEGER NOT NULL,
  PRIMARY KEY (principal_id, idempotency_key)
) STRICT`,
  `CREATE TABLE __aipcs_write_fence (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  generation INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('open', 'closed'))
) STRICT`,
  `CREATE TABLE __aipcs_record_history (
  event_sequence INTEGER PRIMARY KEY AUTOINCREMENT,
  principal_id TEXT NOT NULL,
  entity_name TEXT NOT NULL,
  record_id TEXT NOT NULL,
  record_version INTEGER NOT NULL,
  event_kind TEXT NOT NULL,
  before_json TEXT,
  after_json TEXT,
  occurred_at INTEGER NOT NULL
) STRICT`,
  `CREATE INDEX __aipcs_record_history_record ON __aipcs_record_history (principal_id, entity_name, record_id, event_sequence)`,
  `CREATE INDEX __aipcs_record_history_entity ON __aipcs_record_history (principal_id, entity_name, event_sequence)`,
  `CREATE TABLE __aipcs_memory_branch (
  id TEXT PRIMARY KEY NOT NULL,
  principal_id TEXT NOT NULL,
  slug TEXT NOT NULL,
  title TEXT NOT NULL,
  intent TEXT NOT NULL,
  branch_type TEXT,
  parent_branch_id TEXT REFERENCES __aipcs_memory_branch (id) ON DELETE RESTRICT ON UPDATE RESTRICT,
  status TEXT NOT NULL CHECK (status IN ('active', 'archived', 'superseded')),
  retrieval_summary TEXT,
  branch_revision INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (principal_id, slug)
) STRICT`,
  // Led by the referencing column: an import stages branches with their
  // keys deferred, and while a child waits for its parent every branch
  // inserted looks for the rows that point at it (a whole-table scan per
  // branch without this order).
  `CREATE INDEX __aipcs_memory_branch_parent ON __aipcs_memory_branch (parent_branch_id, principal_id, id)`,
  // Branch list pages walk ids in order and stop at the limit.
  `CREATE INDEX __aipcs_memory_branch_list ON __aipcs_memory_branch (principal_id, id)`,
  // Summary branch cards: most recently updated first, ties by id.
  `CREATE INDEX __aipcs_memory_branch_recent ON __aipcs_memory_branch (principal_id, updated_at DESC, id)`,
  // Branch list pages filtered by status or type: without them a rare value
  // walked every branch of the principal to fill one page.
  `CREATE INDEX __aipcs_memory_branch_status ON __aipcs_memory_branch (principal_id, status, id)`,
  `CREATE INDEX __aipcs_memory_branch_type ON __aipcs_memory_branch (principal_id, branch_type, id)`,
  `CREATE TABLE __aipcs_record_branch (
  principal_id TEXT NOT NULL,
  entity_name TEXT NOT NULL,
  record_id TEXT NOT NULL,
  branch_id TEXT NOT NULL REFERENCES __aipcs_memory_branch (id) ON DELETE RESTRICT ON UPDATE RESTRICT,
  role TEXT NOT NULL CHECK (role IN ('primary', 'related')),
  assigned_at INTEGER NOT NULL,
  PRIMARY KEY (principal_id, entity_name, record_id, branch_id)
) STRICT, WITHOUT ROWID`,
  `CREATE UNIQUE INDEX __aipcs_record_branch_one_primary ON __aipcs_record_branch (principal_id, entity_name, record_id) WHERE role = 'primary'`,
  `CREATE INDEX __aipcs_record_branch_scope ON __aipcs_record_branch (principal_id, branch_id, role, entity_name, record_id)`,
  // Export pages memberships in (branch, entity, record, role) order: the
  // scope index has role second and would sort a whole branch for each page.
  `CREATE INDEX __aipcs_record_branch_export ON __aipcs_record_branch (principal_id, branch_id, entity_name, record_id, role)`,
  `CREATE TABLE __aipcs_list_member (
  entity_name TEXT NOT NULL,
  field_name TEXT NOT NULL,
  member TEXT NOT NULL,
  record_id TEXT NOT NULL,
  PRIMARY KEY (entity_name, field_name, member, record_id)
) STRICT, WITHOUT ROWID`,
  `CREATE INDEX __aipcs_list_member_record ON __aipcs_list_member (entity_name, record_id)`,
];

/**
 * Manifest names never hold ".", so it joins entity and field without two
 * pairs meeting ("a__b"."c" and "a"."b__c"); index names are global in a
 * database. Stores made before keep their "__"-joined names (only indexes
 * of fields an evolve adds get the new form).
 */
export function equalityIndexName(entity: string, field: string): string {
  return `__aipcs_eq_${entity}.${field}`;
}

function columnDdl(column: ColumnLayout): string {
  const type = SQL_TYPES[column.type];
  if (column.name === 'id') return `${quoteIdentifier(column.name)} ${type} NOT NULL PRIMARY KEY`;
  return `${quoteIdentifier(column.name)} ${type}${column.notNull ? ' NOT NULL' : ''}`;
}

export function entityTableDdl(entity: EntityLayout): string[] {
  const parts = entity.columns.map(columnDdl);
  for (const fk of entity.foreignKeys) {
    parts.push(
      `CONSTRAINT ${quoteIdentifier(fk.name)} FOREIGN KEY (${quoteIdentifier(fk.column)}) REFERENCES ${quoteIdentifier(fk.targetEntity)} ("id") ON DELETE RESTRICT ON UPDATE RESTRICT`,
    );
  }
  const ddl = [`CREATE TABLE ${quoteIdentifier(entity.name)} (\n  ${parts.join(',\n  ')}\n) STRICT`];
  return [...ddl, ...entityIndexDdl(entity, new Set(), new Set())];
}

/** Index DDL for an entity, skipping the manifest indexes and equality fields already present. */
function entityIndexDdl(entity: EntityLayout, existingIndexes: ReadonlySet<string>, existingEquality: ReadonlySet<string>): string[] {
  const ddl: string[] = [];
  for (const index of entity.indexes) {
    if (existingIndexes.has(index.name)) continue;
    const columns = index.columns.map(quoteIdentifier).join(', ');
    ddl.push(`CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX ${quoteIdentifier(index.name)} ON ${quoteIdentifier(entity.name)} (${columns})`);
  }
  for (const field of entity.equalityFields) {
    if (existingEquality.has(field)) continue;
    ddl.push(`CREATE INDEX IF NOT EXISTS ${quoteIdentifier(equalityIndexName(entity.name, field))} ON ${quoteIdentifier(entity.name)} (${quoteIdentifier(field)}, "id")`);
  }
  return ddl;
}

export function layoutDdl(layout: StoreLayout): string[] {
  return layout.entities.flatMap(entityTableDdl);
}

/**
 * Objects our DDL never makes and that change how a store behaves or what
 * it is: views and triggers anywhere (a trigger runs inside our writes), and
 * for a whole layout also SQLite's statistics tables (ANALYZE; they steer
 * the planner). The store foundation is judged on views and triggers only.
 * Listed by type and name; none is expected, so any row is drift.
 */
function foreignObjects(db: SqliteDatabase, bookkeepingOnly: boolean): unknown[] {
  const statistics = bookkeepingOnly ? '' : ` OR (type = 'table' AND substr(name, 1, 11) = 'sqlite_stat')`;
  return db.prepare(`SELECT type, name FROM sqlite_schema WHERE type IN ('view', 'trigger')${statistics} ORDER BY type, name`).all();
}

/**
 * The words a domain table's CREATE text ever holds when our DDL made it
 * (columnDdl, entityTableDdl, and evolve's ADD COLUMN, which SQLite splices
 * into that text), beside quoted names, parentheses and commas. Anything
 * else (CHECK, DEFAULT, COLLATE, a generated column, a literal) was written
 * by someone else and changes what the table accepts or how it compares.
 */
const DOMAIN_TABLE_WORDS = new Set(['CREATE', 'TABLE', 'TEXT', 'INTEGER', 'REAL', 'NOT', 'NULL', 'PRIMARY', 'KEY', 'CONSTRAINT', 'FOREIGN', 'REFERENCES', 'ON', 'DELETE', 'UPDATE', 'RESTRICT', 'STRICT']);

function usesOnlyOurWords(sql: string): boolean {
  const outsideNames = sql.replace(/"(?:[^"]|"")*"/g, ' ');
  return outsideNames.split(/[\s(),]+/).every((word) => word === '' || DOMAIN_TABLE_WORDS.has(word.toUpperCase()));
}

/**
 * Structural signature of a database (or of its bookkeeping tables only):
 * columns, keys and indexes, table options, and any foreign object. Tables
 * and indexes no evolve alters are compared by their exact CREATE text (a
 * CHECK, a collation, a partial index's condition); a domain table's text
 * changes with every column an evolve adds, so it is held to our words only.
 */
function structureSignature(db: SqliteDatabase, bookkeepingOnly = false): string {
  const filter = bookkeepingOnly ? ` AND substr(name, 1, 8) = '__aipcs_'` : '';
  const tables = db.prepare(`SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_'${filter} ORDER BY name`).all() as { name: string; sql: string }[];
  const signature = tables.map(({ name: table, sql }) => {
    const options = db.prepare(`SELECT wr, strict FROM pragma_table_list(${quoteSqlString(table)}) WHERE schema = 'main'`).get();
    const text = table.startsWith('__aipcs_') ? sql : usesOnlyOurWords(sql);
    const columns = db.prepare(`SELECT name, type, "notnull" AS nn, pk FROM pragma_table_info(${quoteSqlString(table)}) ORDER BY cid`).all();
    const fks = db.prepare(`SELECT "table" AS target, "from" AS col, "to" AS ref, on_update, on_delete FROM pragma_foreign_key_list(${quoteSqlString(table)}) ORDER BY id, seq`).all();
    // Equality indexes are performance aids that evolution may leave behind
    // when a field becomes an annotation; they are not part of the structure.
    // A unique one is never ours and refuses rows whatever its name.
    const indexes = (db.prepare(`SELECT name, "unique" AS u, partial FROM pragma_index_list(${quoteSqlString(table)}) WHERE NOT (substr(name, 1, 11) = '__aipcs_eq_' AND "unique" = 0) ORDER BY name`).all() as { name: string; u: bigint; partial: bigint }[]).map((index) => ({
      ...index,
      sql: (db.prepare(`SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?`).get(index.name) as { sql: string | null } | undefined)?.sql ?? null,
      columns: db.prepare(`SELECT name FROM pragma_index_info(${quoteSqlString(index.name)}) ORDER BY seqno`).all(),
    }));
    return { table, options, text, columns, fks, indexes };
  });
  return JSON.stringify({ tables: signature, foreign: foreignObjects(db, bookkeepingOnly) }, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

function quoteSqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** Signatures of the layouts met lately, by digest of layout and namespace (see WeighedCache for why a weight). */
const expectedSignatures = new WeighedCache<string, string>(256, 8 * 1024 * 1024);

function expectedSignature(layout: StoreLayout, namespace: string): string {
  const key = createHash('sha256').update(JSON.stringify(layout)).update('\u0000').update(namespace).digest('base64');
  let signature = expectedSignatures.get(key);
  if (signature === undefined) {
    const db = new Database(':memory:');
    db.defaultSafeIntegers(true);
    for (const ddl of [...BOOKKEEPING_DDL, ...layoutDdl(layout)]) db.exec(ddl);
    signature = structureSignature(db);
    db.close();
    expectedSignatures.set(key, signature, signature.length);
  }
  return signature;
}

function metaMatches(db: SqliteDatabase, namespace: string): boolean {
  const meta = prepared(db, `SELECT adapter_id, namespace, applied_revision FROM __aipcs_service_store_meta WHERE singleton = 1`).get() as
    | { adapter_id: string; namespace: string; applied_revision: bigint }
    | undefined;
  return meta !== undefined && meta.adapter_id === SERVICE_STORE_ADAPTER_ID && meta.namespace === namespace && meta.applied_revision === SERVICE_STORE_REVISION;
}

/**
 * Refuses a store whose meta row does not bind it to `namespace` at this
 * build's revision (operations spec §3.2.6): a copy of another service's
 * store, or one a newer build has moved on. Every data unit checks it first,
 * since a file put in place while no connection had it open passes the
 * identity checks, and a newer build may migrate a store in place. So is a
 * store holding a trigger or a view, which our DDL never makes (D30): a
 * trigger runs inside our writes and could rewrite a memory as it is saved.
 * Both are single lookups, a few microseconds (decision D58).
 */
export function assertStoreBinding(db: SqliteDatabase, namespace: string): void {
  if (!metaMatches(db, namespace)) throw new StorageFailure('incompatible');
  if (prepared(db, `SELECT 1 FROM sqlite_schema WHERE type IN ('trigger', 'view') LIMIT 1`).get() !== undefined) throw new StorageFailure('incompatible');
}

export type LayoutState = 'empty' | 'matches' | 'differs';

export function compareLayout(db: SqliteDatabase, layout: StoreLayout, namespace: string): LayoutState {
  const count = (db.prepare(`SELECT count(*) AS n FROM sqlite_schema`).get() as { n: bigint }).n;
  if (count === 0n) return 'empty';
  if (structureSignature(db) !== expectedSignature(layout, namespace)) return 'differs';
  return metaMatches(db, namespace) ? 'matches' : 'differs';
}

/**
 * A layout that matches and whose rows keep its references: a row pointing
 * at a missing record can only come from outside (our writes check
 * references, deferred to the commit while staging), and a store holding one
 * is as incompatible as one whose structure changed. The first violation
 * ends the check.
 */
function intactLayout(db: SqliteDatabase, layout: StoreLayout, namespace: string): LayoutState {
  const state = compareLayout(db, layout, namespace);
  if (state !== 'matches') return state;
  return db.prepare('PRAGMA foreign_key_check').get() === undefined ? 'matches' : 'differs';
}

const NAMESPACE = /^svc_[0-9a-f]{32}$/;

let expectedFoundation: string | undefined;

/** The bookkeeping tables' signature every store has, whatever its manifest. */
function foundationSignature(): string {
  if (expectedFoundation === undefined) {
    const db = new Database(':memory:');
    db.defaultSafeIntegers(true);
    for (const ddl of BOOKKEEPING_DDL) db.exec(ddl);
    expectedFoundation = structureSignature(db, true);
    db.close();
  }
  return expectedFoundation;
}

const SIDECARS = ['-journal', '-wal', '-shm'];

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new StorageFailure('unavailable', { cause: error });
  }
}

function unlinkIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new StorageFailure('uncertain', { cause: error });
  }
}

function syncDirectory(path: string): void {
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      fsyncSync(fd);
    } catch (error) {
      if (!folderSyncUnsupported(error)) throw error;
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    // No directory holds no store to bring back.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new StorageFailure('uncertain', { cause: error });
  }
}

/**
 * Whether a store may be switched to WAL: ours are, before their first table
 * exists, so a file with tables in another journal mode is someone else's
 * and stays untouched (the registry's rule, ops spec §3.2.5).
 */
function ownJournalMode(connection: SqliteConnection): boolean {
  if (connection.journalMode().toLowerCase() === 'wal') return true;
  return (connection.db.prepare(`SELECT count(*) AS n FROM sqlite_schema`).get() as { n: bigint }).n === 0n;
}

/**
 * Whether opening a store failed for want of file descriptors: EMFILE or
 * ENFILE from Node, SQLITE_CANTOPEN from SQLite (which keeps no errno; a
 * store it cannot open for another reason fails the second try too).
 */
function outOfDescriptors(error: unknown): boolean {
  return [...causeChain(error)].some((link) => ['EMFILE', 'ENFILE', 'SQLITE_CANTOPEN'].includes(errorCode(link) ?? ''));
}

function writeFence(db: SqliteDatabase, fence: WriteFence): void {
  const { sql, params } = upsertWriteFence(quoteIdentifier, fence);
  prepared(db, sql).run(...params);
}

function readFenceRow(db: SqliteDatabase): WriteFence {
  const { sql, params } = writeFenceRow(quoteIdentifier);
  return toWriteFence(prepared(db, sql).get(...params) as Row | undefined);
}

export interface SqliteServiceStoresOptions {
  readonly dataRoot: string;
  readonly busyTimeoutMs: number;
  /** Admin inspection: connections are read-only and nothing is ever created. */
  readonly readonly?: boolean;
  /** How many store connections stay open when idle (default DEFAULT_OPEN_STORES). */
  readonly maxOpenStores?: number | undefined;
  /** How many schema objects the open stores hold together (default DEFAULT_OPEN_SCHEMA_OBJECTS). */
  readonly maxOpenSchemaObjects?: number | undefined;
}

/**
 * Each open store holds three descriptors (database, -wal, -shm) and a page
 * cache: a long-running server that touched every service of a large
 * principal would otherwise keep them all and run out of descriptors.
 */
const DEFAULT_OPEN_STORES = 64;

/**
 * Schema objects (tables and indexes) the open stores hold at most, together.
 * SQLite keeps a connection's parsed schema in memory, about a kilobyte an
 * object: a store of a manifest near its bounds has about 2000 of them (an
 * equality index per field) and, with its statements, holds about 10 MB, so
 * 64 such stores took a server past a gigabyte. A typical store has under
 * a hundred, and 64 of them stay well within this.
 */
const DEFAULT_OPEN_SCHEMA_OBJECTS = 16_384;

/**
 * The per-service databases under one data root. Connections are opened
 * lazily and kept, least recently used first in `connections`; beyond the
 * bound, idle ones are closed. A closed store's file identity is kept, so a
 * file replaced while its connection was closed is refused on reopening, as
 * an open connection refuses it.
 */
export class SqliteServiceStores implements OperatorStorePort {
  private readonly connections = new Map<string, SqliteConnection>();
  /** Schema objects of each open store (see DEFAULT_OPEN_SCHEMA_OBJECTS). */
  private readonly schemaObjects = new Map<string, number>();
  private readonly closedIdentities = new Map<string, string>();
  private readonly directory: string;

  constructor(private readonly options: SqliteServiceStoresOptions) {
    this.directory = dataRootPaths(options.dataRoot).serviceStores;
  }

  private pathOf(locator: StorageLocator): string {
    if (locator.backend !== 'sqlite' || !NAMESPACE.test(locator.namespace)) throw new StorageFailure('unavailable');
    return join(this.directory, `${locator.namespace}.sqlite`);
  }

  /** An open connection to an existing store, or undefined when the store does not exist. */
  connection(locator: StorageLocator, create = false): SqliteConnection | undefined {
    const cached = this.connections.get(locator.namespace);
    if (cached) {
      this.connections.delete(locator.namespace);
      this.connections.set(locator.namespace, cached);
      return cached;
    }
    try {
      return this.open(locator, create);
    } catch (error) {
      // The process ran out of descriptors (a low `ulimit -n`, many HTTP
      // sessions): idle stores give theirs back and the open is tried once more.
      if (!outOfDescriptors(error) || this.closeIdle(locator.namespace, 0) === 0) throw error;
      return this.open(locator, create);
    }
  }

  private open(locator: StorageLocator, create: boolean): SqliteConnection | undefined {
    const path = this.pathOf(locator);
    const readonly = this.options.readonly === true;
    if (readonly && create) throw new StorageFailure('unavailable');
    try {
      // The root was checked at start-up, but may since have been swapped for
      // a symlink: a store opened or created through it would lie elsewhere.
      if (!checkPrivateSubdirectory(this.options.dataRoot, false)) {
        if (create) throw new StorageFailure('unavailable');
        return undefined;
      }
      if (!checkPrivateSubdirectory(this.directory, create)) return undefined;
      if (!checkDatabaseFile(path)) {
        if (!create) return undefined;
        try {
          createDatabaseFile(path);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        checkDatabaseFile(path);
      }
    } catch (error) {
      if (error instanceof StorageFailure) throw error;
      throw new StorageFailure('unavailable', { cause: error });
    }
    const connection = new SqliteConnection(path, { busyTimeoutMs: this.options.busyTimeoutMs, readonly });
    let objects: number;
    try {
      const known = this.closedIdentities.get(locator.namespace);
      if (known !== undefined && connection.fileIdentity !== known) throw new StorageFailure('unavailable');
      // A file with tables in another journal mode is not a store of ours
      // (§3.2.5): incompatible, so that a materialise or evolve meeting it
      // ends recovery_required (§4.2) instead of a retry that never converges.
      if (!readonly) {
        if (!ownJournalMode(connection)) throw new StorageFailure('incompatible');
        if (!connection.enableWal()) throw new StorageFailure('unavailable');
      }
      // SQLite opens a WAL database's -wal and -shm at its first read: done
      // here, a want of descriptors shows while it can still be relieved.
      objects = connection.openSidecars();
    } catch (error) {
      connection.close();
      throw toStorageFailure(error);
    }
    this.connections.set(locator.namespace, connection);
    this.schemaObjects.set(locator.namespace, objects);
    this.closeIdle(locator.namespace, this.options.maxOpenStores ?? DEFAULT_OPEN_STORES);
    return connection;
  }

  /**
   * Closes idle connections other than `keep`'s, least recently used first,
   * while more than `bound` are open or their schemas hold more objects
   * than the options allow; returns how many it closed.
   */
  private closeIdle(keep: string, bound: number): number {
    const maxObjects = this.options.maxOpenSchemaObjects ?? DEFAULT_OPEN_SCHEMA_OBJECTS;
    let objects = 0;
    for (const count of this.schemaObjects.values()) objects += count;
    let closed = 0;
    for (const [namespace, connection] of this.connections) {
      if (this.connections.size <= bound && objects <= maxObjects) break;
      if (namespace === keep || !connection.idle) continue;
      const identity = connection.fileIdentity;
      if (identity !== null) this.closedIdentities.set(namespace, identity);
      objects -= this.schemaObjects.get(namespace) ?? 0;
      this.forget(namespace, connection);
      closed++;
    }
    return closed;
  }

  /** Closes a store's connection and takes it out of the open ones. */
  private forget(namespace: string, connection: SqliteConnection): void {
    connection.close();
    this.connections.delete(namespace);
    this.schemaObjects.delete(namespace);
  }

  async observe(locator: StorageLocator, layout: StoreLayout): Promise<StoreObservation> {
    let connection: SqliteConnection | undefined;
    try {
      connection = this.connection(locator);
    } catch (error) {
      if (error instanceof StorageFailure && error.kind === 'busy') throw error;
      // A database in another journal mode is not ours (open()): incompatible, not unreachable.
      if (error instanceof StorageFailure && error.kind === 'incompatible') return { state: 'incompatible' };
      return { state: 'unavailable' };
    }
    if (!connection) return { state: 'uninitialised' };
    const state = await connection.read((db) => intactLayout(db, layout, locator.namespace));
    return { state: state === 'matches' ? 'ready' : state === 'empty' ? 'uninitialised' : 'incompatible' };
  }

  async materialise(locator: StorageLocator, layout: StoreLayout): Promise<void> {
    const connection = this.connection(locator, true);
    if (!connection) throw new StorageFailure('unavailable');
    const objects = await connection.write((db) => {
      const state = intactLayout(db, layout, locator.namespace);
      if (state === 'differs') throw new StorageFailure('incompatible');
      if (state !== 'matches') {
        for (const ddl of [...BOOKKEEPING_DDL, ...layoutDdl(layout)]) db.exec(ddl);
        db.prepare(`INSERT INTO __aipcs_service_store_meta (singleton, adapter_id, namespace, applied_revision) VALUES (1, ?, ?, ?)`).run(SERVICE_STORE_ADAPTER_ID, locator.namespace, SERVICE_STORE_REVISION);
        db.prepare(`INSERT INTO __aipcs_write_fence (singleton, generation, state) VALUES (1, 1, 'open')`).run();
      }
      return schemaObjectCount(db);
    });
    this.reweigh(locator.namespace, connection, objects);
  }

  /** Weighs a store again after its tables changed (opened empty, it weighed nothing). */
  private reweigh(namespace: string, connection: SqliteConnection, objects: number): void {
    if (this.connections.get(namespace) !== connection) return;
    this.schemaObjects.set(namespace, objects);
    this.closeIdle(namespace, this.options.maxOpenStores ?? DEFAULT_OPEN_STORES);
  }

  async evolve(locator: StorageLocator, current: StoreLayout, target: StoreLayout): Promise<void> {
    const connection = this.connection(locator);
    if (!connection) throw new StorageFailure('incompatible');
    const objects = await connection.write((db) => {
      if (intactLayout(db, target, locator.namespace) === 'matches') {
        for (const ddl of addedEqualityIndexDdl(current, target)) db.exec(ddl);
        return schemaObjectCount(db);
      }
      if (intactLayout(db, current, locator.namespace) !== 'matches') throw new StorageFailure('incompatible');
      for (const ddl of evolutionDdl(current, target)) db.exec(ddl);
      if (compareLayout(db, target, locator.namespace) !== 'matches') throw new StorageFailure('incompatible');
      // A data write admitted under the old layout finds the generation moved and is admitted again.
      // (At 2^63-1 it cannot move; operator transitions are refused there too.)
      const fence = readFenceRow(db);
      if (canAdvance(fence.generation)) writeFence(db, { generation: fence.generation + 1n, state: fence.state });
      return schemaObjectCount(db);
    });
    this.reweigh(locator.namespace, connection, objects);
  }

  async close(): Promise<void> {
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
    this.schemaObjects.clear();
    this.closedIdentities.clear();
  }

  // -------------------------------------------------------------------------
  // Operator administration

  async inspect(locator: StorageLocator): Promise<MigrationState> {
    const target = SERVICE_STORE_REVISION;
    try {
      const connection = this.connection(locator);
      if (!connection) return { status: 'uninitialised', appliedRevision: 0n, targetRevision: target, reason: null };
      // The data tools refuse a store with tables in another journal mode
      // (ownJournalMode), and nothing switches it back: not ready.
      const wal = connection.journalMode().toLowerCase() === 'wal';
      return await connection.read((db): MigrationState => {
        const count = (db.prepare(`SELECT count(*) AS n FROM sqlite_schema`).get() as { n: bigint }).n;
        if (count === 0n) return { status: 'uninitialised', appliedRevision: 0n, targetRevision: target, reason: null };
        if (!wal || structureSignature(db, true) !== foundationSignature() || !metaMatches(db, locator.namespace)) {
          const appliedRevision = metaRevisionOf(db, '__aipcs_service_store_meta', SERVICE_STORE_ADAPTER_ID, [SERVICE_STORE_REVISION]);
          return { status: 'incompatible', appliedRevision, targetRevision: target, reason: null };
        }
        return { status: 'ready', appliedRevision: SERVICE_STORE_REVISION, targetRevision: target, reason: null };
      });
    } catch (error) {
      return unavailableState(error);
    }
  }

  async isAbsent(locator: StorageLocator): Promise<boolean> {
    const path = this.pathOf(locator);
    return !this.connections.has(locator.namespace) && ![path, ...SIDECARS.map((suffix) => path + suffix)].some(exists);
  }

  async readFence(locator: StorageLocator): Promise<WriteFence> {
    const connection = this.connection(locator);
    if (!connection) throw new StorageFailure('unavailable');
    return connection.read((db) => readFenceRow(db));
  }

  /** The fence read between units (SqliteConnection.peek): a data mutation's admission, whose write unit checks it again. */
  async peekFence(locator: StorageLocator): Promise<WriteFence> {
    const connection = this.connection(locator);
    if (!connection) throw new StorageFailure('unavailable');
    return connection.peek((db) => readFenceRow(db));
  }

  async changeFence(locator: StorageLocator, expected: WriteFence, target: FenceState): Promise<WriteFence | null> {
    const connection = this.connection(locator);
    if (!connection) throw new StorageFailure('unavailable');
    // BEGIN IMMEDIATE: every record or topology mutation checks the fence in
    // its own BEGIN IMMEDIATE unit, so none can straddle this change.
    return connection.write((db) => {
      const current = readFenceRow(db);
      if (current.generation !== expected.generation || current.state !== expected.state) return null;
      const next: WriteFence = { generation: current.generation + 1n, state: target };
      writeFence(db, next);
      return next;
    });
  }

  async remove(locator: StorageLocator): Promise<void> {
    if (this.options.readonly === true) throw new StorageFailure('unavailable');
    const path = this.pathOf(locator);
    const connection = exists(path) ? this.connection(locator) : undefined;
    if (connection) {
      try {
        // Only this locator's own store, with its fence closed, is ever removed.
        await connection.write((db) => {
          if (!metaMatches(db, locator.namespace) || readFenceRow(db).state !== 'closed') throw new StorageFailure('incompatible');
        });
        // Everything committed (the archive's fence close above all) must be
        // in the database file before its -wal goes: a reader elsewhere
        // holding an older snapshot stops the checkpoint short, and a crash
        // between the unlinks below then left a file whose fence read open,
        // which no retry of the purge could remove. Busy until that reader ends.
        let checkpoint: unknown;
        try {
          checkpoint = connection.db.pragma('wal_checkpoint(TRUNCATE)');
        } catch (error) {
          // SQLITE_BUSY is busy; a full disk or an I/O error is not (D33).
          throw toStorageFailure(error);
        }
        // Numbers or bigints, as the connection reads integers.
        const outcome = (checkpoint as { busy?: unknown; log?: unknown; checkpointed?: unknown }[] | undefined)?.[0];
        if (outcome === undefined || Number(outcome.busy) !== 0 || Number(outcome.log) !== Number(outcome.checkpointed)) throw new StorageFailure('busy');
      } catch (error) {
        // Unlinked under this connection by another removal of the store (a
        // concurrent run of the same purge): gone is what this one wants. A
        // file replaced at the path is another matter and stays.
        if (!(error instanceof StorageFailure && error.kind === 'unavailable') || exists(path)) throw error;
      }
      if (this.connections.get(locator.namespace) === connection) this.forget(locator.namespace, connection);
      else connection.close();
    }
    this.closedIdentities.delete(locator.namespace);
    // Sidecars first: a database file left behind by a crash is removed by a
    // retry, whereas a sidecar without its database would make the root unsafe.
    for (const suffix of SIDECARS) unlinkIfPresent(path + suffix);
    unlinkIfPresent(path);
    // The unlinks are durable before the caller records the purge (ops spec
    // §3.2.2): a power loss must not bring a purged store back.
    syncDirectory(this.directory);
  }
}

/**
 * The equality indexes of fields a layout's successor makes filterable
 * without any change of structure (a metadata-only evolve: a field's
 * retrieval_mode from annotation to exact). Equality indexes are outside the
 * structure signature, so such a successor matches the store at once and
 * evolutionDdl never runs for it: without this, the field was searched by
 * scanning its table for good. IF NOT EXISTS: a resumed evolve runs it again.
 */
function addedEqualityIndexDdl(current: StoreLayout, target: StoreLayout): string[] {
  const before = new Map(current.entities.map((entity) => [entity.name, entity]));
  return target.entities.flatMap((entity) => {
    const old = before.get(entity.name);
    return old ? entityIndexDdl(entity, new Set(entity.indexes.map((index) => index.name)), new Set(old.equalityFields)) : [];
  });
}

/** The additive DDL from one layout to its successor: new tables, appended columns, new indexes. */
export function evolutionDdl(current: StoreLayout, target: StoreLayout): string[] {
  const ddl: string[] = [];
  const before = new Map(current.entities.map((entity) => [entity.name, entity]));
  for (const entity of target.entities) {
    const old = before.get(entity.name);
    if (!old) {
      ddl.push(...entityTableDdl(entity));
      continue;
    }
    for (const column of entity.columns.slice(old.columns.length)) {
      ddl.push(`ALTER TABLE ${quoteIdentifier(entity.name)} ADD COLUMN ${columnDdl(column)}`);
    }
    ddl.push(...entityIndexDdl(entity, new Set(old.indexes.map((index) => index.name)), new Set(old.equalityFields)));
  }
  return ddl;
}
