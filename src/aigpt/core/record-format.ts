// The exact bytes of record files (spec 3.3-3.5) and the reference's JSON
// renderings (serde_json: keys sorted bytewise, two-space pretty or compact,
// ryu floats). Also parses record files into checked shapes. No file I/O here.

import { type JsonValue, compareCodePoints, isJsonObject, JsonError, parseJson } from '../../common/json.js';
import { CORE_COLLECTION, MAX_JSON_DEPTH, MAX_RECORD_FILE_BYTES, MEMORY_COLLECTION } from './limits.js';
import { coreUri, memoryUri } from './record-paths.js';

/** U+FEFF as the first character: serde_json refuses a document that starts with it. */
export const BOM = '\ufeff';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text JSON.stringify would escape as `\udXXX`, which the reference cannot parse. */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** `YYYY-MM-DDTHH:MM:SSZ`: UTC, truncated to the second like the reference's chrono call. */
export function formatCreatedAt(date: Date): string {
  const iso = date.toISOString();
  // Years outside 0000-9999 change the ISO shape; no clock we accept produces them.
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(iso)) throw new RangeError(`clock out of range: ${iso}`);
  return `${iso.slice(0, 19)}Z`;
}

export interface MemoryRecordInput {
  readonly did: string;
  readonly tid: string;
  readonly text: string;
  readonly createdAt: string;
}

export interface CoreRecordInput {
  readonly did: string;
  readonly handle: string;
  readonly text: string;
  readonly createdAt: string;
}

function assertWellFormed(...texts: string[]): void {
  for (const text of texts) {
    if (!isWellFormedText(text)) throw new RangeError('text is not well-formed Unicode (lone surrogate)');
  }
}

// Keys are inserted in sorted order so JSON.stringify(_, null, 2) yields the
// reference's bytes (spec 3.5); the golden tests pin this.
export function memoryRecordJson(input: MemoryRecordInput): string {
  assertWellFormed(input.did, input.tid, input.text);
  const record = {
    uri: memoryUri(input.did, input.tid),
    value: {
      $type: MEMORY_COLLECTION,
      content: { $type: `${MEMORY_COLLECTION}#markdown`, text: input.text },
      createdAt: input.createdAt,
      did: input.did,
    },
  };
  return JSON.stringify(record, null, 2);
}

export function coreRecordJson(input: CoreRecordInput): string {
  assertWellFormed(input.did, input.handle, input.text);
  const record = {
    uri: coreUri(input.did),
    value: {
      $type: CORE_COLLECTION,
      content: { $type: `${CORE_COLLECTION}#markdown`, text: input.text },
      createdAt: input.createdAt,
      did: input.did,
      handle: input.handle,
    },
  };
  return JSON.stringify(record, null, 2);
}

// ---------------------------------------------------------------------------
// Reading

export type ParsedRecord =
  | { readonly ok: true; readonly value: JsonValue; readonly text: string | undefined; readonly shapeProblem: string | undefined }
  | { readonly ok: false; readonly reason: string };

/**
 * A string token, or the number token `-0` (not `-0.5`, `-0e1`, nor the
 * exponent of `1e-0`: outside strings a `-` is either a sign or follows e/E).
 */
const STRING_OR_NEGATIVE_ZERO = /"(?:[^"\\]|\\.)*"|(?<![eE])-0(?![.\deE])/g;
/** Room for the bytes negativeZeroAsFloat adds, so a file within the size bound still parses. */
const NEGATIVE_ZERO_SLACK = 1024 * 1024;

/**
 * serde_json reads the integer token `-0` as the float -0.0 (and so renders
 * it `-0.0`, and refuses it for a u64); our parser would give the integer 0.
 * Rewriting the token as `-0.0` outside strings gives serde's value.
 */
export function negativeZeroAsFloat(text: string): string {
  if (!text.includes('-0')) return text;
  return text.replace(STRING_OR_NEGATIVE_ZERO, (token) => (token === '-0' ? '-0.0' : token));
}

/**
 * Parses a record file's text as the reference would (serde_json: depth 128,
 * no lone surrogate escapes) and checks the record shape: a JSON object whose
 * `value.content.text` is a string. Any key order is accepted. A document that
 * parses but has another shape is still returned (read_core shows it as is).
 */
export function parseRecordText(text: string): ParsedRecord {
  if (text.startsWith(BOM)) return { ok: false, reason: 'the file starts with a UTF-8 byte order mark (BOM)' };
  let value: JsonValue;
  try {
    value = parseJson(negativeZeroAsFloat(text), { maxBytes: MAX_RECORD_FILE_BYTES + NEGATIVE_ZERO_SLACK, maxDepth: MAX_JSON_DEPTH });
  } catch (error) {
    if (error instanceof JsonError) return { ok: false, reason: error.message };
    throw error;
  }
  const unreadable = serdeRefusal(value);
  if (unreadable !== undefined) return { ok: false, reason: unreadable };
  if (!isJsonObject(value)) {
    return { ok: true, value, text: undefined, shapeProblem: 'not a record: the document is not a JSON object' };
  }
  const inner = value['value'];
  const content = isJsonObject(inner) ? inner['content'] : undefined;
  const body = isJsonObject(content) ? content['text'] : undefined;
  if (typeof body !== 'string') {
    return { ok: true, value, text: undefined, shapeProblem: 'not a record: value.content.text is missing or not a string' };
  }
  return { ok: true, value, text: body, shapeProblem: undefined };
}

const LONE_SURROGATE_ESCAPE = 'The JSON document holds a lone surrogate escape.';

/**
 * What serde_json refuses in a document our parser accepts: a lone surrogate
 * escape, and an integer too large for an f64 (serde_json reads integers
 * beyond i64/u64 as f64 and fails with "number out of range" on overflow;
 * rendering it would print `null`).
 */
function serdeRefusal(root: JsonValue): string | undefined {
  const stack: JsonValue[] = [root];
  while (stack.length > 0) {
    const value = stack.pop()!;
    if (typeof value === 'string') {
      if (!isWellFormedText(value)) return LONE_SURROGATE_ESCAPE;
    } else if (typeof value === 'bigint') {
      if (!Number.isFinite(Number(value))) return 'The JSON document holds a number out of range.';
    } else if (Array.isArray(value)) {
      // One at a time: spreading an array of 200 000 numbers (a 1 MiB file)
      // as arguments overflows the call stack.
      for (const item of value) stack.push(item);
    } else if (isJsonObject(value)) {
      for (const [key, member] of Object.entries(value)) {
        if (!isWellFormedText(key)) return LONE_SURROGATE_ESCAPE;
        stack.push(member);
      }
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// serde_json renderings of parsed values

const U64_MAX = 2n ** 64n - 1n;
const I64_MIN = -(2n ** 63n);

/** serde_json's compact output: sorted keys, no whitespace. */
export function renderCompact(value: JsonValue): string {
  const parts: string[] = [];
  render(value, parts, null, 0);
  return parts.join('');
}

/** serde_json's pretty output: sorted keys, two-space indent, no trailing newline. */
export function renderPretty(value: JsonValue): string {
  const parts: string[] = [];
  render(value, parts, '  ', 0);
  return parts.join('');
}

function render(value: JsonValue, parts: string[], indent: string | null, level: number): void {
  if (value === null) parts.push('null');
  else if (typeof value === 'boolean') parts.push(value ? 'true' : 'false');
  else if (typeof value === 'string') parts.push(quote(value));
  else if (typeof value === 'bigint') {
    // serde_json keeps i64/u64 exact and reads anything wider as f64.
    parts.push(value >= I64_MIN && value <= U64_MAX ? value.toString() : formatFloat(Number(value)));
  } else if (typeof value === 'number') parts.push(formatFloat(value));
  else if (Array.isArray(value)) {
    renderContainer('[', ']', value.length, parts, indent, level, (i) => render(value[i]!, parts, indent, level + 1));
  } else {
    const keys = Object.keys(value).sort(compareCodePoints);
    renderContainer('{', '}', keys.length, parts, indent, level, (i) => {
      const key = keys[i]!;
      parts.push(quote(key), indent === null ? ':' : ': ');
      render(value[key]!, parts, indent, level + 1);
    });
  }
}

function renderContainer(
  open: string,
  close: string,
  count: number,
  parts: string[],
  indent: string | null,
  level: number,
  item: (index: number) => void,
): void {
  parts.push(open);
  if (count === 0) {
    parts.push(close);
    return;
  }
  for (let i = 0; i < count; i++) {
    if (i > 0) parts.push(',');
    if (indent !== null) parts.push('\n', indent.repeat(level + 1));
    item(i);
  }
  if (indent !== null) parts.push('\n', indent.repeat(level));
  parts.push(close);
}

function quote(text: string): string {
  // For well-formed text JSON.stringify escapes exactly like serde_json.
  assertWellFormed(text);
  return JSON.stringify(text);
}

/** ryu's formatting of a finite f64 as serde_json writes it (`1.0`, `1e21`, `1.5e-7`, `0.001`). */
export function formatFloat(value: number): string {
  if (!Number.isFinite(value)) return 'null';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const sign = value < 0 ? '-' : '';
  const [mantissa = '', exponentText = '0'] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const length = digits.length;
  const kk = Number(exponentText) + 1; // 10^(kk-1) <= |value| < 10^kk
  const k = kk - length;
  let body: string;
  if (k >= 0 && kk <= 16) body = `${digits}${'0'.repeat(k)}.0`;
  else if (kk > 0 && kk <= 16) body = `${digits.slice(0, kk)}.${digits.slice(kk)}`;
  else if (kk > -5 && kk <= 0) body = `0.${'0'.repeat(-kk)}${digits}`;
  else if (length === 1) body = `${digits}e${kk - 1}`;
  else body = `${digits[0]}.${digits.slice(1)}e${kk - 1}`;
  return sign + body;
}
