// The SQLite registry: services, the claim ledger (idempotency keys and
// durable lifecycle intent) and its explicit migration. Only `serve` migrates;
// everything else inspects. Inspection compares the exact object set, so a
// file that is not ours, or only half ours, is never treated as ready.

import Database from 'better-sqlite3';
import { losslessJson, parseJson, type JsonValue } from '../../../common/json.js';
import {
  StorageFailure,
  type ClaimKind,
  type ClaimPhase,
  type ClaimRow,
  type DesignState,
  type OperationalStatus,
  type RegistryPort,
  type RegistryReader,
  type RegistryWriter,
  type ServiceRow,
} from '../../core/ports.js';
import { SqliteConnection, type SqliteDatabase } from './connection.js';
import { checkDatabaseFile, checkDataRoot, createDatabaseFile, dataRootPaths } from './location.js';

export const REGISTRY_ADAPTER_ID = 'aipcs.sqlite.registry';
export const REGISTRY_REVISION = 1n;

const REGISTRY_DDL = [
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

export type RegistryStatus = 'uninitialised' | 'ready' | 'dirty' | 'incompatible';

type SchemaObject = { type: string; name: string; sql: string };

let expectedObjects: string | undefined;

function schemaSignature(db: SqliteDatabase): string {
  const rows = db
    .prepare(`SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
    .all() as SchemaObject[];
  return JSON.stringify(rows.map((row) => [row.type, row.name, row.sql.replace(/\s+/g, ' ')]));
}

function expectedSignature(): string {
  if (expectedObjects === undefined) {
    const db = new Database(':memory:');
    for (const ddl of REGISTRY_DDL) db.exec(ddl);
    expectedObjects = schemaSignature(db);
    db.close();
  }
  return expectedObjects;
}

/** Classifies an open registry database (inside a transaction). */
export function classifyRegistry(db: SqliteDatabase): RegistryStatus {
  const count = (db.prepare(`SELECT count(*) AS n FROM sqlite_schema`).get() as { n: bigint }).n;
  if (count === 0n) return 'uninitialised';
  if (schemaSignature(db) !== expectedSignature()) return 'incompatible';
  const meta = db.prepare(`SELECT adapter_id, applied_revision, dirty FROM aipcs_registry_meta WHERE singleton = 1`).get() as
    | { adapter_id: string; applied_revision: bigint; dirty: bigint }
    | undefined;
  if (!meta || meta.adapter_id !== REGISTRY_ADAPTER_ID) return 'incompatible';
  if (meta.dirty !== 0n) return 'dirty';
  return meta.applied_revision === REGISTRY_REVISION ? 'ready' : 'incompatible';
}

export interface SqliteRegistryOptions {
  readonly dataRoot: string;
  readonly busyTimeoutMs: number;
  /** Whether the root is the platform default (its missing parents may be created). */
  readonly defaultRoot: boolean;
}

/**
 * Brings the registry to the current revision (creating the data root and
 * registry file when missing) and returns it open; fails closed otherwise.
 */
export async function migrateSqliteRegistry(options: SqliteRegistryOptions): Promise<SqliteRegistry> {
  const paths = dataRootPaths(options.dataRoot);
  checkDataRoot(paths.root, { create: true, createParents: options.defaultRoot });
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
    if (!connection.enableWal()) throw new StorageFailure('unavailable');
    await connection.write((db) => {
      const status = classifyRegistry(db);
      if (status === 'ready') return;
      if (status !== 'uninitialised') throw new StorageFailure('unavailable');
      for (const ddl of REGISTRY_DDL) db.exec(ddl);
      db.prepare(`INSERT INTO aipcs_registry_meta (singleton, adapter_id, applied_revision, dirty) VALUES (1, ?, ?, 0)`).run(REGISTRY_ADAPTER_ID, REGISTRY_REVISION);
    });
    const status = await connection.read((db) => classifyRegistry(db));
    if (status !== 'ready' || connection.journalMode().toLowerCase() !== 'wal') throw new StorageFailure('unavailable');
    checkDatabaseFile(paths.registry);
    return new SqliteRegistry(connection);
  } catch (error) {
    connection.close();
    throw error;
  }
}

/** Opens an existing ready registry for read-only inspection (never creates or migrates). */
export async function inspectSqliteRegistry(options: SqliteRegistryOptions): Promise<{ status: RegistryStatus | 'missing'; registry?: SqliteRegistry }> {
  const paths = dataRootPaths(options.dataRoot);
  if (!checkDataRoot(paths.root, { create: false, createParents: false })) return { status: 'missing' };
  if (!checkDatabaseFile(paths.registry)) return { status: 'uninitialised' };
  const connection = new SqliteConnection(paths.registry, { busyTimeoutMs: options.busyTimeoutMs, readonly: true });
  const status = await connection.read((db) => classifyRegistry(db));
  if (status !== 'ready') {
    connection.close();
    return { status };
  }
  return { status, registry: new SqliteRegistry(connection) };
}

type ServiceRecord = {
  service_id: string;
  principal_id: string;
  domain_name: string;
  domain_class: string;
  intent_description: string;
  created_at: bigint;
  updated_at: bigint;
  last_activity_at: bigint;
  manifest_json: string | null;
  schema_version: bigint | null;
  design_state: string;
  operational_status: string;
  service_revision: bigint;
  materialised_at: bigint | null;
  storage_backend: string | null;
  storage_namespace: string | null;
};

type ClaimRecord = {
  principal_id: string;
  idempotency_key: string;
  operation_kind: string;
  fingerprint: string;
  service_id: string | null;
  phase: string;
  intent_json: string;
  result_json: string | null;
  created_at: bigint;
  updated_at: bigint;
};

const STORED_JSON_LIMITS = { maxBytes: 16 * 1024 * 1024, maxDepth: 256 };

export function parseStoredJson(text: string): JsonValue {
  return parseJson(text, STORED_JSON_LIMITS);
}

function toServiceRow(row: ServiceRecord): ServiceRow {
  return {
    serviceId: row.service_id,
    principalId: row.principal_id,
    domainName: row.domain_name,
    domainClass: row.domain_class,
    intentDescription: row.intent_description,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastActivityAt: row.last_activity_at,
    manifest: row.manifest_json === null ? null : parseStoredJson(row.manifest_json),
    schemaVersion: row.schema_version === null ? null : Number(row.schema_version),
    designState: row.design_state as DesignState,
    operationalStatus: row.operational_status as OperationalStatus,
    serviceRevision: row.service_revision,
    materialisedAt: row.materialised_at,
    storage:
      row.storage_backend === null || row.storage_namespace === null
        ? null
        : { backend: row.storage_backend as 'sqlite' | 'postgresql', namespace: row.storage_namespace },
  };
}

function serviceParams(row: ServiceRow): unknown[] {
  return [
    row.principalId,
    row.domainName,
    row.domainClass,
    row.intentDescription,
    row.createdAt,
    row.updatedAt,
    row.lastActivityAt,
    row.manifest === null ? null : losslessJson(row.manifest),
    row.schemaVersion === null ? null : BigInt(row.schemaVersion),
    row.designState,
    row.operationalStatus,
    row.serviceRevision,
    row.materialisedAt,
    row.storage?.backend ?? null,
    row.storage?.namespace ?? null,
  ];
}

function toClaimRow(row: ClaimRecord): ClaimRow {
  return {
    principalId: row.principal_id,
    idempotencyKey: row.idempotency_key,
    kind: row.operation_kind as ClaimKind,
    fingerprint: row.fingerprint,
    serviceId: row.service_id,
    phase: row.phase as ClaimPhase,
    intent: parseStoredJson(row.intent_json),
    result: row.result_json === null ? null : parseStoredJson(row.result_json),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const SERVICE_COLUMNS = `service_id, principal_id, domain_name, domain_class, intent_description, created_at, updated_at, last_activity_at,
  manifest_json, schema_version, design_state, operational_status, service_revision, materialised_at, storage_backend, storage_namespace`;

const CLAIM_COLUMNS = `principal_id, idempotency_key, operation_kind, fingerprint, service_id, phase, intent_json, result_json, created_at, updated_at`;

class SqliteRegistryTx implements RegistryWriter {
  constructor(private readonly db: SqliteDatabase) {}

  async getService(principalId: string, serviceId: string): Promise<ServiceRow | undefined> {
    const row = this.db.prepare(`SELECT ${SERVICE_COLUMNS} FROM aipcs_registry_service WHERE principal_id = ? AND service_id = ?`).get(principalId, serviceId) as ServiceRecord | undefined;
    return row && toServiceRow(row);
  }

  async findServiceByDomain(principalId: string, domainName: string): Promise<ServiceRow | undefined> {
    const row = this.db.prepare(`SELECT ${SERVICE_COLUMNS} FROM aipcs_registry_service WHERE principal_id = ? AND domain_name = ?`).get(principalId, domainName) as ServiceRecord | undefined;
    return row && toServiceRow(row);
  }

  async listServices(principalId: string, limit: number): Promise<ServiceRow[]> {
    const rows = this.db
      .prepare(`SELECT ${SERVICE_COLUMNS} FROM aipcs_registry_service WHERE principal_id = ? ORDER BY created_at, service_id LIMIT ?`)
      .all(principalId, limit) as ServiceRecord[];
    return rows.map(toServiceRow);
  }

  async getClaim(principalId: string, idempotencyKey: string): Promise<ClaimRow | undefined> {
    const row = this.db.prepare(`SELECT ${CLAIM_COLUMNS} FROM aipcs_registry_claim WHERE principal_id = ? AND idempotency_key = ?`).get(principalId, idempotencyKey) as ClaimRecord | undefined;
    return row && toClaimRow(row);
  }

  async getActiveClaim(principalId: string, serviceId: string): Promise<ClaimRow | undefined> {
    const row = this.db
      .prepare(`SELECT ${CLAIM_COLUMNS} FROM aipcs_registry_claim WHERE service_id = ? AND principal_id = ? AND phase IN ('prepared', 'recovery_required')`)
      .get(serviceId, principalId) as ClaimRecord | undefined;
    return row && toClaimRow(row);
  }

  async insertService(row: ServiceRow): Promise<void> {
    this.db.prepare(`INSERT INTO aipcs_registry_service (${SERVICE_COLUMNS}) VALUES (?, ${new Array(15).fill('?').join(', ')})`).run(row.serviceId, ...serviceParams(row));
  }

  async updateService(row: ServiceRow, expectedRevision: bigint): Promise<boolean> {
    const result = this.db
      .prepare(
        `UPDATE aipcs_registry_service SET principal_id = ?, domain_name = ?, domain_class = ?, intent_description = ?, created_at = ?, updated_at = ?,
          last_activity_at = ?, manifest_json = ?, schema_version = ?, design_state = ?, operational_status = ?, service_revision = ?,
          materialised_at = ?, storage_backend = ?, storage_namespace = ?
         WHERE service_id = ? AND service_revision = ?`,
      )
      .run(...serviceParams(row), row.serviceId, expectedRevision);
    return result.changes === 1;
  }

  async insertClaim(row: ClaimRow): Promise<void> {
    this.db.prepare(`INSERT INTO aipcs_registry_claim (${CLAIM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...claimParams(row));
  }

  async updateClaim(row: ClaimRow): Promise<void> {
    this.db
      .prepare(
        `UPDATE aipcs_registry_claim SET operation_kind = ?, fingerprint = ?, service_id = ?, phase = ?, intent_json = ?, result_json = ?, created_at = ?, updated_at = ?
         WHERE principal_id = ? AND idempotency_key = ?`,
      )
      .run(...claimParams(row).slice(2), row.principalId, row.idempotencyKey);
  }
}

function claimParams(row: ClaimRow): unknown[] {
  return [
    row.principalId,
    row.idempotencyKey,
    row.kind,
    row.fingerprint,
    row.serviceId,
    row.phase,
    losslessJson(row.intent),
    row.result === null ? null : losslessJson(row.result),
    row.createdAt,
    row.updatedAt,
  ];
}

export class SqliteRegistry implements RegistryPort {
  constructor(private readonly connection: SqliteConnection) {}

  read<T>(work: (tx: RegistryReader) => Promise<T>): Promise<T> {
    return this.connection.read((db) => work(new SqliteRegistryTx(db)));
  }

  write<T>(work: (tx: RegistryWriter) => Promise<T>): Promise<T> {
    return this.connection.write((db) => work(new SqliteRegistryTx(db)));
  }

  async close(): Promise<void> {
    this.connection.close();
  }
}
