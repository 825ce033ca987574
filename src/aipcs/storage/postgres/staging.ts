// Import staging on PostgreSQL: the batched writes of one staging unit. Each
// batch is one multi-row INSERT (split below the protocol's parameter limit),
// so a staging unit costs a round trip per batch rather than per row. History
// is held in an unlogged table of the store's own schema (created and dropped
// in the staging unit, so a unit that rolls back leaves nothing, and the role
// needs no TEMPORARY privilege) and appended in time order by one
// INSERT … SELECT: the server sorts it, and the process keeps no history.

import { StorageFailure, type EntityLayout, type HistoryEvent, type MembershipRow, type Micros, type StagingWriter, type StoredBranch, type StoredRecord, type WriteFence } from '../../core/ports.js';
import { BRANCH_INSERT_COLUMNS, branchRowValues, encodeFieldSet, recordColumnValue } from '../shared/record-codec.js';
import { HistoryOrder } from '../shared/history-order.js';
import { encodeValue } from './values.js';
import { type PgSession } from './connection.js';
import { quoteIdentifier } from '../shared/statements.js';
import { putFenceRow, quoteColumn } from './service-store.js';

/** A value as the text the driver sends for it as a scalar parameter (null stays null). */
function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  // Staging values are strings, bigints, numbers and booleans (lists arrive as JSON text).
  if (typeof value === 'object') throw new StorageFailure('incompatible');
  return String(value);
}

const HELD_COLUMNS = ['arrival', 'entity_name', 'record_id', 'record_version', 'event_kind', 'before_json', 'after_json', 'occurred_at', 'order_at'].map(quoteIdentifier);

/** Bind parameters of one statement stay below the protocol's 65535. */
const MAX_PARAMETERS = 60_000;

export class PostgresStagingTx implements StagingWriter {
  private readonly s: string;
  /** The table that holds history until appendHeldHistory. */
  private readonly heldTable: string;
  private held = false;
  private listMembers: boolean | null = null;
  private arrival = 0n;
  private readonly order = new HistoryOrder();

  constructor(
    private readonly session: PgSession,
    private readonly schema: string,
    private readonly principalId: string,
  ) {
    this.s = quoteIdentifier(schema);
    this.heldTable = `${this.s}."__aipcs_held_history"`;
  }

  /** INSERT of `rows` (each `width` values) in as few statements as the parameter limit allows. */
  private async insertRows(prefix: string, width: number, rows: readonly unknown[][], suffix = ''): Promise<void> {
    const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / width));
    for (let start = 0; start < rows.length; start += perStatement) {
      const slice = rows.slice(start, start + perStatement);
      const params: unknown[] = [];
      const tuples: string[] = [];
      for (const row of slice) {
        const marks: string[] = [];
        for (const value of row) {
          params.push(value);
          marks.push(`$${params.length}`);
        }
        tuples.push(`(${marks.join(', ')})`);
      }
      await this.session.run(`${prefix} VALUES ${tuples.join(', ')}${suffix}`, params);
    }
  }

  /** Each table's column types by quoted column name, as the catalog names them (read once per table and unit). */
  private readonly columnTypes = new Map<string, Map<string, string>>();

  private async typesOf(table: string): Promise<Map<string, string>> {
    let types = this.columnTypes.get(table);
    if (types === undefined) {
      const rows = await this.session.rows<{ name: string; type: string }>(
        `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute AS a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`,
        [table],
      );
      types = new Map(rows.map((row) => [quoteIdentifier(row.name), row.type]));
      this.columnTypes.set(table, types);
    }
    return types;
  }

  /**
   * INSERT of `rows` (values in `columns` order) as one statement over one
   * text array per column, each element cast to its column's type: the
   * server parses a handful of parameters instead of one per value (a
   * multi-row VALUES list of a batch binds thousands). Every value travels
   * as the text the driver sends for a scalar parameter (String of it), so
   * the column's input function sees the same text either way.
   */
  private async insertUnnest(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[]): Promise<void> {
    // `columns` are quoted column names.
    if (rows.length === 0) return;
    const types = await this.typesOf(table);
    const arrays = columns.map((_, index) => rows.map((row) => textOf(row[index])));
    const casts = columns.map((name, index) => {
      const type = types.get(name);
      if (type === undefined) throw new StorageFailure('incompatible');
      return `u.c${index}::${type}`;
    });
    const unnest = columns.map((_, index) => `$${index + 1}::text[]`).join(', ');
    const aliases = columns.map((_, index) => `c${index}`).join(', ');
    await this.session.run(`INSERT INTO ${table} (${columns.join(', ')}) SELECT ${casts.join(', ')} FROM unnest(${unnest}) AS u(${aliases})`, arrays);
  }

  async setFence(fence: WriteFence): Promise<void> {
    await putFenceRow(this.session, this.schema, fence);
  }

  async insertRecords(entity: EntityLayout, records: readonly StoredRecord[]): Promise<void> {
    if (records.length === 0) return;
    const columns = entity.columns;
    const rows = records.map((record) =>
      columns.map((column) => recordColumnValue(column, record, this.principalId, encodeValue)),
    );
    await this.insertUnnest(
      `${this.s}.${quoteIdentifier(entity.name)}`,
      columns.map((column) => quoteColumn(column.name)),
      rows,
    );
    if (entity.listFields.length > 0 && (await this.keepsListMembers())) await this.insertListMembers(entity, records);
  }

  /** Whether the store keeps string-list members one row each (stores of a revision that has "__aipcs_list_member"). */
  private async keepsListMembers(): Promise<boolean> {
    if (this.listMembers === null) {
      const row = await this.session.first<{ present: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS present`, [`${this.s}."__aipcs_list_member"`]);
      this.listMembers = row?.present === true;
    }
    return this.listMembers;
  }

  /** The members of every string list of `records`, one row each, in one statement. */
  private async insertListMembers(entity: EntityLayout, records: readonly StoredRecord[]): Promise<void> {
    const fields: string[] = [];
    const members: string[] = [];
    const ids: string[] = [];
    for (const record of records) {
      for (const field of entity.listFields) {
        const value = record.fields[field];
        if (!Array.isArray(value)) continue;
        for (const member of value as readonly string[]) {
          fields.push(field);
          members.push(member);
          ids.push(record.id);
        }
      }
    }
    if (members.length === 0) return;
    // Members of one list are distinct and records are new, so the rows never collide.
    await this.session.run(
      `INSERT INTO ${this.s}."__aipcs_list_member" ("principal_id", "entity_name", "field_name", "member", "record_id")
       SELECT $1, $2, u.f, u.m, u.r FROM unnest($3::text[], $4::text[], $5::text[]) AS u(f, m, r)`,
      [this.principalId, entity.name, fields, members, ids],
    );
  }

  async insertBranches(branches: readonly StoredBranch[]): Promise<void> {
    if (branches.length === 0) return;
    await this.insertRows(
      `INSERT INTO ${this.s}."__aipcs_memory_branch" (${BRANCH_INSERT_COLUMNS})`,
      12,
      branches.map((branch) => branchRowValues(branch, this.principalId)),
    );
  }

  async putMemberships(rows: readonly MembershipRow[], assignedAt: Micros): Promise<void> {
    if (rows.length === 0) return;
    // The artefact holds one membership per (branch, entity, record) at most, so no row updates another of the same statement.
    await this.insertRows(
      `INSERT INTO ${this.s}."__aipcs_record_branch" ("principal_id", "entity_name", "record_id", "branch_id", "role", "assigned_at")`,
      6,
      rows.map((row) => [this.principalId, row.entityName, row.recordId, row.branchId, row.role, assignedAt]),
      ` ON CONFLICT ("principal_id", "entity_name", "record_id", "branch_id") DO UPDATE SET "role" = EXCLUDED."role", "assigned_at" = EXCLUDED."assigned_at"`,
    );
  }

  async holdHistory(events: readonly HistoryEvent[]): Promise<void> {
    if (events.length === 0) return;
    if (!this.held) {
      // DDL is transactional: a unit that rolls back leaves no table behind.
      await this.session.run(`DROP TABLE IF EXISTS ${this.heldTable}`);
      await this.session.run(
        `CREATE UNLOGGED TABLE ${this.heldTable} (
           "arrival" bigint NOT NULL,
           "entity_name" text COLLATE "C" NOT NULL,
           "record_id" text COLLATE "C" NOT NULL,
           "record_version" bigint NOT NULL,
           "event_kind" text COLLATE "C" NOT NULL,
           "before_json" text COLLATE "C",
           "after_json" text COLLATE "C",
           "occurred_at" bigint NOT NULL,
           "order_at" bigint NOT NULL
         )`,
      );
      this.held = true;
    }
    const rows = events.map((event) => [this.arrival++, event.entityName, event.recordId, event.recordVersion, event.kind, encodeFieldSet(event.before), encodeFieldSet(event.after), event.occurredAt, this.order.of(event)]);
    await this.insertUnnest(this.heldTable, HELD_COLUMNS, rows);
  }

  async appendHeldHistory(): Promise<void> {
    if (!this.held) return;
    // Identity values are drawn as the sorted rows reach the insert: event_sequence follows time (kept per record), then arrival.
    await this.session.run(
      `INSERT INTO ${this.s}."__aipcs_record_history" ("principal_id", "entity_name", "record_id", "record_version", "event_kind", "before_json", "after_json", "occurred_at")
       SELECT $1, "entity_name", "record_id", "record_version", "event_kind", "before_json", "after_json", "occurred_at" FROM ${this.heldTable} ORDER BY "order_at", "arrival"`,
      [this.principalId],
    );
    await this.session.run(`DROP TABLE ${this.heldTable}`);
    this.held = false;
  }
}
