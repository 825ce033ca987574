// Record data on PostgreSQL: the ServiceDataPort over the per-service
// schemas. Values are stored in their native column types (lists as jsonb
// arrays, their members also one row each in "__aipcs_list_member"; server
// timestamps as Timestamp27 text, snapshots and replay results as lossless
// JSON text); every query is scoped to the principal and ordered by id, and
// walks an index in id order that stops at the page limit. Write units take the store's advisory lock first, which serialises
// them like SQLite's BEGIN IMMEDIATE does. Operators read whole stores in
// canonical order (export) and stage a new store with its rows in one unit
// (import); apart from staging, no DDL here.

import {
  StorageFailure,
  type BranchCard,
  type BranchQuery,
  type BranchRole,
  type ColumnLayout,
  type ColumnType,
  type EntityLayout,
  type DuplicateValue,
  type FacetCount,
  type FieldValue,
  type HistoryEvent,
  type HistoryPosition,
  type MembershipRow,
  type OperatorDataPort,
  type TransferBatching,
  type OperatorDataReader,
  type OperatorDataWriter,
  type RecordQuery,
  type RecordScan,
  type ReplayRow,
  type ScanCondition,
  type ScannedRecord,
  type StorageLocator,
  type StagingWriter,
  type StoreLayout,
  type WriteFence,
  type StoredBranch,
  type HistoryRows,
  type StoredRecord,
} from '../../core/ports.js';
import * as statements from '../shared/statements.js';
import { numberedPlaceholders, quoteIdentifier, toBranch, toWriteFence, toBranchCards, toMembershipRow, toReplay, type Statement, type TableName } from '../shared/statements.js';
import { comparableTimestamp27, historyEventFromArrayRow, historyRowsWithinBudget, recordColumnValue, recordSelectList, toStoredRecord, toStoredRecordFromValues, type Row } from '../shared/record-codec.js';
import { encodeValue } from './values.js';
import { type PgSession, type PostgresConnection } from './connection.js';
import { PostgresStagingTx } from './staging.js';
import {
  assertStoreBinding,
  compareLayout,
  equalityKey,
  insertStoreMeta,
  lockStore,
  putFenceRow,
  quoteColumn,
  schemaOf,
  selectColumn,
  storeKeysDdl,
  storeMetaSelect,
  storeTablesDdl,
  type PostgresServiceStores,
  type StoreMetaRow,
} from './service-store.js';



/** Ids a probe counts at most when choosing which range drives a page. */
const RANGE_PROBE_CAP = 1000;

/** An index range of record ids in id order (alias "d"), as queryRecords drives or checks it. */
interface IdRange {
  readonly from: string;
  /** The range's record id column. */
  readonly id: string;
  /** Its condition on "d", allocating its parameters with `next`. */
  readonly where: (next: (value: unknown) => string) => string;
  /** Set for an equality filter, which is checked on the record itself. */
  readonly equality?: { readonly field: string; readonly type: ColumnType | undefined; readonly encoded: unknown };
}

/** `alias.field = value`; a hashed key walks its index, the value itself decides. */
function equalityCondition(alias: string, field: string, type: ColumnType | undefined, value: string): string {
  const column = `${alias}.${quoteColumn(field)}`;
  const key = equalityKey(column, type);
  return key === column ? `${column} = ${value}` : `${key} = ${equalityKey(value, type)} AND ${column} = ${value}`;
}

function decodeValue(type: string, value: unknown): FieldValue {
  if (value === null || value === undefined) return null;
  if (type === 'string_list') {
    if (!Array.isArray(value) || !value.every((member) => typeof member === 'string')) throw new StorageFailure('unavailable');
    return value as string[];
  }
  if (type === 'integer' && typeof value !== 'bigint') throw new StorageFailure('unavailable');
  return value as FieldValue;
}

/** One unit of work on one service schema, for one principal. */
export class PostgresDataTx implements OperatorDataWriter {
  private readonly s: string;

  constructor(
    private readonly session: PgSession,
    private readonly schema: string,
    private readonly principalId: string,
  ) {
    this.s = quoteIdentifier(schema);
  }


  private one(statement: Statement): Promise<Row | undefined> {
    return this.session.first<Row>(numberedPlaceholders(statement.sql), statement.params);
  }

  private all(statement: Statement): Promise<Row[]> {
    return this.session.rows<Row>(numberedPlaceholders(statement.sql), statement.params);
  }

  /** Runs a statement; how many rows it changed. */
  private run(statement: Statement): Promise<number> {
    return this.session.run(numberedPlaceholders(statement.sql), statement.params);
  }

  /** A table of the store (domain or bookkeeping), inside the store's schema; the shared statements name theirs with it too. */
  private readonly table: TableName = (name) => `${this.s}.${quoteIdentifier(name)}`;

  private selectList(entity: EntityLayout): string {
    return recordSelectList(entity, selectColumn);
  }

  private toRecord(entity: EntityLayout, row: Row): StoredRecord {
    return toStoredRecord(entity, row, decodeValue);
  }

  async getRecord(entity: EntityLayout, id: string): Promise<StoredRecord | undefined> {
    const row = await this.session.first<Row>(`SELECT ${this.selectList(entity)} FROM ${this.table(entity.name)} AS r WHERE r."id" = $1 AND r."owner_id" = $2`, [id, this.principalId]);
    return row && this.toRecord(entity, row);
  }

  /**
   * A page of records in id order. Each filter and the branch scope is a
   * range of record ids an index yields in id order (alias "d"): a member's
   * rows, the branch's membership rows, or the entity's own rows through an
   * equality's (owner_id, key, id) index. With one equality alone the planner
   * walks its index; otherwise one range drives the page (with several, the
   * smallest: see rangeSizes) and each of its rows looks its record up by
   * primary key in a LATERAL subquery that the planner cannot flatten (LIMIT
   * 1; ids are unique), so the walk stays in id order and stops at the limit
   * instead of hashing or scanning the entity. The other ranges are checked
   * per record.
   */
  async queryRecords(entity: EntityLayout, query: RecordQuery): Promise<StoredRecord[]> {
    const types = new Map(entity.columns.map((column) => [column.name, column.type]));
    const table = this.table(entity.name);
    const ranges: IdRange[] = [];
    for (const filter of query.filters) {
      if (filter.kind !== 'member') continue;
      ranges.push({
        from: `${this.s}."__aipcs_list_member"`,
        id: 'd."record_id"',
        where: (next) => `d."principal_id" = $1 AND d."entity_name" = ${next(entity.name)} AND d."field_name" = ${next(filter.field)} AND d."member" = ${next(filter.value)}`,
      });
    }
    const branch = query.branch;
    if (branch) {
      ranges.push({
        from: `${this.s}."__aipcs_record_branch"`,
        id: 'd."record_id"',
        where: (next) => `d."principal_id" = $1 AND d."branch_id" = ${next(branch.branchId)} AND d."role" = ${next(branch.role)} AND d."entity_name" = ${next(entity.name)}`,
      });
    }
    for (const filter of query.filters) {
      if (filter.kind !== 'equals') continue;
      const type = types.get(filter.field);
      const encoded = encodeValue(type ?? 'text', filter.value);
      ranges.push({ from: table, id: 'd."id"', where: (next) => `d."owner_id" = $1 AND ${equalityCondition('d', filter.field, type, next(encoded))}`, equality: { field: filter.field, type, encoded } });
    }
    const sizes = ranges.length < 2 ? [] : await this.rangeSizes(ranges, query.afterId);
    const driverIndex = sizes.indexOf(Math.min(...sizes));
    const driver = ranges.length === 1 && ranges[0]?.equality !== undefined ? undefined : ranges[Math.max(0, driverIndex)];

    const params: unknown[] = [this.principalId];
    const next = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    const conditions = ['r."owner_id" = $1'];
    for (const range of ranges) {
      if (range === driver) continue;
      if (range.equality) conditions.push(equalityCondition('r', range.equality.field, range.equality.type, next(range.equality.encoded)));
      else conditions.push(`EXISTS (SELECT 1 FROM ${range.from} AS d WHERE ${range.where(next)} AND ${range.id} = r."id")`);
    }
    const select = this.selectList(entity);
    let sql: string;
    if (driver === undefined) {
      if (query.afterId !== null) conditions.push(`r."id" > ${next(query.afterId)}`);
      sql = `SELECT ${select} FROM ${table} AS r WHERE ${conditions.join(' AND ')} ORDER BY r."id" LIMIT ${next(query.limit)}`;
    } else {
      const inner = [`r."id" = ${driver.id}`, ...conditions];
      const outer = [driver.where(next), ...(query.afterId === null ? [] : [`${driver.id} > ${next(query.afterId)}`])];
      sql =
        `SELECT r.* FROM ${driver.from} AS d CROSS JOIN LATERAL (SELECT ${select} FROM ${table} AS r WHERE ${inner.join(' AND ')} LIMIT 1) AS r ` +
        `WHERE ${outer.join(' AND ')} ORDER BY ${driver.id} LIMIT ${next(query.limit)}`;
    }
    // Array rows (values in select-list order): export and re-observation read whole tables through here.
    return (await this.session.arrayRows(sql, params)).map((values) => toStoredRecordFromValues(entity, values, decodeValue));
  }

  /**
   * How many ids past the cursor each range holds, counted up to
   * RANGE_PROBE_CAP, in one statement. A common first filter would otherwise
   * drive the page and walk most of the entity to find the few rows a rare
   * second filter allows.
   */
  private async rangeSizes(ranges: readonly IdRange[], afterId: string | null): Promise<number[]> {
    const params: unknown[] = [this.principalId];
    const next = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    const after = afterId === null ? null : next(afterId);
    const counts = ranges.map(
      (range, i) => `(SELECT count(*) FROM (SELECT 1 FROM ${range.from} AS d WHERE ${range.where(next)}${after === null ? '' : ` AND ${range.id} > ${after}`} LIMIT ${RANGE_PROBE_CAP}) AS s) AS "c${i}"`,
    );
    const row = await this.session.first<Record<string, bigint>>(`SELECT ${counts.join(', ')}`, params);
    return ranges.map((_, i) => Number(row?.[`c${i}`] ?? 0n));
  }

  async history(entityName: string, recordId: string | null, afterSequence: bigint | null, limit: number, textBudget?: number): Promise<HistoryRows> {
    const params: unknown[] = [this.principalId, entityName];
    const next = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    let where = `"principal_id" = $1 AND "entity_name" = $2`;
    let order = '"event_sequence"';
    if (recordId !== null) {
      // One record's events take ascending sequences in version order (writes,
      // and import staging keeps time per record), so its pages walk the
      // version index from the cursor's version. Ordered by sequence, the
      // planner walked the whole history by its primary key when the record
      // held most of the events, past every event before its first.
      const record = next(recordId);
      where += ` AND "record_id" = ${record}`;
      order = '"record_version"';
      if (afterSequence !== null) {
        // A cursor's sequence is this record's event; any other (cursors are
        // not secret) bounds no version and reads nothing of another record.
        const after = next(afterSequence);
        // The owner is checked outside the WHERE, which then leaves the planner only the primary key to find it.
        const version = `SELECT CASE WHEN "principal_id" = $1 AND "entity_name" = $2 AND "record_id" = ${record} THEN "record_version" END FROM ${this.s}."__aipcs_record_history" WHERE "event_sequence" = ${after}`;
        where += ` AND "record_version" > COALESCE((${version}), 0) AND "event_sequence" > ${after}`;
      }
    } else if (afterSequence !== null) {
      where += ` AND "event_sequence" > ${next(afterSequence)}`;
    }
    const rows = await this.session.arrayRows(
      `SELECT "entity_name", "record_id", "record_version", "event_kind", "before_json", "after_json", "occurred_at", "event_sequence"
         FROM ${this.s}."__aipcs_record_history" WHERE ${where} ORDER BY ${order} LIMIT ${next(limit)}`,
      params,
    );
    return historyRowsWithinBudget(rows, textBudget);
  }

  async hasDuplicates(entityName: string, columns: readonly string[]): Promise<boolean> {
    const list = columns.map(quoteColumn).join(', ');
    const notNull = columns.map((column) => `${quoteColumn(column)} IS NOT NULL`).join(' AND ');
    return (await this.session.first(`SELECT 1 FROM ${this.table(entityName)} WHERE ${notNull} GROUP BY ${list} HAVING count(*) > 1 LIMIT 1`)) !== undefined;
  }

  // -------------------------------------------------------------------------
  // Branches and memberships

  async getBranch(id: string): Promise<StoredBranch | undefined> {
    const row = await this.one(statements.branchById(this.table, this.principalId, id));
    return row && toBranch(row);
  }

  async branchReachesByParents(start: string, ancestor: string): Promise<boolean> {
    // UNION (not UNION ALL) ends the walk on a cycle, which the rules never let in.
    // Each level is one lookup by the primary key (LATERAL … LIMIT 1, the
    // owner checked outside it so no principal-led index can serve it): as a
    // join, a table without statistics yet (branches made since the last
    // autovacuum) was scanned and hashed per level, 8.8 s for a chain of 8000.
    const sql = `WITH RECURSIVE chain(id) AS (SELECT $1::text COLLATE "C" UNION SELECT p."parent_branch_id" FROM chain CROSS JOIN LATERAL (
        SELECT b."parent_branch_id", b."principal_id" FROM ${this.s}."__aipcs_memory_branch" b WHERE b."id" = chain.id LIMIT 1) AS p
      WHERE p."principal_id" = $2 AND p."parent_branch_id" IS NOT NULL) SELECT 1 FROM chain WHERE id = $3 LIMIT 1`;
    return (await this.session.first(sql, [start, this.principalId, ancestor])) !== undefined;
  }

  async findBranchBySlug(slug: string): Promise<StoredBranch | undefined> {
    const row = await this.one(statements.branchBySlug(this.table, this.principalId, slug));
    return row && toBranch(row);
  }

  async listBranches(query: BranchQuery): Promise<StoredBranch[]> {
    return (await this.all(statements.branchPage(this.table, this.principalId, query))).map(toBranch);
  }

  async getMembership(entityName: string, recordId: string, branchId: string): Promise<BranchRole | undefined> {
    return (await this.one(statements.membershipRole(this.table, this.principalId, entityName, recordId, branchId)))?.['role'] as BranchRole | undefined;
  }

  async getPrimaryBranch(entityName: string, recordId: string): Promise<string | undefined> {
    return (await this.one(statements.primaryBranchOf(this.table, this.principalId, entityName, recordId)))?.['branch_id'] as string | undefined;
  }

  async insertBranch(branch: StoredBranch): Promise<void> {
    await this.run(statements.insertBranch(this.table, this.principalId, branch));
  }

  async updateBranch(branch: StoredBranch): Promise<void> {
    if ((await this.run(statements.updateBranch(this.table, this.principalId, branch))) !== 1) throw new StorageFailure('unavailable');
  }

  async putMembership(entityName: string, recordId: string, branchId: string, role: BranchRole, assignedAt: bigint): Promise<void> {
    await this.run(statements.putMembership(this.table, this.principalId, entityName, recordId, branchId, role, assignedAt));
  }

  async removeMembership(entityName: string, recordId: string, branchId: string): Promise<void> {
    await this.run(statements.removeMembership(this.table, this.principalId, entityName, recordId, branchId));
  }

  // -------------------------------------------------------------------------
  // Discovery and maintenance reads

  async countRecords(entity: EntityLayout): Promise<bigint> {
    const row = await this.session.first<{ n: bigint }>(`SELECT count(*) AS n FROM ${this.table(entity.name)} WHERE "owner_id" = $1`, [this.principalId]);
    return row?.n ?? 0n;
  }

  async countWithoutPrimary(entity: EntityLayout): Promise<bigint> {
    const row = await this.session.first<{ n: bigint }>(
      `SELECT count(*) AS n FROM ${this.table(entity.name)} AS r WHERE r."owner_id" = $1 AND NOT EXISTS (
         SELECT 1 FROM ${this.s}."__aipcs_record_branch" AS p WHERE p."principal_id" = $1 AND p."entity_name" = $2 AND p."record_id" = r."id" AND p."role" = 'primary')`,
      [this.principalId, entity.name],
    );
    return row?.n ?? 0n;
  }

  async facetValues(entity: EntityLayout, field: string, shape: 'scalar' | 'list_members', limit: number): Promise<FacetCount[]> {
    const type = entity.columns.find((column) => column.name === field)?.type;
    const column = `r.${quoteColumn(field)}`;
    if (shape === 'list_members') {
      if (type !== 'string_list') throw new StorageFailure('unavailable');
      // Members of one list are distinct, so a member's row count is its record count.
      const rows = await this.session.rows<{ v: string; n: bigint }>(
        `SELECT m.v, count(*) AS n FROM ${this.table(entity.name)} AS r CROSS JOIN LATERAL jsonb_array_elements_text(${column}) AS m(v)
          WHERE r."owner_id" = $1 AND jsonb_typeof(${column}) = 'array'
          GROUP BY m.v ORDER BY n DESC, m.v COLLATE "C" ASC LIMIT $2`,
        [this.principalId, limit],
      );
      return rows.map((row) => ({ value: row.v, count: row.n }));
    }
    if (type === undefined || type === 'string_list') throw new StorageFailure('unavailable');
    // Column order is the contract's: bytewise text ("C"), numeric numbers, false before true.
    const rows = await this.session.rows<{ v: unknown; n: bigint }>(
      `SELECT ${column} AS v, count(*) AS n FROM ${this.table(entity.name)} AS r WHERE r."owner_id" = $1 AND ${column} IS NOT NULL
        GROUP BY ${column} ORDER BY n DESC, ${column} ASC LIMIT $2`,
      [this.principalId, limit],
    );
    return rows.map((row) => ({ value: decodeValue(type, row.v) as FacetCount['value'], count: row.n }));
  }

  async branchCards(limit: number): Promise<BranchCard[]> {
    const branches = (await this.all(statements.recentBranches(this.table, this.principalId, limit))).map(toBranch);
    if (branches.length === 0) return [];
    const counts = await this.session.rows<{ branch_id: string; role: BranchRole; n: bigint }>(
      `SELECT "branch_id", "role", count(*) AS n FROM ${this.s}."__aipcs_record_branch" WHERE "principal_id" = $1 AND "branch_id" = ANY ($2::text[]) GROUP BY "branch_id", "role"`,
      [this.principalId, branches.map((branch) => branch.id)],
    );
    return toBranchCards(branches, counts);
  }

  /**
   * A keyset batch in id order. In a branch scope the branch's membership
   * rows drive the batch: its primary and its related rows, each a range of
   * the scope index in record-id order, merged (MergeAppend) and cut at the
   * limit, so a small branch never walks the whole entity.
   */
  async scanRecords(entity: EntityLayout, scan: RecordScan): Promise<ScannedRecord[]> {
    const params: unknown[] = [this.principalId, entity.name];
    const table = this.table(entity.name);
    // A scalar subquery probed per record: as EXISTS, the planner may hash every primary membership of the entity for each batch.
    const select = `${this.selectList(entity)},
        COALESCE((SELECT true FROM ${this.s}."__aipcs_record_branch" AS p WHERE p."principal_id" = $1 AND p."entity_name" = $2 AND p."record_id" = r."id" AND p."role" = 'primary' LIMIT 1), false) AS "__has_primary"`;
    let sql: string;
    if (scan.memberOf !== null) {
      const members = this.branchMembers(scan.memberOf, scan.afterId, scan.throughId ?? null, params);
      if (scan.anyOf === undefined) {
        params.push(scan.limit);
        // Each record looks itself up by primary key in a LATERAL subquery the planner cannot flatten (LIMIT 1; ids are unique).
        sql = `SELECT r.* FROM (${members} ORDER BY "record_id" LIMIT $${params.length}) AS d
          CROSS JOIN LATERAL (SELECT ${select} FROM ${table} AS r WHERE r."id" = d."record_id" AND r."owner_id" = $1 LIMIT 1) AS r ORDER BY d."record_id"`;
      } else {
        // Narrowed, the limit counts the records kept; throughId bounds the members walked.
        const narrowed = this.anyOf(entity, scan.anyOf, params);
        params.push(scan.limit);
        sql = `SELECT r.* FROM (${members}) AS d
          CROSS JOIN LATERAL (SELECT ${select} FROM ${table} AS r WHERE r."id" = d."record_id" AND r."owner_id" = $1 AND (${narrowed}) LIMIT 1) AS r ORDER BY d."record_id" LIMIT $${params.length}`;
      }
    } else {
      const where = ['r."owner_id" = $1'];
      if (scan.afterId !== null) {
        params.push(scan.afterId);
        where.push(`r."id" > $${params.length}`);
      }
      if (scan.anyOf !== undefined) where.push(`(${this.anyOf(entity, scan.anyOf, params)})`);
      if (scan.throughId !== undefined) {
        params.push(scan.throughId);
        where.push(`r."id" <= $${params.length}`);
      }
      params.push(scan.limit);
      sql = `SELECT ${select} FROM ${table} AS r WHERE ${where.join(' AND ')} ORDER BY r."id" LIMIT $${params.length}`;
    }
    return (await this.session.rows<Row>(sql, params)).map((row) => ({ ...this.toRecord(entity, row), hasPrimary: row['__has_primary'] === true }));
  }

  async idAfter(entity: EntityLayout, afterId: string | null, count: number, memberOf: string | null = null): Promise<string | null> {
    if (memberOf !== null) {
      const params: unknown[] = [this.principalId, entity.name];
      const members = this.branchMembers(memberOf, afterId, null, params);
      params.push(count - 1);
      const rows = await this.session.rows<{ record_id: string }>(`${members} ORDER BY "record_id" LIMIT 1 OFFSET $${params.length}`, params);
      return rows[0]?.record_id ?? null;
    }
    const params: unknown[] = [this.principalId, count - 1];
    if (afterId !== null) params.push(afterId);
    const sql = `SELECT r."id" FROM ${this.table(entity.name)} AS r WHERE r."owner_id" = $1${afterId === null ? '' : ' AND r."id" > $3'} ORDER BY r."id" LIMIT 1 OFFSET $2`;
    const rows = await this.session.rows<{ id: string }>(sql, params);
    return rows[0]?.id ?? null;
  }

  /**
   * The record ids of a branch's members in (afterId, throughId], primary and
   * related each a range of the scope index (a compound for the caller to
   * order and cut); $1 and $2 are the principal and the entity, other
   * parameters are appended to `params`.
   */
  private branchMembers(branchId: string, afterId: string | null, throughId: string | null, params: unknown[]): string {
    params.push(branchId);
    const branch = `$${params.length}`;
    let range = '';
    if (afterId !== null) {
      params.push(afterId);
      range += ` AND m."record_id" > $${params.length}`;
    }
    if (throughId !== null) {
      params.push(throughId);
      range += ` AND m."record_id" <= $${params.length}`;
    }
    const role = (name: BranchRole): string =>
      `(SELECT m."record_id" FROM ${this.s}."__aipcs_record_branch" AS m WHERE m."principal_id" = $1 AND m."branch_id" = ${branch} AND m."role" = '${name}' AND m."entity_name" = $2${range} ORDER BY m."record_id")`;
    return `${role('primary')} UNION ALL ${role('related')}`;
  }

  /** RecordScan.anyOf on the record "r"; $1 and $2 are the principal and the entity, other parameters are appended to `params`. */
  private anyOf(entity: EntityLayout, conditions: readonly ScanCondition[], params: unknown[]): string {
    const column = (field: string) => {
      if (!entity.columns.some((candidate) => candidate.name === field)) throw new StorageFailure('unavailable');
      return `r.${quoteColumn(field)}`;
    };
    const parameter = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    const parts = conditions.map((condition): string => {
      switch (condition.kind) {
        case 'updated_at_most': {
          const timestamp = comparableTimestamp27(condition.micros);
          return timestamp === null ? 'true' : `r."updated_at" <= ${parameter(timestamp)}`;
        }
        case 'no_primary':
          return `NOT EXISTS (SELECT 1 FROM ${this.s}."__aipcs_record_branch" AS q WHERE q."principal_id" = $1 AND q."entity_name" = $2 AND q."record_id" = r."id" AND q."role" = 'primary')`;
        case 'not_null':
          return `${column(condition.field)} IS NOT NULL`;
        case 'text_equals':
          return `${column(condition.field)} = ${parameter(condition.value)}`;
        case 'at_most':
          return `${column(condition.field)}::double precision <= ${parameter(condition.value)}::double precision`;
        case 'longer_than':
          return `char_length(${column(condition.field)}) > ${parameter(condition.characters)}::integer`;
        case 'all_blank':
          return `(${condition.fields
            .map(({ name, type }) => {
              const value = column(name);
              if (type === 'text') return `(${value} IS NULL OR btrim(${value}, ' ') = '')`;
              if (type === 'string_list') return `(${value} IS NULL OR ${value} = '[]'::jsonb)`;
              return `${value} IS NULL`;
            })
            .join(' AND ')})`;
      }
    });
    return parts.length === 0 ? 'false' : parts.join(' OR ');
  }

  /**
   * One pass over the scope: each present value's group size by a window
   * over the field, then the first records (by id) of groups larger than one.
   */
  async duplicateValues(entity: EntityLayout, field: string, memberOf: string | null, limit: number): Promise<DuplicateValue[]> {
    const column = `r.${quoteColumn(field)}`;
    const params: unknown[] = [this.principalId, limit];
    let scope = '';
    if (memberOf !== null) {
      params.push(entity.name, memberOf);
      scope = ` AND r."id" IN (SELECT s."record_id" FROM ${this.s}."__aipcs_record_branch" AS s WHERE s."principal_id" = $1 AND s."branch_id" = $4 AND s."entity_name" = $3)`;
    }
    // Present: not null, and (for strings) not empty or only U+0020 spaces.
    const rows = await this.session.rows<{ id: string; n: bigint }>(
      `SELECT w."id", w."n" FROM (SELECT r."id", count(*) OVER (PARTITION BY ${column}) AS "n" FROM ${this.table(entity.name)} AS r
          WHERE r."owner_id" = $1 AND ${column} IS NOT NULL AND btrim(${column}, ' ') <> ''${scope}) AS w
        WHERE w."n" > 1 ORDER BY w."id" LIMIT $2`,
      params,
    );
    return rows.map((row) => ({ id: row.id, count: row.n }));
  }

  /**
   * Also refuses a store its meta row does not bind to this service and
   * revision (D42): every data mutation runs this first, under the store lock
   * (data-unit.ts), so the meta is read with the fence, in one statement.
   */
  async fenceIsOpen(generation?: bigint): Promise<boolean> {
    // FOR SHARE as well as the store lock: a fence transition that locks the row is waited for.
    const fenceRow = `${statements.writeFenceRow(this.table).sql} FOR SHARE`;
    const row = await this.session.first<StoreMetaRow & { generation: bigint | null; state: WriteFence['state'] | null }>(
      storeMetaSelect(this.schema, ', f."generation", f."state"', ` LEFT JOIN LATERAL (${fenceRow}) AS f ON true`),
    );
    assertStoreBinding(row, this.schema);
    // The join gives nulls where the store has no fence row yet.
    const fence = toWriteFence(row?.generation == null ? undefined : { generation: row.generation, state: row.state });
    return fence.state === 'open' && (generation === undefined || fence.generation === generation);
  }

  // -------------------------------------------------------------------------
  // Operator administration: whole-store reads in canonical order, staging

  async writeFence(): Promise<WriteFence> {
    return toWriteFence(await this.one(statements.writeFenceRow(this.table)));
  }

  async setFence(fence: WriteFence): Promise<void> {
    await putFenceRow(this.session, this.schema, fence);
  }

  async historyPage(after: HistoryPosition | null, limit: number): Promise<HistoryEvent[]> {
    // Text columns are collation "C": byte order, as the artefact requires.
    const params: unknown[] = [this.principalId];
    let position = '';
    if (after !== null) {
      params.push(after.entityName, after.recordId, after.recordVersion);
      position = ' AND ("entity_name", "record_id", "record_version") > ($2, $3, $4)';
    }
    params.push(limit);
    // Array rows: the whole history passes through here.
    const rows = await this.session.arrayRows(
      `SELECT "entity_name", "record_id", "record_version", "event_kind", "before_json", "after_json", "occurred_at" FROM ${this.s}."__aipcs_record_history"
        WHERE "principal_id" = $1${position} ORDER BY "entity_name", "record_id", "record_version" LIMIT $${params.length}`,
      params,
    );
    return rows.map(historyEventFromArrayRow);
  }

  async membershipPage(after: MembershipRow | null, limit: number): Promise<MembershipRow[]> {
    return (await this.all(statements.membershipPage(this.table, this.principalId, after, limit))).map(toMembershipRow);
  }

  async getReplay(idempotencyKey: string): Promise<ReplayRow | undefined> {
    const row = await this.one(statements.replayByKey(this.table, this.principalId, idempotencyKey));
    return row && toReplay(idempotencyKey, row);
  }

  async putReplay(row: ReplayRow): Promise<void> {
    await this.run(statements.insertReplay(this.table, this.principalId, row));
  }

  async recordExists(entityName: string, id: string): Promise<boolean> {
    return (await this.one(statements.recordById(this.table, this.principalId, entityName, id))) !== undefined;
  }

  async isReferenced(target: { readonly entity: string; readonly id: string }, sources: readonly { readonly entity: string; readonly column: string }[]): Promise<boolean> {
    for (const source of sources) {
      const self = source.entity === target.entity ? ' AND "id" <> $1' : '';
      if ((await this.session.first(`SELECT 1 FROM ${this.table(source.entity)} WHERE ${quoteColumn(source.column)} = $1${self} LIMIT 1`, [target.id])) !== undefined) return true;
    }
    return false;
  }

  private columnValue(column: ColumnLayout, record: StoredRecord): unknown {
    return recordColumnValue(column, record, this.principalId, encodeValue);
  }

  /** Replaces the record's rows in "__aipcs_list_member" with the members of its string lists. */
  private async writeMembers(entity: EntityLayout, record: StoredRecord, replace: boolean): Promise<void> {
    if (replace) await this.deleteMembers(entity.name, record.id);
    const fields: string[] = [];
    const members: string[] = [];
    for (const field of entity.listFields) {
      const value = record.fields[field];
      if (!Array.isArray(value)) continue;
      for (const member of value as readonly string[]) {
        fields.push(field);
        members.push(member);
      }
    }
    if (members.length === 0) return;
    // Members of one list are distinct, so the rows never collide.
    await this.session.run(
      `INSERT INTO ${this.s}."__aipcs_list_member" ("principal_id", "entity_name", "field_name", "member", "record_id")
       SELECT $1, $2, u.f, u.m, $3 FROM unnest($4::text[], $5::text[]) AS u(f, m)`,
      [this.principalId, entity.name, record.id, fields, members],
    );
  }

  private async deleteMembers(entityName: string, recordId: string): Promise<void> {
    await this.session.run(`DELETE FROM ${this.s}."__aipcs_list_member" WHERE "principal_id" = $1 AND "entity_name" = $2 AND "record_id" = $3`, [this.principalId, entityName, recordId]);
  }

  async insertRecord(entity: EntityLayout, record: StoredRecord): Promise<void> {
    const columns = entity.columns.map((column) => quoteColumn(column.name)).join(', ');
    const values = entity.columns.map((column) => this.columnValue(column, record));
    await this.session.run(`INSERT INTO ${this.table(entity.name)} (${columns}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`, values);
    if (entity.listFields.length > 0) await this.writeMembers(entity, record, false);
  }

  async updateRecord(entity: EntityLayout, record: StoredRecord): Promise<void> {
    const columns = entity.columns.filter((column) => !['id', 'owner_id', 'created_at', 'created_via'].includes(column.name));
    const values = columns.map((column) => this.columnValue(column, record));
    const assignments = columns.map((column, i) => `${quoteColumn(column.name)} = $${i + 1}`).join(', ');
    const changed = await this.session.run(`UPDATE ${this.table(entity.name)} SET ${assignments} WHERE "id" = $${values.length + 1} AND "owner_id" = $${values.length + 2}`, [
      ...values,
      record.id,
      this.principalId,
    ]);
    if (changed !== 1) throw new StorageFailure('unavailable');
    if (entity.listFields.length > 0) await this.writeMembers(entity, record, true);
  }

  async deleteRecord(entity: EntityLayout, id: string): Promise<void> {
    await this.run(statements.removeRecordMemberships(this.table, this.principalId, entity.name, id));
    if (entity.listFields.length > 0) await this.deleteMembers(entity.name, id);
    await this.session.run(`DELETE FROM ${this.table(entity.name)} WHERE "id" = $1 AND "owner_id" = $2`, [id, this.principalId]);
  }

  async appendHistory(event: HistoryEvent): Promise<void> {
    await this.run(statements.appendHistoryEvent(this.table, this.principalId, event));
  }
}

export class PostgresServiceData implements OperatorDataPort {
  // Each page or batch is a round trip; large ones keep export and import from waiting on the network.
  readonly transferBatching: TransferBatching = { readPage: 1000, stageBatch: 500 };

  constructor(
    private readonly connection: PostgresConnection,
    private readonly stores: PostgresServiceStores,
  ) {}

  /** The meta row is read with the BEGIN (one message), in the unit's snapshot: a store bound elsewhere is refused (D42). */
  async read<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataReader) => Promise<T>): Promise<T> {
    const schema = schemaOf(locator);
    return this.connection.transaction(
      'read',
      (session, opened) => {
        assertStoreBinding(opened[0] as StoreMetaRow | undefined, schema);
        return work(new PostgresDataTx(session, schema, principalId));
      },
      storeMetaSelect(schema),
    );
  }

  async scan<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataReader) => Promise<T>): Promise<T> {
    const schema = schemaOf(locator);
    return this.connection.transaction(
      'read',
      (session, opened) => {
        assertStoreBinding(opened[0] as StoreMetaRow | undefined, schema);
        return work(new PostgresDataTx(session, schema, principalId));
      },
      // Without statistics (a store written moments ago) the planner takes a
      // keyset page for a few rows and sorts the rest of the table for it;
      // every page has an index in its order, so explicit sorts are ruled out.
      `SET LOCAL enable_sort = off; ${storeMetaSelect(schema)}`,
    );
  }

  /** The store's binding (D42) is checked by fenceIsOpen, which every data mutation runs first under the lock. */
  async write<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataWriter) => Promise<T>): Promise<T> {
    const schema = schemaOf(locator);
    return this.connection.transaction('write', async (session) => {
      await lockStore(session, schema);
      return work(new PostgresDataTx(session, schema, principalId));
    });
  }

  /**
   * Creates the store and fills it in one unit. Rows arrive in the
   * artefact's order, not in reference order, so the foreign keys are added
   * after `work` (which checks every row then); unique indexes exist from
   * the start, as on SQLite.
   */
  async stage<T>(locator: StorageLocator, principalId: string, layout: StoreLayout, work: (tx: StagingWriter) => Promise<T>): Promise<T> {
    const schema = schemaOf(locator);
    const expected = await this.stores.expectedSignature(layout);
    return this.connection.transaction('write', async (session) => {
      await lockStore(session, schema);
      const state = await compareLayout(session, schema, expected);
      if (state !== 'missing') throw new StorageFailure('incompatible');
      for (const ddl of storeTablesDdl(schema, layout)) await session.run(ddl);
      await insertStoreMeta(session, schema);
      const result = await work(new PostgresStagingTx(session, schema, principalId));
      for (const ddl of storeKeysDdl(schema, layout)) await session.run(ddl);
      if ((await compareLayout(session, schema, expected)) !== 'matches') throw new StorageFailure('incompatible');
      // A freshly imported store has no planner statistics until autovacuum
      // reaches it; without them keyset pages fall back to scan-and-sort, and
      // branch-scope pages and member deletes walk whole ranges.
      const tables = [...layout.entities.map((entity) => quoteIdentifier(entity.name)), '"__aipcs_list_member"', '"__aipcs_memory_branch"', '"__aipcs_record_branch"', '"__aipcs_record_history"'];
      await session.run(`ANALYZE ${tables.map((table) => `${quoteIdentifier(schema)}.${table}`).join(', ')}`);
      return result;
    });
  }
}
