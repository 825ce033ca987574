// Encodings that every SQL backend stores the same way: server timestamps of
// records as Timestamp27 text, and field-set snapshots (history, replay) as
// lossless JSON text, so that `1` and `1.0` and 64-bit integers come back
// exactly. Pure functions; no driver and no SQL.

import { losslessJson, parseJson, type JsonValue } from '../../../common/json.js';
import { formatTimestamp27 } from '../../core/time.js';
import { StorageFailure, type ColumnLayout, type EntityLayout, type FieldSet, type FieldValue, type HistoryEvent, type HistoryRows, type StoredBranch, type StoredHistoryEvent, type StoredRecord } from '../../core/ports.js';

/** Server-managed columns of every domain table; the rest are domain fields. */
export const SERVER_COLUMNS: ReadonlySet<string> = new Set(['id', 'owner_id', 'created_at', 'updated_at', 'created_via', 'record_version']);

/** Bounds for stored JSON: a field set is at most 64 KiB, a replay result a little more. */
export const STORED_JSON_LIMITS = { maxBytes: 2 * 1024 * 1024, maxDepth: 16 };

export { formatTimestamp27 };

const TIMESTAMP27 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})Z$/;

/** Microseconds since the epoch from `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export function parseTimestamp27(text: string): bigint {
  const match = TIMESTAMP27.exec(text);
  const seconds = match ? Date.parse(`${match[1] ?? ''}Z`) : Number.NaN;
  if (!match || Number.isNaN(seconds)) throw new StorageFailure('unavailable');
  return BigInt(seconds) * 1000n + BigInt(match[2] ?? '0');
}

/**
 * A history event from an array row of the history page query, whose select
 * list is `entity_name, record_id, record_version, event_kind, before_json,
 * after_json, occurred_at` in that order on every backend.
 */
export function historyEventFromArrayRow(row: readonly unknown[]): HistoryEvent {
  return {
    entityName: row[0] as string,
    recordId: row[1] as string,
    recordVersion: row[2] as bigint,
    kind: row[3] as HistoryEvent['kind'],
    before: decodeFieldSet(row[4] as string | null),
    after: decodeFieldSet(row[5] as string | null),
    occurredAt: row[6] as bigint,
  };
}

/**
 * History events from array rows of the history page query's select list
 * followed by `event_sequence`, read in order and decoded one at a time: with
 * a text budget, reading stops at the first row past it (which proves that
 * more follow) and nothing after it is parsed, or on SQLite stepped (see
 * ServiceDataReader.history).
 */
export function historyRowsWithinBudget(rows: Iterable<readonly unknown[]>, textBudget: number | undefined): HistoryRows {
  const events: StoredHistoryEvent[] = [];
  let text = 0;
  for (const row of rows) {
    if (textBudget !== undefined && events.length >= 2 && text > textBudget) return { events, cut: true };
    text += ((row[4] as string | null)?.length ?? 0) + ((row[5] as string | null)?.length ?? 0);
    events.push({ ...historyEventFromArrayRow(row), sequence: row[7] as bigint });
  }
  return { events, cut: false };
}

export function encodeFieldSet(fields: FieldSet | null): string | null {
  return fields === null ? null : losslessJson(fields as unknown as JsonValue);
}

export function decodeFieldSet(text: string | null): FieldSet | null {
  return text === null ? null : (parseStoredJson(text) as unknown as FieldSet);
}

/** A stored JSON column; text that does not parse means the store is not what we wrote. */
export function parseStoredJson(text: string, limits: { maxBytes: number; maxDepth: number } = STORED_JSON_LIMITS): JsonValue {
  try {
    return parseJson(text, limits);
  } catch (error) {
    throw new StorageFailure('unavailable', { cause: error });
  }
}

export type Row = Record<string, unknown>;

// Layouts are cached per manifest, so their domain columns are listed once, not per row.
const domainColumnsByLayout = new WeakMap<EntityLayout, readonly ColumnLayout[]>();

/** The entity's domain columns, in manifest order. */
export function domainColumns(entity: EntityLayout): readonly ColumnLayout[] {
  let columns = domainColumnsByLayout.get(entity);
  if (columns === undefined) {
    columns = entity.columns.filter((column) => !SERVER_COLUMNS.has(column.name));
    domainColumnsByLayout.set(entity, columns);
  }
  return columns;
}

/** The select list of a stored record (alias `r`, each item from `select`): server fields, then domain fields, each under its own name. */
export function recordSelectList(entity: EntityLayout, select: (name: string) => string): string {
  return ['id', 'created_at', 'updated_at', 'created_via', 'record_version', ...domainColumns(entity).map((column) => column.name)].map(select).join(', ');
}

/** A selected row as a StoredRecord; `decode` knows the backend's value encodings. */
export function toStoredRecord(entity: EntityLayout, row: Row, decode: (type: ColumnLayout['type'], value: unknown) => FieldValue): StoredRecord {
  const fields: Record<string, FieldValue> = {};
  for (const column of domainColumns(entity)) fields[column.name] = decode(column.type, row[column.name]);
  return {
    id: row['id'] as string,
    createdAt: parseTimestamp27(row['created_at'] as string),
    updatedAt: parseTimestamp27(row['updated_at'] as string),
    createdVia: row['created_via'] as string,
    recordVersion: row['record_version'] as bigint,
    fields,
  };
}

/**
 * toStoredRecord for a row read as an array (a driver's raw mode): `values`
 * in recordSelectList's order. Spares the driver an object with named
 * properties per row on whole-table reads.
 */
export function toStoredRecordFromValues(entity: EntityLayout, values: readonly unknown[], decode: (type: ColumnLayout['type'], value: unknown) => FieldValue): StoredRecord {
  const fields: Record<string, FieldValue> = {};
  const columns = domainColumns(entity);
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i] as ColumnLayout;
    fields[column.name] = decode(column.type, values[i + 5]);
  }
  return {
    id: values[0] as string,
    createdAt: parseTimestamp27(values[1] as string),
    updatedAt: parseTimestamp27(values[2] as string),
    createdVia: values[3] as string,
    recordVersion: values[4] as bigint,
    fields,
  };
}

/** The value a domain-table column stores for a record; `encode` knows the backend's domain encodings. */
export function recordColumnValue(column: ColumnLayout, record: StoredRecord, principalId: string, encode: (type: ColumnLayout['type'], value: FieldValue) => unknown): unknown {
  switch (column.name) {
    case 'id':
      return record.id;
    case 'owner_id':
      return principalId;
    case 'created_at':
      return formatTimestamp27(record.createdAt);
    case 'updated_at':
      return formatTimestamp27(record.updatedAt);
    case 'created_via':
      return record.createdVia;
    case 'record_version':
      return record.recordVersion;
    default:
      return encode(column.type, record.fields[column.name] ?? null);
  }
}

/** Micros of 0000-01-01T00:00:00Z: from there to year 9999 the Timestamp27 texts sort as their instants do. */
const FIRST_FIXED_WIDTH_MICROS = -62_167_219_200_000_000n;
const LAST_FIXED_WIDTH_MICROS = 253_402_300_799_999_999n;

/** The Timestamp27 text an updated_at column is compared with, or null outside the years 0000..9999. */
export function comparableTimestamp27(micros: bigint): string | null {
  return micros < FIRST_FIXED_WIDTH_MICROS || micros > LAST_FIXED_WIDTH_MICROS ? null : formatTimestamp27(micros);
}

/** The branch table's columns in the order `branchRowValues` gives its values, quoted for either backend. */
export const BRANCH_INSERT_COLUMNS =
  '"id", "principal_id", "slug", "title", "intent", "branch_type", "parent_branch_id", "status", "retrieval_summary", "branch_revision", "created_at", "updated_at"';

/** A branch's row, in the order of `BRANCH_INSERT_COLUMNS`. */
export function branchRowValues(branch: StoredBranch, principalId: string): unknown[] {
  return [
    branch.id,
    principalId,
    branch.slug,
    branch.title,
    branch.intent,
    branch.branchType,
    branch.parentId,
    branch.status,
    branch.retrievalSummary,
    branch.branchRevision,
    branch.createdAt,
    branch.updatedAt,
  ];
}
