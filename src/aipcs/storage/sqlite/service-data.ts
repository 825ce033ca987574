// Record data on SQLite: the ServiceDataPort over the per-service stores,
// values encoded per column type and every query scoped to the principal and
// ordered by id; operators also read whole stores in canonical order (export)
// and stage a new store with its rows in one unit (import).

import {
  StorageFailure,
  type BranchCard,
  type BranchQuery,
  type BranchRole,
  type ColumnLayout,
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
import { prepared, preparedRaw, type SqliteDatabase } from './connection.js';
import { comparableTimestamp27, historyEventFromArrayRow, historyRowsWithinBudget, recordColumnValue, recordSelectList, toStoredRecord, toStoredRecordFromValues, type Row } from '../shared/record-codec.js';
import { SqliteStagingTx } from './staging.js';
import * as statements from '../shared/statements.js';
import { quoteIdentifier, toBranch, toBranchCards, toWriteFence, toMembershipRow, toReplay, type Statement, type TableName } from '../shared/statements.js';
import { assertStoreBinding, BOOKKEEPING_DDL, compareLayout, layoutDdl, SERVICE_STORE_ADAPTER_ID, SERVICE_STORE_REVISION, type SqliteServiceStores } from './service-store.js';

/** Ids a probe counts at most when choosing which range drives a page. */
const RANGE_PROBE_CAP = 1000;

/** An index range of record ids in id order (alias "d"), as queryRecords drives or checks it. */
interface IdRange {
  readonly from: string;
  /** Its condition on "d", with `params`. */
  readonly where: string;
  readonly params: readonly unknown[];
  /** The range's record id column. */
  readonly id: string;
  /** The same condition checked for the record "r" (same `params`). */
  readonly check: string;
}

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

// The INSERT text of an entity, built once per layout object (layouts are
// cached per manifest), so a row costs no string building.
const insertSqlByLayout = new WeakMap<EntityLayout, string>();

function insertSql(entity: EntityLayout): string {
  let sql = insertSqlByLayout.get(entity);
  if (sql === undefined) {
    const columns = entity.columns.map((column) => quoteIdentifier(column.name));
    sql = `INSERT INTO ${quoteIdentifier(entity.name)} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`;
    insertSqlByLayout.set(entity, sql);
  }
  return sql;
}

/**
 * The owner filter of pages and scans, never an index's lead: a store holds
 * one principal's rows (see the aggregates below), so an index a manifest
 * declares on `owner_id` matches every row, and SQLite, which has no column
 * statistics, would walk all of it and sort instead of stopping at a page in
 * id order (a first page of 25 at 36 000 records took 6 ms; under 1 ms now). The
 * unary `+` leaves the check to each row.
 */
const OWNER_CHECK = '+r."owner_id" = ?';

export class SqliteDataTx implements OperatorDataWriter {
  /** The last event historyPage returned, with its sequence: where the next page resumes. */
  private historyResume: { readonly entityName: string; readonly recordId: string; readonly recordVersion: bigint; readonly sequence: bigint } | undefined;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly principalId: string,
  ) {}

  /** A table of the store as the shared statements name it: the store's own, unqualified. */
  private readonly table: TableName = quoteIdentifier;

  private one(statement: Statement): Row | undefined {
    return prepared(this.db, statement.sql).get(...statement.params) as Row | undefined;
  }

  private all(statement: Statement): Row[] {
    return prepared(this.db, statement.sql).all(...statement.params) as Row[];
  }

  /** Runs a statement; how many rows it changed. */
  private run(statement: Statement): number {
    return prepared(this.db, statement.sql).run(...statement.params).changes;
  }

  private selectList(entity: EntityLayout): string {
    return recordSelectList(entity, (name) => `r.${quoteIdentifier(name)}`);
  }

  private toRecord(entity: EntityLayout, row: Row): StoredRecord {
    return toStoredRecord(entity, row, decodeValue);
  }

  async getRecord(entity: EntityLayout, id: string): Promise<StoredRecord | undefined> {
    const row = prepared(this.db, `SELECT ${this.selectList(entity)} FROM ${quoteIdentifier(entity.name)} AS r WHERE r."id" = ? AND r."owner_id" = ?`).get(id, this.principalId) as Row | undefined;
    return row && this.toRecord(entity, row);
  }

  /**
   * One keyset page in id order. One ordered source drives the scan, so that
   * it walks an index in record-id order and stops at LIMIT: a membership
   * filter's member rows, a branch scope's membership rows, or the entity
   * itself through one equality's `(field, id)` index; with several, the
   * smallest (see smallestRange). CROSS JOIN fixes that order for SQLite's
   * planner.
   */
  async queryRecords(entity: EntityLayout, query: RecordQuery): Promise<StoredRecord[]> {
    const types = new Map(entity.columns.map((column) => [column.name, column.type]));
    const table = quoteIdentifier(entity.name);
    // Each filter and the branch scope is a range of record ids an index
    // yields in id order (alias "d"); one of them drives the page, the others
    // are checked per row. Default order: members, branch scope, equalities.
    const ranges: IdRange[] = [];
    for (const filter of query.filters) {
      if (filter.kind !== 'member') continue;
      ranges.push({
        from: '__aipcs_list_member',
        where: 'd.entity_name = ? AND d.field_name = ? AND d.member = ?',
        params: [entity.name, filter.field, filter.value],
        id: 'd.record_id',
        check: `EXISTS (SELECT 1 FROM __aipcs_list_member AS d WHERE d.entity_name = ? AND d.field_name = ? AND d.member = ? AND d.record_id = r."id")`,
      });
    }
    if (query.branch) {
      const where = 'd.principal_id = ? AND d.branch_id = ? AND d.role = ? AND d.entity_name = ?';
      ranges.push({
        from: '__aipcs_record_branch',
        where,
        params: [this.principalId, query.branch.branchId, query.branch.role, entity.name],
        id: 'd.record_id',
        check: `EXISTS (SELECT 1 FROM __aipcs_record_branch AS d WHERE ${where} AND d.record_id = r."id")`,
      });
    }
    for (const filter of query.filters) {
      if (filter.kind !== 'equals') continue;
      const column = quoteIdentifier(filter.field);
      ranges.push({ from: table, where: `d.${column} = ?`, params: [encodeValue(types.get(filter.field) ?? 'text', filter.value)], id: 'd."id"', check: `r.${column} = ?` });
    }
    const driverIndex = this.smallestRange(ranges, query.afterId);
    const driver = ranges[driverIndex];
    const where: string[] = [];
    const params: unknown[] = [];
    let from = `${table} AS r`;
    let order = 'r."id"';
    // CROSS JOIN keeps the driving range the outer loop. An equality drives
    // from the entity table itself, which joins itself by id only when other
    // equalities are checked too (the planner could walk their index instead).
    const joined = driver !== undefined && (driver.from !== table || ranges.some((range, i) => i !== driverIndex && range.from === table));
    if (driver && joined) {
      from = `${driver.from} AS d CROSS JOIN ${table} AS r ON r."id" = ${driver.id}`;
      order = driver.id;
      where.push(driver.where);
      params.push(...driver.params);
    }
    if (query.afterId !== null) {
      where.push(`${order} > ?`);
      params.push(query.afterId);
    }
    where.push(OWNER_CHECK);
    params.push(this.principalId);
    for (const [i, range] of ranges.entries()) {
      if (i === driverIndex && joined) continue;
      where.push(range.check);
      params.push(...range.params);
    }
    params.push(BigInt(query.limit));
    const sql = `SELECT ${this.selectList(entity)} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ?`;
    // Raw rows (arrays in select-list order): export and re-observation read whole tables through here.
    return (preparedRaw(this.db, sql).all(...params) as unknown[][]).map((values) => toStoredRecordFromValues(entity, values, decodeValue));
  }

  /**
   * Which range drives a page: with several, the one with the fewest ids past
   * the cursor, each counted up to RANGE_PROBE_CAP (ties keep the default
   * order). A common first filter would otherwise walk most of the entity to
   * find the few rows a rare second filter allows.
   */
  private smallestRange(ranges: readonly IdRange[], afterId: string | null): number {
    if (ranges.length < 2) return 0;
    let best = 0;
    let bestCount = RANGE_PROBE_CAP + 1;
    for (const [i, range] of ranges.entries()) {
      if (bestCount === 0) break;
      const after = afterId === null ? '' : ` AND ${range.id} > ?`;
      const sql = `SELECT count(*) AS n FROM (SELECT 1 FROM ${range.from} AS d WHERE ${range.where}${after} LIMIT ?)`;
      // Counting past the smallest range so far cannot make this one the smallest.
      const cap = Math.min(RANGE_PROBE_CAP, bestCount);
      const count = Number((prepared(this.db, sql).get(...range.params, ...(afterId === null ? [] : [afterId]), BigInt(cap)) as { n: bigint }).n);
      if (count < bestCount) {
        best = i;
        bestCount = count;
      }
    }
    return best;
  }

  async history(entityName: string, recordId: string | null, afterSequence: bigint | null, limit: number, textBudget?: number): Promise<HistoryRows> {
    const sql = `SELECT entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at, event_sequence
      FROM __aipcs_record_history WHERE principal_id = ? AND entity_name = ?${recordId === null ? '' : ' AND record_id = ?'}${afterSequence === null ? '' : ' AND event_sequence > ?'}
      ORDER BY event_sequence LIMIT ?`;
    const params: unknown[] = [this.principalId, entityName];
    if (recordId !== null) params.push(recordId);
    if (afterSequence !== null) params.push(afterSequence);
    params.push(BigInt(limit));
    // Stepped row by row: a page cut for size stops reading there.
    return historyRowsWithinBudget(preparedRaw(this.db, sql).iterate(...params) as Iterable<unknown[]>, textBudget);
  }

  async hasDuplicates(entityName: string, columns: readonly string[]): Promise<boolean> {
    const list = columns.map(quoteIdentifier).join(', ');
    const notNull = columns.map((column) => `${quoteIdentifier(column)} IS NOT NULL`).join(' AND ');
    return prepared(this.db, `SELECT 1 FROM ${quoteIdentifier(entityName)} WHERE ${notNull} GROUP BY ${list} HAVING count(*) > 1 LIMIT 1`).get() !== undefined;
  }

  // -------------------------------------------------------------------------
  // Branches and memberships

  async getBranch(id: string): Promise<StoredBranch | undefined> {
    const row = this.one(statements.branchById(this.table, this.principalId, id));
    return row && toBranch(row);
  }

  async branchReachesByParents(start: string, ancestor: string): Promise<boolean> {
    // UNION (not UNION ALL) ends the walk on a cycle, which the rules never let in.
    // `+b.principal_id` keeps the principal's indexes out of the step: SQLite
    // 3.53 otherwise scanned every branch of the principal per level (quadratic;
    // 8000 levels took 12 s, blocking the server) instead of one lookup by id.
    const sql = `WITH RECURSIVE chain(id) AS (SELECT ? UNION SELECT b.parent_branch_id FROM __aipcs_memory_branch b JOIN chain ON b.id = chain.id
      WHERE +b.principal_id = ? AND b.parent_branch_id IS NOT NULL) SELECT 1 FROM chain WHERE id = ? LIMIT 1`;
    return prepared(this.db, sql).get(start, this.principalId, ancestor) !== undefined;
  }

  async findBranchBySlug(slug: string): Promise<StoredBranch | undefined> {
    const row = this.one(statements.branchBySlug(this.table, this.principalId, slug));
    return row && toBranch(row);
  }

  async listBranches(query: BranchQuery): Promise<StoredBranch[]> {
    return this.all(statements.branchPage(this.table, this.principalId, query)).map(toBranch);
  }

  async getMembership(entityName: string, recordId: string, branchId: string): Promise<BranchRole | undefined> {
    return this.one(statements.membershipRole(this.table, this.principalId, entityName, recordId, branchId))?.['role'] as BranchRole | undefined;
  }

  async getPrimaryBranch(entityName: string, recordId: string): Promise<string | undefined> {
    return this.one(statements.primaryBranchOf(this.table, this.principalId, entityName, recordId))?.['branch_id'] as string | undefined;
  }

  async insertBranch(branch: StoredBranch): Promise<void> {
    this.run(statements.insertBranch(this.table, this.principalId, branch));
  }

  async updateBranch(branch: StoredBranch): Promise<void> {
    if (this.run(statements.updateBranch(this.table, this.principalId, branch)) !== 1) throw new StorageFailure('unavailable');
  }

  async putMembership(entityName: string, recordId: string, branchId: string, role: BranchRole, assignedAt: bigint): Promise<void> {
    this.run(statements.putMembership(this.table, this.principalId, entityName, recordId, branchId, role, assignedAt));
  }

  async removeMembership(entityName: string, recordId: string, branchId: string): Promise<void> {
    this.run(statements.removeMembership(this.table, this.principalId, entityName, recordId, branchId));
  }

  // -------------------------------------------------------------------------
  // Discovery and maintenance reads

  // Aggregates read whole tables without the owner filter: a service store
  // holds exactly one principal's rows (the registry binds each service to one
  // principal, and data admission checks it before a store is opened), so the
  // filter could only cost an index-less scan, never change a count.

  async countRecords(entity: EntityLayout): Promise<bigint> {
    return (prepared(this.db, `SELECT count(*) AS n FROM ${quoteIdentifier(entity.name)}`).get() as { n: bigint }).n;
  }

  async countWithoutPrimary(entity: EntityLayout): Promise<bigint> {
    // At most one primary membership per record, and memberships go with their record.
    const primaries = (prepared(this.db, `SELECT count(*) AS n FROM __aipcs_record_branch WHERE principal_id = ? AND entity_name = ? AND role = 'primary'`).get(
      this.principalId,
      entity.name,
    ) as { n: bigint }).n;
    return (await this.countRecords(entity)) - primaries;
  }

  async facetValues(entity: EntityLayout, field: string, shape: 'scalar' | 'list_members', limit: number): Promise<FacetCount[]> {
    if (shape === 'list_members') {
      const sql = `SELECT member AS v, count(*) AS n FROM __aipcs_list_member WHERE entity_name = ? AND field_name = ? GROUP BY member ORDER BY n DESC, member ASC LIMIT ?`;
      return (prepared(this.db, sql).all(entity.name, field, BigInt(limit)) as { v: string; n: bigint }[]).map((row) => ({ value: row.v, count: row.n }));
    }
    const type = entity.columns.find((column) => column.name === field)?.type;
    if (type === undefined || type === 'string_list') throw new StorageFailure('unavailable');
    // Qualified, and the count repeated: a field may be named "n" or "v".
    const column = `r.${quoteIdentifier(field)}`;
    const sql = `SELECT ${column} AS v, count(*) AS n FROM ${quoteIdentifier(entity.name)} AS r WHERE ${column} IS NOT NULL
      GROUP BY ${column} ORDER BY count(*) DESC, ${column} ASC LIMIT ?`;
    return (prepared(this.db, sql).all(BigInt(limit)) as { v: unknown; n: bigint }[]).map((row) => ({
      value: decodeValue(type, row.v) as FacetCount['value'],
      count: row.n,
    }));
  }

  async branchCards(limit: number): Promise<BranchCard[]> {
    const branches = this.all(statements.recentBranches(this.table, this.principalId, limit)).map(toBranch);
    if (branches.length === 0) return [];
    const counts = prepared(
      this.db,
      `SELECT branch_id, role, count(*) AS n FROM __aipcs_record_branch WHERE principal_id = ? AND branch_id IN (SELECT value FROM json_each(?)) GROUP BY branch_id, role`,
    ).all(this.principalId, JSON.stringify(branches.map((branch) => branch.id))) as { branch_id: string; role: BranchRole; n: bigint }[];
    return toBranchCards(branches, counts);
  }

  /**
   * A keyset batch in id order. In a branch scope the branch's membership
   * rows drive the batch: its primary and its related rows, each a range of
   * the scope index in record-id order, merged and cut at the limit, so a
   * small branch never walks the whole entity.
   */
  async scanRecords(entity: EntityLayout, scan: RecordScan): Promise<ScannedRecord[]> {
    const table = quoteIdentifier(entity.name);
    // The flag's name starts with "_", which no manifest field name does: a field named has_primary keeps its value.
    const select = `${this.selectList(entity)}, EXISTS (SELECT 1 FROM __aipcs_record_branch AS p WHERE p.principal_id = ? AND p.entity_name = ? AND p.record_id = r."id" AND p.role = 'primary') AS "__has_primary"`;
    const params: unknown[] = [this.principalId, entity.name];
    let sql: string;
    if (scan.memberOf !== null) {
      const members = this.branchMembers(scan.memberOf, entity.name, scan.afterId, scan.throughId ?? null, params);
      if (scan.anyOf === undefined) {
        // ORDER BY and LIMIT on the compound make SQLite merge the two ranges and stop at the limit.
        params.push(BigInt(scan.limit), this.principalId);
        sql = `SELECT ${select} FROM (${members} ORDER BY record_id LIMIT ?) AS d CROSS JOIN ${table} AS r ON r."id" = d.record_id WHERE ${OWNER_CHECK} ORDER BY d.record_id`;
      } else {
        // Narrowed, the limit counts the records kept; throughId bounds the members walked.
        params.push(this.principalId);
        const narrowed = this.anyOf(entity, scan.anyOf, params);
        params.push(BigInt(scan.limit));
        sql = `SELECT ${select} FROM (${members}) AS d CROSS JOIN ${table} AS r ON r."id" = d.record_id WHERE ${OWNER_CHECK} AND (${narrowed}) ORDER BY d.record_id LIMIT ?`;
      }
    } else {
      params.push(this.principalId);
      if (scan.afterId !== null) params.push(scan.afterId);
      let narrowed = scan.anyOf === undefined ? '' : ` AND (${this.anyOf(entity, scan.anyOf, params)})`;
      if (scan.throughId !== undefined) {
        narrowed += ' AND r."id" <= ?';
        params.push(scan.throughId);
      }
      params.push(BigInt(scan.limit));
      sql = `SELECT ${select} FROM ${table} AS r WHERE ${OWNER_CHECK}${scan.afterId === null ? '' : ' AND r."id" > ?'}${narrowed} ORDER BY r."id" LIMIT ?`;
    }
    return (prepared(this.db, sql).all(...params) as Row[]).map((row) => ({ ...this.toRecord(entity, row), hasPrimary: row['__has_primary'] === 1n }));
  }

  async idAfter(entity: EntityLayout, afterId: string | null, count: number, memberOf: string | null = null): Promise<string | null> {
    if (memberOf !== null) {
      const params: unknown[] = [];
      const members = this.branchMembers(memberOf, entity.name, afterId, null, params);
      const row = prepared(this.db, `${members} ORDER BY record_id LIMIT 1 OFFSET ?`).get(...params, BigInt(count - 1)) as { record_id: string } | undefined;
      return row?.record_id ?? null;
    }
    // The primary-key index alone: a store holds one principal's rows (see the aggregates below).
    const sql = `SELECT "id" FROM ${quoteIdentifier(entity.name)}${afterId === null ? '' : ' WHERE "id" > ?'} ORDER BY "id" LIMIT 1 OFFSET ?`;
    const row = prepared(this.db, sql).get(...(afterId === null ? [] : [afterId]), BigInt(count - 1)) as { id: string } | undefined;
    return row?.id ?? null;
  }

  /**
   * The record ids of a branch's members in (afterId, throughId], primary and
   * related each a range of the scope index (a compound for the caller to
   * order and cut), its parameters appended to `params`.
   */
  private branchMembers(branchId: string, entityName: string, afterId: string | null, throughId: string | null, params: unknown[]): string {
    const role = (name: BranchRole): string => {
      params.push(this.principalId, branchId, name, entityName);
      if (afterId !== null) params.push(afterId);
      if (throughId !== null) params.push(throughId);
      return `SELECT record_id FROM __aipcs_record_branch WHERE principal_id = ? AND branch_id = ? AND role = ? AND entity_name = ?${afterId === null ? '' : ' AND record_id > ?'}${throughId === null ? '' : ' AND record_id <= ?'}`;
    };
    return `${role('primary')} UNION ALL ${role('related')}`;
  }

  /** RecordScan.anyOf on the record "r", its parameters appended to `params`. */
  private anyOf(entity: EntityLayout, conditions: readonly ScanCondition[], params: unknown[]): string {
    const column = (field: string) => {
      if (!entity.columns.some((candidate) => candidate.name === field)) throw new StorageFailure('unavailable');
      return `r.${quoteIdentifier(field)}`;
    };
    const parts = conditions.map((condition): string => {
      switch (condition.kind) {
        case 'updated_at_most': {
          const timestamp = comparableTimestamp27(condition.micros);
          if (timestamp === null) return '1';
          params.push(timestamp);
          return 'r."updated_at" <= ?';
        }
        case 'no_primary':
          params.push(this.principalId, entity.name);
          return `NOT EXISTS (SELECT 1 FROM __aipcs_record_branch AS q WHERE q.principal_id = ? AND q.entity_name = ? AND q.record_id = r."id" AND q.role = 'primary')`;
        case 'not_null':
          return `${column(condition.field)} IS NOT NULL`;
        case 'text_equals':
          params.push(condition.value);
          return `${column(condition.field)} = ?`;
        case 'at_most':
          params.push(condition.value);
          return `${column(condition.field)} <= ?`;
        case 'longer_than':
          params.push(BigInt(condition.characters));
          // Bytes, not characters: length() of a text stops at its first NUL.
          return `length(CAST(${column(condition.field)} AS BLOB)) > ?`;
        case 'all_blank':
          return `(${condition.fields
            .map(({ name, type }) => {
              const value = column(name);
              if (type === 'text') return `(${value} IS NULL OR trim(${value}, ' ') = '')`;
              if (type === 'string_list') return `(${value} IS NULL OR ${value} = '[]')`;
              return `${value} IS NULL`;
            })
            .join(' AND ')})`;
      }
    });
    return parts.length === 0 ? '0' : parts.join(' OR ');
  }

  /**
   * One pass over the scope: each present value's group size by a window
   * over the field, then the first records (by id) of groups larger than one.
   */
  async duplicateValues(entity: EntityLayout, field: string, memberOf: string | null, limit: number): Promise<DuplicateValue[]> {
    const column = `r.${quoteIdentifier(field)}`;
    const params: unknown[] = [this.principalId];
    let scope = '';
    if (memberOf !== null) {
      scope = ` AND r."id" IN (SELECT record_id FROM __aipcs_record_branch WHERE principal_id = ? AND branch_id = ? AND entity_name = ?)`;
      params.push(this.principalId, memberOf, entity.name);
    }
    params.push(BigInt(limit));
    // Present: not null, and (for strings) not empty or only U+0020 spaces.
    const sql = `SELECT id, n FROM (SELECT r."id" AS id, count(*) OVER (PARTITION BY ${column}) AS n FROM ${quoteIdentifier(entity.name)} AS r
      WHERE ${OWNER_CHECK} AND ${column} IS NOT NULL AND trim(${column}, ' ') <> ''${scope}) WHERE n > 1 ORDER BY id LIMIT ?`;
    return (prepared(this.db, sql).all(...params) as { id: string; n: bigint }[]).map((row) => ({ id: row.id, count: row.n }));
  }

  async fenceIsOpen(generation?: bigint): Promise<boolean> {
    const fence = await this.writeFence();
    return fence.state === 'open' && (generation === undefined || fence.generation === generation);
  }

  // -------------------------------------------------------------------------
  // Operator administration: whole-store reads in canonical order, staging

  async writeFence(): Promise<WriteFence> {
    return toWriteFence(this.one(statements.writeFenceRow(this.table)));
  }

  async setFence(fence: WriteFence): Promise<void> {
    this.run(statements.upsertWriteFence(this.table, fence));
  }

  async historyPage(after: HistoryPosition | null, limit: number): Promise<HistoryEvent[]> {
    // TEXT comparisons use the BINARY collation: byte order, as the artefact
    // requires. A record's events take ascending sequences in version order
    // (a write appends the next version; import staging appends each chain in
    // order), so the (entity, record, sequence) index walks them in export
    // order. A page resumes after the sequence of the last event returned:
    // resumed by version, each page of one record re-read and sorted all of
    // its events (quadratic: 7 s for 40 000 versions).
    const resume = this.historyResume;
    let position = '';
    const params: unknown[] = [this.principalId];
    if (after !== null) {
      const resumable = resume !== undefined && resume.entityName === after.entityName && resume.recordId === after.recordId && resume.recordVersion === after.recordVersion;
      if (resumable) {
        position = ' AND (entity_name, record_id, event_sequence) > (?, ?, ?)';
        params.push(after.entityName, after.recordId, resume.sequence);
      } else {
        // Found by version once; the pages after it resume by sequence.
        position = ' AND (entity_name, record_id, event_sequence) > (?, ?, (SELECT event_sequence FROM __aipcs_record_history WHERE principal_id = ? AND entity_name = ? AND record_id = ? AND record_version = ?))';
        params.push(after.entityName, after.recordId, this.principalId, after.entityName, after.recordId, after.recordVersion);
      }
    }
    params.push(BigInt(limit));
    const sql = `SELECT entity_name, record_id, record_version, event_kind, before_json, after_json, occurred_at, event_sequence FROM __aipcs_record_history
      WHERE principal_id = ?${position} ORDER BY entity_name, record_id, event_sequence LIMIT ?`;
    // Raw rows: the whole history passes through here.
    const rows = preparedRaw(this.db, sql).all(...params) as unknown[][];
    const last = rows.at(-1);
    this.historyResume = last === undefined ? undefined : { entityName: last[0] as string, recordId: last[1] as string, recordVersion: last[2] as bigint, sequence: last[7] as bigint };
    return rows.map(historyEventFromArrayRow);
  }

  async membershipPage(after: MembershipRow | null, limit: number): Promise<MembershipRow[]> {
    return this.all(statements.membershipPage(this.table, this.principalId, after, limit)).map(toMembershipRow);
  }

  async getReplay(idempotencyKey: string): Promise<ReplayRow | undefined> {
    const row = this.one(statements.replayByKey(this.table, this.principalId, idempotencyKey));
    return row && toReplay(idempotencyKey, row);
  }

  async putReplay(row: ReplayRow): Promise<void> {
    this.run(statements.insertReplay(this.table, this.principalId, row));
  }

  async recordExists(entityName: string, id: string): Promise<boolean> {
    return (this.one(statements.recordById(this.table, this.principalId, entityName, id))) !== undefined;
  }

  async isReferenced(target: { readonly entity: string; readonly id: string }, sources: readonly { readonly entity: string; readonly column: string }[]): Promise<boolean> {
    for (const source of sources) {
      const self = source.entity === target.entity ? ' AND "id" <> ?' : '';
      const parameters = self ? [target.id, target.id] : [target.id];
      if (prepared(this.db, `SELECT 1 FROM ${quoteIdentifier(source.entity)} WHERE ${quoteIdentifier(source.column)} = ?${self} LIMIT 1`).get(...parameters) !== undefined) return true;
    }
    return false;
  }

  /** Writes the record's list members; `replace` first drops the ones it had (an update). */
  private writeMembers(entity: EntityLayout, record: StoredRecord, replace: boolean): void {
    if (replace) prepared(this.db, `DELETE FROM __aipcs_list_member WHERE entity_name = ? AND record_id = ?`).run(entity.name, record.id);
    const insert = prepared(this.db, `INSERT INTO __aipcs_list_member (entity_name, field_name, member, record_id) VALUES (?, ?, ?, ?)`);
    for (const field of entity.listFields) {
      const members = record.fields[field];
      if (!Array.isArray(members)) continue;
      for (const member of members as string[]) insert.run(entity.name, field, member, record.id);
    }
  }

  async insertRecord(entity: EntityLayout, record: StoredRecord): Promise<void> {
    const values = entity.columns.map((column) => this.columnValue(column, record));
    prepared(this.db, insertSql(entity)).run(...values);
    if (entity.listFields.length > 0) this.writeMembers(entity, record, false);
  }

  private columnValue(column: ColumnLayout, record: StoredRecord): unknown {
    return recordColumnValue(column, record, this.principalId, encodeValue);
  }

  async updateRecord(entity: EntityLayout, record: StoredRecord): Promise<void> {
    const columns = entity.columns.filter((column) => !['id', 'owner_id', 'created_at', 'created_via'].includes(column.name));
    const result = prepared(
      this.db,
      `UPDATE ${quoteIdentifier(entity.name)} SET ${columns.map((column) => `${quoteIdentifier(column.name)} = ?`).join(', ')} WHERE "id" = ? AND "owner_id" = ?`,
    ).run(...columns.map((column) => this.columnValue(column, record)), record.id, this.principalId);
    if (result.changes !== 1) throw new StorageFailure('unavailable');
    if (entity.listFields.length > 0) this.writeMembers(entity, record, true);
  }

  async deleteRecord(entity: EntityLayout, id: string): Promise<void> {
    this.run(statements.removeRecordMemberships(this.table, this.principalId, entity.name, id));
    prepared(this.db, `DELETE FROM __aipcs_list_member WHERE entity_name = ? AND record_id = ?`).run(entity.name, id);
    prepared(this.db, `DELETE FROM ${quoteIdentifier(entity.name)} WHERE "id" = ? AND "owner_id" = ?`).run(id, this.principalId);
  }

  async appendHistory(event: HistoryEvent): Promise<void> {
    this.run(statements.appendHistoryEvent(this.table, this.principalId, event));
  }
}

export class SqliteServiceData implements OperatorDataPort {
  // In process, a statement per row costs no round trip; small batches die young, so the heap stays flat.
  readonly transferBatching: TransferBatching = { readPage: 200, stageBatch: 200 };

  constructor(private readonly stores: SqliteServiceStores) {}

  private connectionFor(locator: StorageLocator) {
    const connection = this.stores.connection(locator);
    if (!connection) throw new StorageFailure('unavailable');
    return connection;
  }

  read<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataReader) => Promise<T>): Promise<T> {
    return this.connectionFor(locator).read((db) => {
      assertStoreBinding(db, locator.namespace);
      return work(new SqliteDataTx(db, principalId));
    });
  }

  /** SQLite plans keyset pages by their indexes without statistics: a scan is a read. */
  scan<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataReader) => Promise<T>): Promise<T> {
    return this.read(locator, principalId, work);
  }

  write<T>(locator: StorageLocator, principalId: string, work: (tx: OperatorDataWriter) => Promise<T>): Promise<T> {
    return this.connectionFor(locator).write((db) => {
      assertStoreBinding(db, locator.namespace);
      return work(new SqliteDataTx(db, principalId));
    });
  }

  stage<T>(locator: StorageLocator, principalId: string, layout: StoreLayout, work: (tx: StagingWriter) => Promise<T>): Promise<T> {
    const connection = this.stores.connection(locator, true);
    if (!connection) throw new StorageFailure('unavailable');
    return connection.write(async (db) => {
      if (compareLayout(db, layout, locator.namespace) !== 'empty') throw new StorageFailure('incompatible');
      for (const ddl of [...BOOKKEEPING_DDL, ...layoutDdl(layout)]) db.exec(ddl);
      db.prepare(`INSERT INTO __aipcs_service_store_meta (singleton, adapter_id, namespace, applied_revision) VALUES (1, ?, ?, ?)`).run(SERVICE_STORE_ADAPTER_ID, locator.namespace, SERVICE_STORE_REVISION);
      // Rows arrive in the artefact's order, not in reference order: foreign
      // keys are checked at COMMIT (the pragma resets when the unit ends).
      db.pragma('defer_foreign_keys = ON');
      return work(new SqliteStagingTx(db, principalId));
    });
  }
}
