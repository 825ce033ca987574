// The SQLite registry: services, the claim ledger, identity reservations and
// tombstones, transfer receipts, and its explicit migration. Only `serve`
// migrates; everything else inspects. Inspection compares the exact object
// set, so a file that is not ours, or only half ours, is never ready.

import Database from 'better-sqlite3';
import { unavailableState } from '../shared/migration-state.js';
import {
  StorageFailure,
  TOMBSTONED_FINGERPRINT,
  type IdentityRow,
  type MigrationState,
  type OperatorRegistryPort,
  type OperatorRegistryReader,
  type OperatorRegistryWriter,
  type ReceiptRow,
  type ClaimRow,
  type ServiceRow,
} from '../../core/ports.js';
import { metaRevisionOf, prepared, SqliteConnection, type SqliteDatabase } from './connection.js';
import { checkDatabaseFile, checkDataRoot, checkOpenDatabaseFile, checkRootText, createDatabaseFile, dataRootPaths } from './location.js';
import {
  claimParams,
  serviceParams,
  RegistryRowsCheck,
  toClaimRow,
  toIdentityRow,
  toReceiptRow,
  toServiceRow,
  type ClaimRecord,
  type IdentityRecord,
  type ReceiptRecord,
  type ServiceRecord,
} from '../shared/registry-rows.js';
import { receiptParams, registryStatements } from '../shared/registry-statements.js';
import { quoteIdentifier } from '../shared/statements.js';

export const REGISTRY_ADAPTER_ID = 'aipcs.sqlite.registry';
/** Revision 1: services and the claim ledger. Revision 2 adds what operators need. */
export const REGISTRY_REVISION = 2n;
/** The revisions this build can name (the one before transfer, and its own). */
const KNOWN_REVISIONS: readonly bigint[] = [1n, REGISTRY_REVISION];

export const REGISTRY_DDL_R1 = [
  `CREATE TABLE aipcs_registry_meta (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  adapter_id TEXT NOT NULL,
  applied_revision INTEGER NOT NULL,
  dirty INTEGER NOT NULL CHECK (dirty IN (0, 1))
) STRICT`,
  `CREATE TABLE aipcs_registry_service (
  service_id TEXT PRIMARY KEY NOT NULL,
  principal_id TEXT NOT NULL,
  domain_name TEXT NOT NULL,
  domain_class TEXT NOT NULL,
  intent_description TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_activity_at INTEGER NOT NULL,
  manifest_json TEXT,
  schema_version INTEGER CHECK (schema_version BETWEEN 1 AND 65),
  design_state TEXT NOT NULL CHECK (design_state IN ('seeded', 'materialised')),
  operational_status TEXT NOT NULL CHECK (operational_status IN ('active', 'suspended', 'archived')),
  service_revision INTEGER NOT NULL CHECK (service_revision >= 1),
  materialised_at INTEGER,
  storage_backend TEXT,
  storage_namespace TEXT UNIQUE,
  UNIQUE (principal_id, domain_name)
) STRICT`,
  `CREATE INDEX aipcs_registry_service_list ON aipcs_registry_service (principal_id, created_at, service_id)`,
  `CREATE TABLE aipcs_registry_claim (
  principal_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  operation_kind TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  service_id TEXT,
  phase TEXT NOT NULL CHECK (phase IN ('prepared', 'completed', 'recovery_required')),
  intent_json TEXT NOT NULL,
  result_json TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (principal_id, idempotency_key)
) STRICT`,
  `CREATE UNIQUE INDEX aipcs_registry_claim_active_service ON aipcs_registry_claim (service_id) WHERE phase IN ('prepared', 'recovery_required')`,
];

/**
 * Revision 2: identity reservations (an import in progress) and tombstones
 * (a purged service id, never importable again), transfer receipts, and an
 * index for stripping a purged service's claims. A live identity is simply
 * the service row.
 */
export const REGISTRY_DDL_R2 = [
  `CREATE TABLE aipcs_registry_identity (
  service_id TEXT PRIMARY KEY NOT NULL,
  principal_id TEXT NOT NULL,
  identity_state TEXT NOT NULL CHECK (identity_state IN ('import_prepared', 'tombstoned')),
  domain_name TEXT,
  idempotency_key TEXT NOT NULL,
  lifecycle_at INTEGER NOT NULL,
  CHECK ((identity_state = 'import_prepared') = (domain_name IS NOT NULL))
) STRICT`,
  `CREATE UNIQUE INDEX aipcs_registry_identity_domain ON aipcs_registry_identity (principal_id, domain_name) WHERE identity_state = 'import_prepared'`,
  `CREATE TABLE aipcs_registry_receipt (
  receipt_id TEXT PRIMARY KEY NOT NULL,
  principal_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  service_id TEXT NOT NULL,
  receipt_kind TEXT NOT NULL CHECK (receipt_kind IN ('export', 'import')),
  bundle_root_sha256 TEXT NOT NULL,
  export_format_version INTEGER NOT NULL CHECK (export_format_version = 1),
  storage_backend TEXT NOT NULL CHECK (storage_backend IN ('sqlite', 'postgresql')),
  service_revision INTEGER NOT NULL CHECK (service_revision >= 1),
  operational_status TEXT NOT NULL CHECK (operational_status IN ('active', 'suspended', 'archived')),
  verification TEXT NOT NULL CHECK (verification IN ('unverified', 'verified')),
  created_at INTEGER NOT NULL
) STRICT`,
  `CREATE INDEX aipcs_registry_receipt_service ON aipcs_registry_receipt (principal_id, service_id)`,
  `CREATE INDEX aipcs_registry_claim_service ON aipcs_registry_claim (principal_id, service_id)`,
];

export type RegistryStatus = 'uninitialised' | 'outdated' | 'ready' | 'dirty' | 'incompatible';

type SchemaObject = { type: string; name: string; sql: string };

const expectedObjects = new Map<bigint, string>();

/** The object set with its stored CREATE text, byte for byte (ops spec §3.2.5): whitespace folded could hide a changed string literal in a CHECK. */
function schemaSignature(db: SqliteDatabase): string {
  const rows = db
    .prepare(`SELECT type, name, sql FROM sqlite_schema WHERE substr(name, 1, 7) <> 'sqlite_' ORDER BY type, name`)
    .all() as SchemaObject[];
  return JSON.stringify(rows.map((row) => [row.type, row.name, row.sql]));
}

function ddlUpTo(revision: bigint): string[] {
  return revision === 1n ? REGISTRY_DDL_R1 : [...REGISTRY_DDL_R1, ...REGISTRY_DDL_R2];
}

function expectedSignature(revision: bigint): string {
  let signature = expectedObjects.get(revision);
  if (signature === undefined) {
    const db = new Database(':memory:');
    for (const ddl of ddlUpTo(revision)) db.exec(ddl);
    signature = schemaSignature(db);
    db.close();
    expectedObjects.set(revision, signature);
  }
  return signature;
}

export interface RegistryClassification {
  readonly status: RegistryStatus;
  /** The revision the file is at (0 when empty), when it is one we know. */
  readonly appliedRevision: bigint | null;
}

/**
 * Classifies an open registry database (inside a transaction): an exact
 * revision 1 is `outdated` (serve upgrades it), an exact revision 2 `ready`,
 * anything else `incompatible` (or `dirty` when our own meta says so).
 */
export function classifyRegistry(db: SqliteDatabase): RegistryClassification {
  const count = (db.prepare(`SELECT count(*) AS n FROM sqlite_schema`).get() as { n: bigint }).n;
  if (count === 0n) return { status: 'uninitialised', appliedRevision: 0n };
  const signature = schemaSignature(db);
  const revision = signature === expectedSignature(REGISTRY_REVISION) ? REGISTRY_REVISION : signature === expectedSignature(1n) ? 1n : null;
  if (revision === null) return { status: 'incompatible', appliedRevision: metaRevisionOf(db, 'aipcs_registry_meta', REGISTRY_ADAPTER_ID, KNOWN_REVISIONS) };
  const meta = db.prepare(`SELECT adapter_id, applied_revision, dirty FROM aipcs_registry_meta WHERE singleton = 1`).get() as
    | { adapter_id: string; applied_revision: bigint; dirty: bigint }
    | undefined;
  if (!meta || meta.adapter_id !== REGISTRY_ADAPTER_ID) return { status: 'incompatible', appliedRevision: null };
  if (meta.dirty !== 0n) return { status: 'dirty', appliedRevision: meta.applied_revision };
  if (meta.applied_revision !== revision) return { status: 'incompatible', appliedRevision: KNOWN_REVISIONS.includes(meta.applied_revision) ? meta.applied_revision : null };
  return { status: revision === REGISTRY_REVISION ? 'ready' : 'outdated', appliedRevision: revision };
}

/**
 * Every service and claim row decodes (operations spec §3.2.5: inspection
 * fails closed on a row that does not), read one at a time. Checked once per
 * start and inspection, where the file's pages are checked too, not in every
 * classification: those under the write lock only ask what to build.
 */
function rowsDecode(db: SqliteDatabase): boolean {
  const check = new RegistryRowsCheck();
  for (const row of db.prepare(`SELECT * FROM aipcs_registry_service`).iterate() as IterableIterator<ServiceRecord>) {
    if (!check.service(row)) return false;
  }
  for (const row of db.prepare(`SELECT * FROM aipcs_registry_claim`).iterate() as IterableIterator<ClaimRecord>) {
    if (!check.claim(row)) return false;
  }
  return true;
}

export interface SqliteRegistryOptions {
  readonly dataRoot: string;
  readonly busyTimeoutMs: number;
  /** Whether the root is the platform default (its missing parents may be created). */
  readonly defaultRoot: boolean;
}

/** Whether serve may switch a file not in WAL mode to WAL: empty, or one of our revisions, intact, with rows that decode. */
function mayEnableWal(db: SqliteDatabase): boolean {
  const { status } = classifyRegistry(db);
  if (status === 'uninitialised') return true;
  if (status !== 'outdated' && status !== 'ready') return false;
  return db.pragma('quick_check(1)', { simple: true }) === 'ok' && rowsDecode(db);
}

/**
 * Brings the registry to the current revision (creating the data root and
 * registry file when missing) and returns it open; fails closed otherwise.
 */
export async function migrateSqliteRegistry(options: SqliteRegistryOptions): Promise<SqliteRegistry> {
  const paths = dataRootPaths(options.dataRoot);
  checkDataRoot(paths.root, { create: true, defaultRoot: options.defaultRoot });
  if (!checkDatabaseFile(paths.registry)) {
    try {
      createDatabaseFile(paths.registry);
    } catch (error) {
      // A concurrent starter created it first: fine, it is checked below.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    checkDatabaseFile(paths.registry);
  }
  const connection = new SqliteConnection(paths.registry, { busyTimeoutMs: options.busyTimeoutMs, readonly: false });
  try {
    // Ours is switched to WAL before its first table exists: a file with
    // tables in another journal mode is someone else's, and stays untouched
    // (ops spec §3.2.5), not switched to WAL before it is refused.
    // Ours means intact with rows that decode too: a damaged or forged
    // registry is refused below, so it must not be switched first.
    if (connection.journalMode().toLowerCase() !== 'wal' && !(await connection.read(mayEnableWal))) throw new StorageFailure('unavailable');
    if (!connection.enableWal()) throw new StorageFailure('unavailable');
    // Classification is repeated inside BEGIN IMMEDIATE, so concurrent
    // starters converge: one migrates, the others find it ready.
    await connection.write((db) => {
      const { status } = classifyRegistry(db);
      if (status === 'ready') return;
      if (status === 'uninitialised') {
        for (const ddl of ddlUpTo(REGISTRY_REVISION)) db.exec(ddl);
        db.prepare(`INSERT INTO aipcs_registry_meta (singleton, adapter_id, applied_revision, dirty) VALUES (1, ?, ?, 0)`).run(REGISTRY_ADAPTER_ID, REGISTRY_REVISION);
        return;
      }
      // An upgrade touches no row, but a registry whose rows do not decode is left as it is.
      if (status !== 'outdated' || !rowsDecode(db)) throw new StorageFailure('unavailable');
      for (const ddl of REGISTRY_DDL_R2) db.exec(ddl);
      db.prepare(`UPDATE aipcs_registry_meta SET applied_revision = ? WHERE singleton = 1`).run(REGISTRY_REVISION);
    });
    // Fail closed on a damaged file too (ops spec §3.2.5: quick_check(1) =
    // ok); otherwise serve started and answered storage_unavailable for
    // whatever touched the bad pages while writing beside them.
    const { status, intact } = await connection.read((db) => ({ ...classifyRegistry(db), intact: db.pragma('quick_check(1)', { simple: true }) === 'ok' && rowsDecode(db) }));
    if (status !== 'ready' || !intact || connection.journalMode().toLowerCase() !== 'wal') throw new StorageFailure('unavailable');
    checkOpenDatabaseFile(paths.registry);
    return new SqliteRegistry(connection);
  } catch (error) {
    connection.close();
    throw error;
  }
}

export interface AdminRegistryOpening {
  /** What inspection found (revisions null when unavailable). */
  readonly state: MigrationState;
  /** Open only when the state is `ready`. */
  readonly registry: SqliteRegistry | null;
}

/**
 * The admin commands' view of the registry: checks the location (a root
 * the textual rules reject throws UnsafeLocationError; one unsafe on disk is
 * an unavailable registry), never creates a directory or file, never
 * migrates. A ready registry is returned open, read-only unless `writable`
 * (the operator commands write claims, but only into a ready registry).
 */
export async function openSqliteRegistryForAdmin(options: SqliteRegistryOptions, mode: { writable: boolean }): Promise<AdminRegistryOpening> {
  const paths = dataRootPaths(options.dataRoot);
  const absent: AdminRegistryOpening = { state: { status: 'uninitialised', appliedRevision: 0n, targetRevision: REGISTRY_REVISION, reason: null }, registry: null };
  checkRootText(paths.root);
  try {
    if (!checkDataRoot(paths.root, { create: false, defaultRoot: options.defaultRoot })) return absent;
    if (!checkDatabaseFile(paths.registry)) return absent;
  } catch (error) {
    // What is on disk (modes, owners, links, stray sidecars) is reported as
    // an unavailable registry, as the reference reports it: status, doctor
    // and storage status still answer (exit 0); commands needing the
    // registry refuse with storage_unavailable.
    return { state: unavailableState(error), registry: null };
  }
  let connection: SqliteConnection;
  try {
    connection = new SqliteConnection(paths.registry, { busyTimeoutMs: options.busyTimeoutMs, readonly: !mode.writable });
  } catch (error) {
    return { state: unavailableState(error), registry: null };
  }
  let classification: RegistryClassification;
  try {
    // A damaged page the schema and meta reads do not touch (a service or
    // claim page) still fails inspection closed (ops spec §3.2.5), as serve
    // fails on it: never `ready` to status, doctor or storage status.
    classification = await connection.read((db) => {
      const found = classifyRegistry(db);
      if (found.status === 'ready' && db.pragma('quick_check(1)', { simple: true }) !== 'ok') throw new StorageFailure('unavailable');
      if ((found.status === 'ready' || found.status === 'outdated') && !rowsDecode(db)) return { status: 'incompatible', appliedRevision: found.appliedRevision };
      return found;
    });
    // Ready operation needs WAL (ops spec §3.2.3). A ready registry put back in
    // another journal mode is `outdated` to every admin command, read-only ones
    // too: `serve` switches it back to WAL, which no admin command does.
    if (classification.status === 'ready' && connection.journalMode().toLowerCase() !== 'wal') classification = { status: 'outdated', appliedRevision: classification.appliedRevision };
  } catch (error) {
    connection.close();
    return { state: unavailableState(error), registry: null };
  }
  const state: MigrationState = { status: classification.status, appliedRevision: classification.appliedRevision, targetRevision: REGISTRY_REVISION, reason: null };
  if (classification.status !== 'ready') {
    connection.close();
    return { state, registry: null };
  }
  return { state, registry: new SqliteRegistry(connection) };
}

/** The shared registry statements over this file's own tables. */
const SQL = registryStatements(quoteIdentifier);

class SqliteRegistryTx implements OperatorRegistryWriter {
  constructor(private readonly db: SqliteDatabase) {}

  private one<R>(sql: string, ...params: unknown[]): R | undefined {
    return prepared(this.db, sql).get(...params) as R | undefined;
  }

  /** Runs a statement; how many rows it changed. */
  private run(sql: string, ...params: unknown[]): number {
    return prepared(this.db, sql).run(...params).changes;
  }

  async getService(principalId: string, serviceId: string): Promise<ServiceRow | undefined> {
    const row = this.one<ServiceRecord>(SQL.getService, principalId, serviceId);
    return row && toServiceRow(row);
  }

  async findServiceByDomain(principalId: string, domainName: string): Promise<ServiceRow | undefined> {
    const row = this.one<ServiceRecord>(SQL.findByDomain, principalId, domainName);
    return row && toServiceRow(row);
  }

  async listServices(principalId: string, limit: number): Promise<ServiceRow[]> {
    return (prepared(this.db, SQL.list).all(principalId, limit) as ServiceRecord[]).map(toServiceRow);
  }

  async getClaim(principalId: string, idempotencyKey: string): Promise<ClaimRow | undefined> {
    const row = this.one<ClaimRecord>(SQL.getClaim, principalId, idempotencyKey);
    return row && toClaimRow(row);
  }

  async getActiveClaim(principalId: string, serviceId: string): Promise<ClaimRow | undefined> {
    const row = this.one<ClaimRecord>(SQL.activeClaim, serviceId, principalId);
    return row && toClaimRow(row);
  }

  async insertService(row: ServiceRow): Promise<void> {
    this.run(SQL.insertService, row.serviceId, ...serviceParams(row));
  }

  async updateService(row: ServiceRow, expectedRevision: bigint): Promise<boolean> {
    return this.run(SQL.updateService, ...serviceParams(row), row.serviceId, expectedRevision) === 1;
  }

  async insertClaim(row: ClaimRow): Promise<void> {
    this.run(SQL.insertClaim, ...claimParams(row));
  }

  async updateClaim(row: ClaimRow): Promise<void> {
    this.run(SQL.updateClaim, ...claimParams(row).slice(2), row.principalId, row.idempotencyKey);
  }

  // -------------------------------------------------------------------------
  // Operator administration

  async getIdentity(serviceId: string): Promise<IdentityRow | undefined> {
    const row = this.one<IdentityRecord>(SQL.getIdentity, serviceId);
    return row && toIdentityRow(row);
  }

  async serviceIdInUse(serviceId: string): Promise<boolean> {
    return this.one(SQL.serviceIdInUse, serviceId) !== undefined;
  }

  async domainReservation(principalId: string, domainName: string): Promise<'pending' | 'frozen' | undefined> {
    const row = this.one<{ phase: string | null }>(SQL.domainReservation, principalId, domainName);
    return row === undefined ? undefined : row.phase === 'recovery_required' ? 'frozen' : 'pending';
  }

  async getReceipt(receiptId: string): Promise<ReceiptRow | undefined> {
    const row = this.one<ReceiptRecord>(SQL.getReceipt, receiptId);
    return row && toReceiptRow(row);
  }

  async putIdentity(row: IdentityRow): Promise<void> {
    this.run(SQL.putIdentity, row.serviceId, row.principalId, row.state, row.domainName, row.idempotencyKey, row.lifecycleAt);
  }

  async deleteIdentity(serviceId: string): Promise<void> {
    this.run(SQL.deleteIdentity, serviceId);
  }

  async insertReceipt(row: ReceiptRow): Promise<void> {
    this.run(SQL.insertReceipt, ...receiptParams(row));
  }

  async deleteReceipts(principalId: string, serviceId: string): Promise<void> {
    this.run(SQL.deleteReceipts, principalId, serviceId);
  }

  async deleteService(principalId: string, serviceId: string): Promise<boolean> {
    return this.run(SQL.deleteService, principalId, serviceId) === 1;
  }

  async tombstoneClaims(principalId: string, serviceId: string, keepKey: string, now: bigint): Promise<void> {
    this.run(SQL.tombstoneClaims, TOMBSTONED_FINGERPRINT, now, principalId, serviceId, keepKey);
  }

  async deleteClaim(principalId: string, idempotencyKey: string): Promise<void> {
    this.run(SQL.deleteClaim, principalId, idempotencyKey);
  }
}

export class SqliteRegistry implements OperatorRegistryPort {
  constructor(private readonly connection: SqliteConnection) {}

  read<T>(work: (tx: OperatorRegistryReader) => Promise<T>): Promise<T> {
    return this.connection.read((db) => work(new SqliteRegistryTx(db)));
  }

  write<T>(work: (tx: OperatorRegistryWriter) => Promise<T>): Promise<T> {
    return this.connection.write((db) => work(new SqliteRegistryTx(db)));
  }

  async close(): Promise<void> {
    this.connection.close();
  }
}
