// Statements on a service store's bookkeeping tables that both backends run
// as written: `?` placeholders and double-quoted identifiers, which SQLite
// takes as they are and the PostgreSQL adapter numbers ($1, $2, ...) with
// `numberedPlaceholders`, each table named by the adapter (PostgreSQL
// qualifies it with the store's schema). Where the dialects do not agree
// (planner steering, bulk staging, value types), the SQL stays in each
// adapter. Pure: no driver, no I/O.

import { losslessJson } from '../../../common/json.js';
import type { BranchCard, BranchQuery, BranchRole, HistoryEvent, MembershipRow, ReplayRow, StoredBranch, WriteFence } from '../../core/ports.js';
import { BRANCH_INSERT_COLUMNS, branchRowValues, encodeFieldSet, parseStoredJson, type Row } from './record-codec.js';

/** One statement and its parameters, in placeholder order. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/** A table's name as the adapter's statements spell it (PostgreSQL: inside the store's schema). */
export type TableName = (table: string) => string;

/** `?` placeholders as PostgreSQL's `$1`, `$2`, ... (the shared statements hold no `?` inside a literal). */
export function numberedPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** Every statement text of a set numbered for PostgreSQL, under the same names. */
export function numberedStatements<T extends Record<string, string>>(texts: T): T {
  return Object.fromEntries(Object.entries(texts).map(([name, sql]) => [name, numberedPlaceholders(sql)])) as T;
}

/** An identifier as both dialects quote it. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const BRANCHES = '__aipcs_memory_branch';
const MEMBERSHIPS = '__aipcs_record_branch';
const REPLAYS = '__aipcs_record_mutation';
const FENCE = '__aipcs_write_fence';
const HISTORY = '__aipcs_record_history';

const BRANCH_COLUMNS = '"id", "slug", "title", "intent", "branch_type", "parent_branch_id", "status", "retrieval_summary", "created_at", "updated_at", "branch_revision"';

/** A branch from a row of BRANCH_COLUMNS. */
export function toBranch(row: Row): StoredBranch {
  return {
    id: row['id'] as string,
    slug: row['slug'] as string,
    title: row['title'] as string,
    intent: row['intent'] as string,
    branchType: (row['branch_type'] as string | null) ?? null,
    parentId: (row['parent_branch_id'] as string | null) ?? null,
    status: row['status'] as StoredBranch['status'],
    retrievalSummary: (row['retrieval_summary'] as string | null) ?? null,
    createdAt: row['created_at'] as bigint,
    updatedAt: row['updated_at'] as bigint,
    branchRevision: row['branch_revision'] as bigint,
  };
}

export function branchById(table: TableName, principalId: string, id: string): Statement {
  return { sql: `SELECT ${BRANCH_COLUMNS} FROM ${table(BRANCHES)} WHERE "id" = ? AND "principal_id" = ?`, params: [id, principalId] };
}

export function branchBySlug(table: TableName, principalId: string, slug: string): Statement {
  return { sql: `SELECT ${BRANCH_COLUMNS} FROM ${table(BRANCHES)} WHERE "principal_id" = ? AND "slug" = ?`, params: [principalId, slug] };
}

/** A page of branches in id order, each filter an equality on its own indexed column. */
export function branchPage(table: TableName, principalId: string, query: BranchQuery): Statement {
  const where = ['"principal_id" = ?'];
  const params: unknown[] = [principalId];
  const add = (condition: string, value: unknown): void => {
    where.push(condition);
    params.push(value);
  };
  if (query.status !== null) add('"status" = ?', query.status);
  if (query.branchType !== null) add('"branch_type" = ?', query.branchType);
  if (query.parentId !== null) add('"parent_branch_id" = ?', query.parentId);
  if (query.afterId !== null) add('"id" > ?', query.afterId);
  params.push(BigInt(query.limit));
  return { sql: `SELECT ${BRANCH_COLUMNS} FROM ${table(BRANCHES)} WHERE ${where.join(' AND ')} ORDER BY "id" LIMIT ?`, params };
}

export function insertBranch(table: TableName, principalId: string, branch: StoredBranch): Statement {
  return { sql: `INSERT INTO ${table(BRANCHES)} (${BRANCH_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, params: branchRowValues(branch, principalId) };
}

/** Rewrites a branch's mutable columns; the adapter checks that exactly one row changed. */
export function updateBranch(table: TableName, principalId: string, branch: StoredBranch): Statement {
  return {
    sql: `UPDATE ${table(BRANCHES)} SET "title" = ?, "intent" = ?, "branch_type" = ?, "parent_branch_id" = ?, "status" = ?, "retrieval_summary" = ?, "branch_revision" = ?, "updated_at" = ?
           WHERE "id" = ? AND "principal_id" = ?`,
    params: [branch.title, branch.intent, branch.branchType, branch.parentId, branch.status, branch.retrievalSummary, branch.branchRevision, branch.updatedAt, branch.id, principalId],
  };
}

export function membershipRole(table: TableName, principalId: string, entityName: string, recordId: string, branchId: string): Statement {
  return {
    sql: `SELECT "role" FROM ${table(MEMBERSHIPS)} WHERE "principal_id" = ? AND "entity_name" = ? AND "record_id" = ? AND "branch_id" = ?`,
    params: [principalId, entityName, recordId, branchId],
  };
}

export function primaryBranchOf(table: TableName, principalId: string, entityName: string, recordId: string): Statement {
  return {
    sql: `SELECT "branch_id" FROM ${table(MEMBERSHIPS)} WHERE "principal_id" = ? AND "entity_name" = ? AND "record_id" = ? AND "role" = 'primary'`,
    params: [principalId, entityName, recordId],
  };
}

/** Adds a membership, or changes the role (and time) of the one there is. */
export function putMembership(table: TableName, principalId: string, entityName: string, recordId: string, branchId: string, role: BranchRole, assignedAt: bigint): Statement {
  return {
    sql: `INSERT INTO ${table(MEMBERSHIPS)} ("principal_id", "entity_name", "record_id", "branch_id", "role", "assigned_at") VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT ("principal_id", "entity_name", "record_id", "branch_id") DO UPDATE SET "role" = excluded."role", "assigned_at" = excluded."assigned_at"`,
    params: [principalId, entityName, recordId, branchId, role, assignedAt],
  };
}

export function removeMembership(table: TableName, principalId: string, entityName: string, recordId: string, branchId: string): Statement {
  return {
    sql: `DELETE FROM ${table(MEMBERSHIPS)} WHERE "principal_id" = ? AND "entity_name" = ? AND "record_id" = ? AND "branch_id" = ?`,
    params: [principalId, entityName, recordId, branchId],
  };
}

/** Memberships in export order (branch, entity, record, role), after a keyset position. Both backends compare text bytewise here. */
export function membershipPage(table: TableName, principalId: string, after: MembershipRow | null, limit: number): Statement {
  const position = after === null ? '' : ' AND ("branch_id", "entity_name", "record_id", "role") > (?, ?, ?, ?)';
  const params: unknown[] = [principalId];
  if (after !== null) params.push(after.branchId, after.entityName, after.recordId, after.role);
  params.push(BigInt(limit));
  return {
    sql: `SELECT "branch_id", "entity_name", "record_id", "role" FROM ${table(MEMBERSHIPS)} WHERE "principal_id" = ?${position}
           ORDER BY "branch_id", "entity_name", "record_id", "role" LIMIT ?`,
    params,
  };
}

export function toMembershipRow(row: Row): MembershipRow {
  return {
    branchId: row['branch_id'] as string,
    entityName: row['entity_name'] as string,
    recordId: row['record_id'] as string,
    role: row['role'] as BranchRole,
  };
}

export function replayByKey(table: TableName, principalId: string, idempotencyKey: string): Statement {
  return {
    sql: `SELECT "operation_kind", "fingerprint", "result_json", "completed_at" FROM ${table(REPLAYS)} WHERE "principal_id" = ? AND "idempotency_key" = ?`,
    params: [principalId, idempotencyKey],
  };
}

export function toReplay(idempotencyKey: string, row: Row): ReplayRow {
  return {
    idempotencyKey,
    kind: row['operation_kind'] as string,
    fingerprint: row['fingerprint'] as string,
    result: parseStoredJson(row['result_json'] as string),
    completedAt: row['completed_at'] as bigint,
  };
}

export function insertReplay(table: TableName, principalId: string, row: ReplayRow): Statement {
  return {
    sql: `INSERT INTO ${table(REPLAYS)} ("principal_id", "idempotency_key", "operation_kind", "fingerprint", "result_json", "completed_at") VALUES (?, ?, ?, ?, ?, ?)`,
    params: [principalId, row.idempotencyKey, row.kind, row.fingerprint, losslessJson(row.result), row.completedAt],
  };
}

/** The most recently updated branches first, ties by id: the summary's branch cards. */
export function recentBranches(table: TableName, principalId: string, limit: number): Statement {
  return { sql: `SELECT ${BRANCH_COLUMNS} FROM ${table(BRANCHES)} WHERE "principal_id" = ? ORDER BY "updated_at" DESC, "id" ASC LIMIT ?`, params: [principalId, BigInt(limit)] };
}

/** Branch cards from the branches and their membership counts by role (rows of branch_id, role, n). */
export function toBranchCards(branches: readonly StoredBranch[], counts: readonly { readonly branch_id: string; readonly role: BranchRole; readonly n: bigint }[]): BranchCard[] {
  const countOf = new Map(counts.map((row) => [`${row.branch_id}/${row.role}`, row.n]));
  return branches.map((branch) => ({
    branch,
    primaryCount: countOf.get(`${branch.id}/primary`) ?? 0n,
    relatedCount: countOf.get(`${branch.id}/related`) ?? 0n,
  }));
}

/** Whether the principal's record `id` is in the entity's table (named by the adapter, as a bookkeeping table is). */
export function recordById(table: TableName, principalId: string, entityName: string, id: string): Statement {
  return { sql: `SELECT 1 FROM ${table(entityName)} WHERE "id" = ? AND "owner_id" = ?`, params: [id, principalId] };
}

/** The store's write fence row, if it has one yet. */
export function writeFenceRow(table: TableName): Statement {
  return { sql: `SELECT "generation", "state" FROM ${table(FENCE)} WHERE "singleton" = 1`, params: [] };
}

/** Sets the store's write fence, making its row if it has none yet. */
export function upsertWriteFence(table: TableName, fence: WriteFence): Statement {
  return {
    sql: `INSERT INTO ${table(FENCE)} ("singleton", "generation", "state") VALUES (1, ?, ?)
           ON CONFLICT ("singleton") DO UPDATE SET "generation" = excluded."generation", "state" = excluded."state"`,
    params: [fence.generation, fence.state],
  };
}

/** The fence a store without a fence row has: open, at generation 1. */
export function toWriteFence(row: Row | undefined): WriteFence {
  return row ? { generation: row['generation'] as bigint, state: row['state'] as WriteFence['state'] } : { generation: 1n, state: 'open' };
}

/** Appends one history event; the store numbers it (event_sequence) in commit order. */
export function appendHistoryEvent(table: TableName, principalId: string, event: HistoryEvent): Statement {
  return {
    sql: `INSERT INTO ${table(HISTORY)} ("principal_id", "entity_name", "record_id", "record_version", "event_kind", "before_json", "after_json", "occurred_at") VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    params: [principalId, event.entityName, event.recordId, event.recordVersion, event.kind, encodeFieldSet(event.before), encodeFieldSet(event.after), event.occurredAt],
  };
}

/** Removes every membership of one record (it is being deleted). */
export function removeRecordMemberships(table: TableName, principalId: string, entityName: string, recordId: string): Statement {
  return { sql: `DELETE FROM ${table(MEMBERSHIPS)} WHERE "principal_id" = ? AND "entity_name" = ? AND "record_id" = ?`, params: [principalId, entityName, recordId] };
}
