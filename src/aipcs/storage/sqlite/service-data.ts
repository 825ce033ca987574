// Record data on SQLite: the ServiceDataPort over the per-service stores.
// Values are encoded per column type (booleans 0/1, lists as JSON text plus a
// member side table for indexed membership search, server timestamps as
// Timestamp27 text); every query is scoped to the principal and ordered by id.

import type { Statement } from 'better-sqlite3';
import { losslessJson, parseJson, type JsonValue } from '../../../common/json.js';
import { formatTimestamp27 } from '../../core/time.js';
import {
  StorageFailure,
  type EntityLayout,
  type FieldSet,
  type FieldValue,
  type HistoryEvent,
  type RecordQuery,
  type ReplayRow,
  type ServiceDataPort,
  type ServiceDataReader,
  type ServiceDataWriter,
  type StorageLocator,
  type StoredHistoryEvent,
  type StoredRecord,
} from '../../core/ports.js';
import type { SqliteDatabase } from './connection.js';
import { quoteIdentifier, type SqliteServiceStores } from './service-store.js';

const statementCache = new WeakMap<SqliteDatabase, Map<string, Statement>>();

export function prepared(db: SqliteDatabase, sql: string): Statement {
  let cache = statementCache.get(db);
  if (!cache) {
    cache = new Map();
    statementCache.set(db, cache);
  }
  let statement = cache.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    if (cache.size > 512) cache.clear();
    cache.set(sql, statement);
  }
  return statement;
}

const STORED_LIMITS = { maxBytes: 2 * 1024 * 1024, maxDepth: 16 };

export function parseTimestamp27(text: string): bigint {
  const seconds = Date.parse(`${text.slice(0, 19)}Z`);
  if (Number.isNaN(seconds)) throw new StorageFailure('unavailable');
  return BigInt(seconds) * 1000n + BigInt(text.slice(20, 26) || '0');
}

const SERVER_COLUMNS = new Set(['id', 'owner_id', 'created_at', 'updated_at', 'created_via', 'record_version']);

function encodeValue(type: string, value: FieldValue): unknown {
  if (value === null) return null;
  if (type === 'boolean') return value ? 1n : 0n;
  if (type === 'string_list') return JSON.stringify(value);
  return value;
}

function decodeValue(type: string, value: unknown): FieldValue {
  if (value === null || value === undefined) return null;
  if (type === 'boolean') return value === 1n || value === 1;
  if (type === 'string_list') return JSON.parse(value as string) as string[];
  if (type === 'real' && typeof value === 'bigint') return Number(value);
  return value as FieldValue;
}

export function encodeFieldSet(fields: FieldSet | null): string | null {
  return fields === null ? null : losslessJson(fields as unknown as JsonValue);
}

export function decodeFieldSet(text: string | null): FieldSet | null {
  return text === null ? null : (parseJson(text, STORED_LIMITS) as unknown as FieldSet);
}

type Row = Record<string, unknown>;

export class SqliteDataTx implements ServiceDataWriter {
  constructor(
    private readonly db: SqliteDatabase,
    private readonly principalId: string,
  ) {}

  private domainColumns(entity: EntityLayout) {
    return entity.columns.filter((column) => !SERVER_COLUMNS.has(column.name));
  }

  private selectList(entity: EntityLayout): string {
    return ['id', 'created_at', 'updated_at', 'created_via', 'record_version', ...this.domainColumns(entity).map((column) => column.name)]
      .map((name) => `r.${quoteIdentifier(name)}`)
      .join(', ');
  }

  private toRecord(entity: EntityLayout, row: Row): StoredRecord {
    const fields: Record<string, FieldValue> = {};
    for (const column of this.domainColumns(entity)) fields[column.name] = decodeValue(column.type, row[column.name]);
    return {
      id: row['id'] as string,
      createdAt: parseTimestamp27(row['created_at'] as string),
      updatedAt: parseTimestamp27(row['updated_at'] as string),
      createdVia: row['created_via'] as string,
      recordVersion: row['record_version'] as bigint,
      fields,
    };
  }

  async getRecord(entity: EntityLayout, id: string): Promise<StoredRecord | undefined> {
    const row = prepared(this.db, `SELECT ${this.selectList(entity)} FROM ${quoteIdentifier(entity.name)} AS r WHERE r."id" = ? AND r."owner_id" = ?`).get(id, this.principalId) as Row | undefined;
    return row && this.toRecord(entity, row);
  }

  async queryRecords(entity: EntityLayout, query: RecordQuery): Promise<StoredRecord[]> {
    const where: string[] = ['r."owner_id" = ?'];
    const params: unknown[] = [this.principalId];
    const types = new Map(entity.columns.map((column) => [column.name, column.type]));
    for (const filter of query.filters) {
      if (filter.kind === 'equals') {
        where.push(`r.${quoteIdentifier(filter.field)} = ?`);
        params.push(encodeValue(types.get(filter.field) ?? 'text', filter.value));
      } else {
        where.push(`r."id" IN (SELECT m.record_id FROM __aipcs_list_member AS m WHERE m.entity_name = ? AND m.field_name = ? AND m.member = ?)`);
        params.push(entity.name, filter.field, filter.value);
      }
    }
    if (query.branch) {
      where.push(`r."id" IN (SELECT b.record_id FROM __aipcs_record_branch AS b WHERE b.principal_id = ? AND b.branch_id = ? AND b.role = ? AND b.entity_name = ?)`);
      params.push(this.principalId, query.branch.branchId, query.branch.role, entity.name);
    }
    if (query.afterId !== null) {
      where.push('r."id" > ?');
      params.push(query.afterId);
    }
    params.push(BigInt(query.limit));
    const sql = `SELECT ${this.selectList(entity)} FROM ${quoteIdentifier(entity.name)} AS r WHERE ${where.join(' AND ')} ORDER BY r."id" LIMIT ?`;
    return (prepared(this.db, sql).all(...params) as Row[]).map((row) => this.toRecord(entity, row));
  }

  async history(entityName: string, recordId: string | null, afterSequence: bigint | null, limit: number): Promise<StoredHistoryEvent[]> {
    const sql = `SELECT event_sequence, entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at
      FROM __aipcs_record_history WHERE principal_id = ? AND entity_name = ?${recordId === null ? '' : ' AND record_id = ?'}${afterSequence === null ? '' : ' AND event_sequence > ?'}
      ORDER BY event_sequence LIMIT ?`;
    const params: unknown[] = [this.principalId, entityName];
    if (recordId !== null) params.push(recordId);
    if (afterSequence !== null) params.push(afterSequence);
    params.push(BigInt(limit));
    return (prepared(this.db, sql).all(...params) as Row[]).map((row) => ({
      sequence: row['event_sequence'] as bigint,
      entityName: row['entity_name'] as string,
      recordId: row['record_id'] as string,
      recordVersion: row['record_version'] as bigint,
      kind: row['event_kind'] as HistoryEvent['kind'],
      before: decodeFieldSet(row['before_json'] as string | null),
      after: decodeFieldSet(row['after_json'] as string | null),
      occurredAt: row['occurred_at'] as bigint,
    }));
  }

  async hasDuplicates(entityName: string, columns: readonly string[]): Promise<boolean> {
    const list = columns.map(quoteIdentifier).join(', ');
    const notNull = columns.map((column) => `${quoteIdentifier(column)} IS NOT NULL`).join(' AND ');
    return prepared(this.db, `SELECT 1 FROM ${quoteIdentifier(entityName)} WHERE ${notNull} GROUP BY ${list} HAVING count(*) > 1 LIMIT 1`).get() !== undefined;
  }

  async fenceIsOpen(): Promise<boolean> {
    const row = prepared(this.db, `SELECT state FROM __aipcs_write_fence WHERE singleton = 1`).get() as { state: string } | undefined;
    return row === undefined || row.state === 'open';
  }

  async getReplay(idempotencyKey: string): Promise<ReplayRow | undefined> {
    const row = prepared(this.db, `SELECT operation_kind, fingerprint, result_json, completed_at FROM __aipcs_record_mutation WHERE principal_id = ? AND idempotency_key = ?`).get(
      this.principalId,
      idempotencyKey,
    ) as Row | undefined;
    if (!row) return undefined;
    return {
      idempotencyKey,
      kind: row['operation_kind'] as string,
      fingerprint: row['fingerprint'] as string,
      result: parseJson(row['result_json'] as string, STORED_LIMITS),
      completedAt: row['completed_at'] as bigint,
    };
  }

  async putReplay(row: ReplayRow): Promise<void> {
    prepared(this.db, `INSERT INTO __aipcs_record_mutation (principal_id, idempotency_key, operation_kind, fingerprint, result_json, completed_at) VALUES (?, ?, ?, ?, ?, ?)`).run(
      this.principalId,
      row.idempotencyKey,
      row.kind,
      row.fingerprint,
      losslessJson(row.result),
      row.completedAt,
    );
  }

  async recordExists(entityName: string, id: string): Promise<boolean> {
    return prepared(this.db, `SELECT 1 FROM ${quoteIdentifier(entityName)} WHERE "id" = ? AND "owner_id" = ?`).get(id, this.principalId) !== undefined;
  }

  async isReferenced(id: string, sources: readonly { readonly entity: string; readonly column: string }[]): Promise<boolean> {
    for (const source of sources) {
      if (prepared(this.db, `SELECT 1 FROM ${quoteIdentifier(source.entity)} WHERE ${quoteIdentifier(source.column)} = ? LIMIT 1`).get(id) !== undefined) return true;
    }
    return false;
  }

  private writeMembers(entity: EntityLayout, record: StoredRecord): void {
    prepared(this.db, `DELETE FROM __aipcs_list_member WHERE entity_name = ? AND record_id = ?`).run(entity.name, record.id);
    const insert = prepared(this.db, `INSERT INTO __aipcs_list_member (entity_name, field_name, member, record_id) VALUES (?, ?, ?, ?)`);
    for (const field of entity.listFields) {
      const members = record.fields[field];
      if (!Array.isArray(members)) continue;
      for (const member of members as string[]) insert.run(entity.name, field, member, record.id);
    }
  }

  async insertRecord(entity: EntityLayout, record: StoredRecord): Promise<void> {
    const columns = entity.columns.map((column) => column.name);
    const values = entity.columns.map((column) => this.columnValue(column.name, column.type, record));
    prepared(this.db, `INSERT INTO ${quoteIdentifier(entity.name)} (${columns.map(quoteIdentifier).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`).run(...values);
    if (entity.listFields.length > 0) this.writeMembers(entity, record);
  }

  private columnValue(name: string, type: string, record: StoredRecord): unknown {
    switch (name) {
      case 'id':
        return record.id;
      case 'owner_id':
        return this.principalId;
      case 'created_at':
        return formatTimestamp27(record.createdAt);
      case 'updated_at':
        return formatTimestamp27(record.updatedAt);
      case 'created_via':
        return record.createdVia;
      case 'record_version':
        return record.recordVersion;
      default:
        return encodeValue(type, record.fields[name] ?? null);
    }
  }

  async updateRecord(entity: EntityLayout, record: StoredRecord): Promise<void> {
    const columns = entity.columns.filter((column) => !['id', 'owner_id', 'created_at', 'created_via'].includes(column.name));
    const result = prepared(
      this.db,
      `UPDATE ${quoteIdentifier(entity.name)} SET ${columns.map((column) => `${quoteIdentifier(column.name)} = ?`).join(', ')} WHERE "id" = ? AND "owner_id" = ?`,
    ).run(...columns.map((column) => this.columnValue(column.name, column.type, record)), record.id, this.principalId);
    if (result.changes !== 1) throw new StorageFailure('unavailable');
    if (entity.listFields.length > 0) this.writeMembers(entity, record);
  }

  async deleteRecord(entity: EntityLayout, id: string): Promise<void> {
    prepared(this.db, `DELETE FROM __aipcs_record_branch WHERE principal_id = ? AND entity_name = ? AND record_id = ?`).run(this.principalId, entity.name, id);
    prepared(this.db, `DELETE FROM __aipcs_list_member WHERE entity_name = ? AND record_id = ?`).run(entity.name, id);
    prepared(this.db, `DELETE FROM ${quoteIdentifier(entity.name)} WHERE "id" = ? AND "owner_id" = ?`).run(id, this.principalId);
  }

  async appendHistory(event: HistoryEvent): Promise<void> {
    prepared(
      this.db,
      `INSERT INTO __aipcs_record_history (principal_id, entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(this.principalId, event.entityName, event.recordId, event.recordVersion, event.kind, encodeFieldSet(event.before), encodeFieldSet(event.after), event.occurredAt);
  }
}

export class SqliteServiceData implements ServiceDataPort {
  constructor(private readonly stores: SqliteServiceStores) {}

  private connectionFor(locator: StorageLocator) {
    const connection = this.stores.connection(locator);
    if (!connection) throw new StorageFailure('unavailable');
    return connection;
  }

  read<T>(locator: StorageLocator, principalId: string, work: (tx: ServiceDataReader) => Promise<T>): Promise<T> {
    return this.connectionFor(locator).read((db) => work(new SqliteDataTx(db, principalId)));
  }

  write<T>(locator: StorageLocator, principalId: string, work: (tx: ServiceDataWriter) => Promise<T>): Promise<T> {
    return this.connectionFor(locator).write((db) => work(new SqliteDataTx(db, principalId)));
  }
}
