// Shape rules of the free-form `record`, `updates` and `filters` maps
// (contract §6.3, §6.8): identifier keys (trimmed), scalar or string-list
// values, string and record byte bounds. Values are never trimmed and never
// converted; type checks against a manifest belong to the core.

import { renderJson, type JsonObject, type JsonValue } from '../../../common/json.js';
import type { IssueSink, PathSegment } from '../issues.js';
import { isIdentifier, isServerManagedField } from '../manifest/types.js';
import { hasLoneSurrogate, setMember, trimContractString, utf8Length } from '../schema-check.js';
import { codePointLength } from '../../../common/code-points.js';

export const RECORD_BOUNDS = {
  maxRecordJsonBytes: 65536,
  maxStringBytes: 16384,
  maxStringListItems: 256,
  maxStringListItemLength: 256,
  maxSearchFilters: 16,
} as const;

/** The most members a record map within maxRecordJsonBytes can hold: `{` + n × `"a":0` + (n - 1) commas + `}`. */
const MAX_MEMBERS_WITHIN_BOUND = Math.floor((RECORD_BOUNDS.maxRecordJsonBytes - 1) / 6);

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Size measure of §6.3: compact JSON, sorted keys, non-ASCII kept, UTF-8
 * bytes. Lossless values: every number is a float literal (Python's repr,
 * `1.0`, `1e+16`) and every bigint an integer literal, as a Python server sees them.
 * The order of the keys changes no byte count, so they are rendered as they
 * come: sorting hundreds of thousands of keys (an 8 MiB request of short
 * ones) held the server for seconds.
 */
export function recordJsonByteLength(value: JsonObject): number {
  return utf8Length(renderJson(value, { keyOrder: 'insertion', asciiOnly: false, floatStyle: 'lossless' }));
}

function checkString(value: string, path: readonly PathSegment[], sink: IssueSink): void {
  if (value.includes('\u0000') || hasLoneSurrogate(value)) sink.report('invalid_value', path);
  else if (utf8Length(value) > RECORD_BOUNDS.maxStringBytes) sink.report('invalid_length', path);
}

function checkScalar(value: JsonValue, path: readonly PathSegment[], sink: IssueSink): boolean {
  if (value === null || typeof value === 'boolean') return true;
  if (typeof value === 'bigint') {
    if (value < INT64_MIN || value > INT64_MAX) sink.report('invalid_value', path);
    return true;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) sink.report('invalid_value', path);
    return true;
  }
  if (typeof value === 'string') {
    checkString(value, path, sink);
    return true;
  }
  return false;
}

function checkStringList(value: JsonValue[], path: readonly PathSegment[], sink: IssueSink): void {
  if (value.length > RECORD_BOUNDS.maxStringListItems) {
    sink.report('invalid_length', path);
    return;
  }
  const seen = new Set<string>();
  value.forEach((item, index) => {
    const itemPath = [...path, index];
    if (typeof item !== 'string') {
      sink.report('invalid_value', itemPath);
    } else if (item.length === 0 || codePointLength(item) > RECORD_BOUNDS.maxStringListItemLength) {
      sink.report('invalid_length', itemPath);
    } else if (item.includes('\u0000') || hasLoneSurrogate(item)) {
      sink.report('invalid_value', itemPath);
    } else if (seen.has(item)) {
      sink.report('invalid_value', itemPath);
    }
    if (typeof item === 'string') seen.add(item);
  });
}

/**
 * Rebuilds a free-form map with trimmed keys, reporting keys that are not
 * identifiers or collide once trimmed. `value` is called for every kept entry.
 */
function trimmedKeys(
  map: JsonObject,
  path: readonly PathSegment[],
  sink: IssueSink,
  value: (key: string, member: JsonValue, memberPath: readonly PathSegment[]) => void,
): JsonObject {
  const out: JsonObject = {};
  for (const rawKey of Object.keys(map)) {
    if (sink.full) break;
    const key = trimContractString(rawKey);
    const memberPath = [...path, key];
    if (!isIdentifier(key) || Object.hasOwn(out, key)) {
      sink.report('invalid_value', memberPath);
      continue;
    }
    const member = map[rawKey] as JsonValue;
    setMember(out, key, member);
    value(key, member, memberPath);
  }
  return out;
}

/**
 * Shape of a `record` (create) or `updates` (record update) map: domain keys
 * only, values scalars or string lists within bounds, ≤64 KiB as JSON.
 */
export function checkRecordMap(map: JsonObject, path: readonly PathSegment[], sink: IssueSink): JsonObject {
  // Each member is at least `"a":0` and a comma: more than this many cannot
  // fit the record bound whatever they hold, and checking each of hundreds
  // of thousands of keys first (an 8 MiB request of short ones) held the
  // server for seconds.
  if (Object.keys(map).length > MAX_MEMBERS_WITHIN_BOUND) {
    sink.report('invalid_length', path);
    return {};
  }
  const before = sink.total;
  const out = trimmedKeys(map, path, sink, (key, member, memberPath) => {
    if (isServerManagedField(key)) {
      sink.report('invalid_value', memberPath);
    } else if (Array.isArray(member)) {
      checkStringList(member, memberPath, sink);
    } else if (!checkScalar(member, memberPath, sink)) {
      sink.report('invalid_value', memberPath);
    }
  });
  if (sink.total === before && recordJsonByteLength(out) > RECORD_BOUNDS.maxRecordJsonBytes) sink.report('invalid_length', path);
  return out;
}

/** Shape of search `filters`: identifier keys, one JSON scalar each (no null). */
export function checkFilterMap(map: JsonObject, path: readonly PathSegment[], sink: IssueSink): JsonObject {
  return trimmedKeys(map, path, sink, (_key, member, memberPath) => {
    if (member === null || !checkScalar(member, memberPath, sink)) sink.report('invalid_value', memberPath);
  });
}
