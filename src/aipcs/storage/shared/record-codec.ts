// Encodings that every SQL backend stores the same way: server timestamps of
// records as Timestamp27 text, and field-set snapshots (history, replay) as
// lossless JSON text, so that `1` and `1.0` and 64-bit integers come back
// exactly. Pure functions; no driver and no SQL.

import { losslessJson, parseJson, type JsonValue } from '../../../common/json.js';
import { formatTimestamp27 } from '../../core/time.js';
import { StorageFailure, type FieldSet } from '../../core/ports.js';

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

export function encodeFieldSet(fields: FieldSet | null): string | null {
  return fields === null ? null : losslessJson(fields as unknown as JsonValue);
}

export function decodeFieldSet(text: string | null): FieldSet | null {
  return text === null ? null : (parseStoredJson(text) as unknown as FieldSet);
}

export function parseStoredJson(text: string): JsonValue {
  try {
    return parseJson(text, STORED_JSON_LIMITS);
  } catch (error) {
    throw new StorageFailure('unavailable', { cause: error });
  }
}
