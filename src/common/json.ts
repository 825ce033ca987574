// Lossless, bounded JSON for untrusted input and exact JSON renderings for output.
// A token without fraction or exponent parses to a bigint and anything else to a
// number, so `1` and `1.0` stay distinguishable and 64-bit integers stay exact.
// Owns no I/O; callers decide limits and which rendering a format needs.

import { randomBytes } from 'node:crypto';
import { SafeError, type SafeErrorOptions } from './errors.js';

export type JsonValue = null | boolean | string | number | bigint | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export type JsonErrorCode = 'json_too_large' | 'json_too_deep' | 'json_too_many_containers' | 'json_too_many_items' | 'json_syntax' | 'json_duplicate_key' | 'json_unrepresentable';

export class JsonError extends SafeError<JsonErrorCode> {
  override readonly name = 'JsonError';
  /** For `json_syntax`: the UTF-16 index where the text stops being JSON (a caller may show it as a line and column). */
  readonly offset: number | undefined;
  /** For `json_too_many_items`: what there is too much of ("an array of more than N items"), for a caller's own message. */
  readonly excess: string | undefined;

  constructor(code: JsonErrorCode, safeMessage: string, options: SafeErrorOptions & { readonly offset?: number; readonly excess?: string } = {}) {
    super(code, safeMessage, options);
    this.offset = options.offset;
    this.excess = options.excess;
  }
}

/** Line and column (1-based; columns in characters) of a UTF-16 offset in `text`, to show where a syntax error stopped the parse. */
export function textPosition(text: string, offset: number): { readonly line: number; readonly column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: [...before.slice(lineStart)].length + 1 };
}

export interface JsonParseLimits {
  /** Maximum UTF-8 size of the text; checked before any parsing. */
  readonly maxBytes: number;
  /** Maximum nesting of arrays and objects; the top-level container is depth 1. */
  readonly maxDepth: number;
  /** Reject duplicate member names instead of keeping the last one. */
  readonly rejectDuplicateKeys?: boolean;
  /**
   * Most arrays and objects the document may hold (each `{}` is two bytes of
   * text and about a hundred of heap); unbounded when absent.
   */
  readonly maxContainers?: number;
  /**
   * Most items one array, and members one object, may hold; unbounded when
   * absent. Past about 112 million items V8 ends the process instead of
   * throwing, and a Map refuses its 2^24th entry, so a caller whose text may
   * be that long and that builds Maps sets them.
   */
  readonly maxArrayItems?: number;
  readonly maxObjectMembers?: number;
  /**
   * A float token beyond binary64 (`1e400`) becomes ±Infinity, and the tokens
   * `NaN`, `Infinity` and `-Infinity` (what Python's json.dumps writes for
   * non-finite floats) become those numbers, instead of failing the document,
   * as Python's json module and the reference's SDK read them; the caller
   * must then refuse the value itself (MCP requests answer validation_failed).
   */
  readonly keepNonFiniteFloats?: boolean;
}

export const DEFAULT_JSON_LIMITS: JsonParseLimits = { maxBytes: 4 * 1024 * 1024, maxDepth: 64 };

/** An object that is not an array or null, for a value of unknown shape (a message not yet checked against a schema). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return isPlainObject(value);
}

export function utf8ByteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Parses untrusted JSON text; size is checked before parsing, depth while parsing. */
export function parseJson(text: string, limits: JsonParseLimits = DEFAULT_JSON_LIMITS): JsonValue {
  // UTF-16 length bounds UTF-8 size from below by a factor of 3, so a cheap
  // check avoids measuring huge strings.
  if (text.length > limits.maxBytes || utf8ByteLength(text) > limits.maxBytes) {
    throw new JsonError('json_too_large', 'The JSON document is too large.');
  }
  return new LosslessParser(text, limits).parseDocument();
}

/**
 * parseJson that also tells, in the same pass, whether the text is exactly
 * canonicalJson of its value (no whitespace, keys in UTF-16 order, only the
 * profile's escapes, numbers in their shortest form), so a reader can check
 * canonical form without rendering the value again.
 */
export function parseJsonNotingForm(text: string, limits: JsonParseLimits = DEFAULT_JSON_LIMITS): { value: JsonValue; canonical: boolean } {
  if (text.length > limits.maxBytes || utf8ByteLength(text) > limits.maxBytes) {
    throw new JsonError('json_too_large', 'The JSON document is too large.');
  }
  const parser = new LosslessParser(text, limits);
  const value = parser.parseDocument();
  return { value, canonical: parser.canonical };
}

/** Space, tab, LF, CR; false past the end of the text (NaN). */
function isJsonWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/**
 * The rest of a string token without escapes or controls, through its
 * closing quote: matched natively in one step, where the loop below goes
 * code unit by code unit. Without the `u` flag it runs over UTF-16 code
 * units, as the loop does, lone surrogates included.
 */
const PLAIN_STRING_REST = /[^"\\\u0000-\u001f]*"/y;

const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;

/**
 * Where the string token whose opening quote is at `start` stops being JSON:
 * a control character, the letter of an unknown escape, the first bad digit
 * of a `\u` escape, or the end of the text when the closing quote is missing;
 * undefined when the token is a valid string. A loop, not a regular
 * expression: a repeated group would backtrack over every character of a
 * long string.
 */
export function jsonStringStopsAt(text: string, start: number): number | undefined {
  if (text[start] !== '"') return start;
  let at = start + 1;
  for (;;) {
    // Skip a run of plain characters; it ends at a quote, a backslash, a control or the end.
    PLAIN_RUN.lastIndex = at;
    PLAIN_RUN.test(text);
    at = PLAIN_RUN.lastIndex;
    if (at >= text.length) return text.length;
    const code = text.charCodeAt(at);
    if (code === 0x22) return undefined;
    if (code < 0x20) return at;
    const escape = text[at + 1];
    if (escape === undefined) return text.length;
    if (escape === 'u') {
      // Past the end charCodeAt is NaN, no hex digit: a cut escape stops at the end.
      for (let digit = at + 2; digit < at + 6; digit++) if (!isHexDigit(text.charCodeAt(digit))) return digit;
      at += 6;
    } else if ('"\\/bfnrt'.includes(escape)) {
      at += 2;
    } else {
      return at + 1;
    }
  }
}

function isHexDigit(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

/** Python's spellings of non-finite floats (see keepNonFiniteFloats). */
const NON_FINITE_TOKENS: readonly (readonly [string, number])[] = [
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
];

class LosslessParser {
  private pos = 0;
  /** Cleared at the first thing canonicalJson would not have written. */
  canonical = true;
  private containersLeft: number;

  constructor(
    private readonly text: string,
    private readonly limits: JsonParseLimits,
  ) {
    this.containersLeft = limits.maxContainers ?? Number.POSITIVE_INFINITY;
  }

  parseDocument(): JsonValue {
    this.skipWhitespace();
    const value = this.parseValue(0);
    this.skipWhitespace();
    if (this.pos !== this.text.length) this.fail();
    return value;
  }

  private fail(offset = this.pos): never {
    throw new JsonError('json_syntax', 'The JSON document is malformed.', { offset });
  }

  /** A string token that is not JSON, placed where it breaks rather than at its opening quote. */
  private failInString(): never {
    this.fail(jsonStringStopsAt(this.text, this.pos) ?? this.pos);
  }

  private skipWhitespace(): void {
    // Most calls find none (canonical text has none): one test, no loop.
    if (!isJsonWhitespace(this.text.charCodeAt(this.pos))) return;
    let pos = this.pos + 1;
    while (isJsonWhitespace(this.text.charCodeAt(pos))) pos++;
    this.pos = pos;
    this.canonical = false;
  }

  private parseValue(depth: number): JsonValue {
    const c = this.text[this.pos];
    switch (c) {
      case '{':
        return this.parseObject(depth + 1);
      case '[':
        return this.parseArray(depth + 1);
      case '"':
        return this.parseString();
      case 't':
        return this.parseLiteral('true', true);
      case 'f':
        return this.parseLiteral('false', false);
      case 'n':
        return this.parseLiteral('null', null);
      default:
        return this.parseNumber();
    }
  }

  private tooManyItems(what: string): never {
    throw new JsonError('json_too_many_items', `The JSON document has ${what}.`, { offset: this.pos, excess: what });
  }

  private enter(depth: number): void {
    if (depth > this.limits.maxDepth) throw new JsonError('json_too_deep', 'The JSON document is nested too deeply.');
    if (--this.containersLeft < 0) throw new JsonError('json_too_many_containers', 'The JSON document holds too many arrays and objects.', { offset: this.pos });
  }

  private parseObject(depth: number): JsonObject {
    this.enter(depth);
    this.pos++;
    const result: JsonObject = {};
    let previous: string | undefined;
    let ascending = true;
    this.skipWhitespace();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return result;
    }
    for (let members = 0; ; members++) {
      if (members === this.limits.maxObjectMembers) this.tooManyItems(`an object of more than ${members} members`);
      this.skipWhitespace();
      if (this.text[this.pos] !== '"') this.fail();
      const key = this.parseString();
      if (previous !== undefined && !(key > previous)) ascending = false;
      // While every key so far ascended, one above the last repeats none of them.
      if (!ascending && this.limits.rejectDuplicateKeys && Object.hasOwn(result, key)) throw new JsonError('json_duplicate_key', 'The JSON document repeats a member name.');
      if (!ascending) this.canonical = false;
      previous = key;
      this.skipWhitespace();
      if (this.text[this.pos] !== ':') this.fail();
      this.pos++;
      this.skipWhitespace();
      const value = this.parseValue(depth);
      setMember(result, key, value);
      this.skipWhitespace();
      // A syntax error is placed at the character that breaks the text, not after it.
      const next = this.text[this.pos];
      if (next !== ',' && next !== '}') this.fail();
      this.pos++;
      if (next === '}') return result;
    }
  }

  private parseArray(depth: number): JsonValue[] {
    this.enter(depth);
    this.pos++;
    const result: JsonValue[] = [];
    this.skipWhitespace();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return result;
    }
    for (;;) {
      if (result.length === this.limits.maxArrayItems) this.tooManyItems(`an array of more than ${result.length} items`);
      this.skipWhitespace();
      result.push(this.parseValue(depth));
      this.skipWhitespace();
      const next = this.text[this.pos];
      if (next !== ',' && next !== ']') this.fail();
      this.pos++;
      if (next === ']') return result;
    }
  }

  private parseLiteral<T extends JsonValue>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) this.fail();
    this.pos += word.length;
    return value;
  }

  private parseString(): string {
    const text = this.text;
    PLAIN_STRING_REST.lastIndex = this.pos + 1;
    if (PLAIN_STRING_REST.test(text)) {
      const end = PLAIN_STRING_REST.lastIndex;
      const value = text.slice(this.pos + 1, end - 1);
      this.pos = end;
      return value;
    }
    let i = this.pos + 1;
    let out = '';
    let chunkStart = i;
    for (;;) {
      if (i >= text.length) this.failInString();
      const code = text.charCodeAt(i);
      if (code === 0x22) {
        out += text.slice(chunkStart, i);
        this.pos = i + 1;
        return out;
      }
      if (code < 0x20) this.failInString();
      if (code !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(chunkStart, i);
      const esc = text[i + 1];
      if (esc === '/') this.canonical = false;
      switch (esc) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.failInString();
          const code = parseInt(hex, 16);
          // Canonical text escapes this way only the controls without a short escape, in lowercase.
          if (code >= 0x20 || SHORT_ESCAPES[code] !== undefined || hex !== code.toString(16).padStart(4, '0')) this.canonical = false;
          out += String.fromCharCode(code);
          i += 4;
          break;
        }
        default:
          this.failInString();
      }
      i += 2;
      chunkStart = i;
    }
  }

  private parseNumber(): number | bigint {
    if (this.limits.keepNonFiniteFloats) {
      for (const [token, value] of NON_FINITE_TOKENS) {
        if (this.text.startsWith(token, this.pos)) {
          this.pos += token.length;
          this.canonical = false;
          return value;
        }
      }
    }
    NUMBER_TOKEN.lastIndex = this.pos;
    const match = NUMBER_TOKEN.exec(this.text);
    if (!match) this.fail();
    const token = match[0];
    this.pos += token.length;
    if (match[2] === undefined && match[3] === undefined) {
      if ((match[1] as string).length > MAX_INTEGER_DIGITS) throw new JsonError('json_unrepresentable', 'The JSON document holds a number out of range.');
      // The token has no leading zero, so it is the integer's shortest form unless it is -0.
      if (token === '-0') this.canonical = false;
      return BigInt(token);
    }
    const value = Number(token);
    if (!Number.isFinite(value) && !this.limits.keepNonFiniteFloats) throw new JsonError('json_unrepresentable', 'The JSON document holds a number out of range.');
    if (this.canonical && (!Number.isFinite(value) || ecmaNumber(value) !== token)) this.canonical = false;
    return value;
  }
}

// Integer tokens longer than Python's default int conversion limit (4300
// digits) are refused as unrepresentable, as a Python server's json module
// refuses them; shorter ones parse (and are then refused by range checks).
const MAX_INTEGER_DIGITS = 4300;
const NUMBER_TOKEN = /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

function setMember(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

/** Converts a lossless value (or an output value with FloatValue marks) to what JSON.parse would have produced. */
export function toPlainJson(value: JsonValue | FloatValue): unknown {
  return mapScalars(value, (scalar) => (typeof scalar === 'bigint' ? Number(scalar) : scalar instanceof FloatValue ? scalar.value : scalar));
}

/**
 * A deep copy of arrays and plain objects with `map` applied to everything
 * else (scalars, FloatValue marks); a `__proto__` member stays data.
 */
function mapScalars(value: unknown, map: (scalar: unknown) => unknown): unknown {
  if (Array.isArray(value)) return value.map((member) => mapScalars(member, map));
  if (typeof value === 'object' && value !== null && !(value instanceof FloatValue)) {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      const mapped = mapScalars(member, map);
      if (key === '__proto__') Object.defineProperty(out, key, { value: mapped, enumerable: true, writable: true, configurable: true });
      else out[key] = mapped;
    }
    return out;
  }
  return map(value);
}

// ---------------------------------------------------------------------------
// Renderings

export type KeyOrder = 'insertion' | 'utf16' | 'codepoint';
/**
 * How numbers are written. 'ecmascript': Number#toString. 'python': integral
 * plain numbers as integers, FloatValue and fractional numbers as Python's
 * float repr (`1.0`, `1e+16`), matching a Python server's float fields.
 * 'lossless': every number as a float repr and every bigint as an integer,
 * so that parseJson gives back exactly the same lossless value.
 */
export type FloatStyle = 'ecmascript' | 'python' | 'lossless';

/** Marks an output number as a float even when integral (a `number` field holding 1 renders `1.0` in Python style). */
export class FloatValue {
  constructor(readonly value: number) {}
  toJSON(): number {
    return this.value;
  }
}

export interface RenderOptions {
  readonly keyOrder: KeyOrder;
  /** Escape every non-ASCII character as \uXXXX (Python's ensure_ascii). */
  readonly asciiOnly: boolean;
  /** How non-integer numbers are written: ECMAScript `1` or Python `1.0`. */
  readonly floatStyle: FloatStyle;
  /** Reject lone surrogates instead of escaping them. */
  readonly rejectLoneSurrogates?: boolean;
}

/** Renders any value (plain or lossless) as compact JSON with the chosen conventions. */
export function renderJson(value: unknown, options: RenderOptions): string {
  return render(value, options);
}

/** The project's canonical JSON (RFC 8785 style): sorted UTF-16 keys, no whitespace, ECMAScript numbers. */
export function canonicalJson(value: unknown): string {
  return renderJson(value, { keyOrder: 'utf16', asciiOnly: false, floatStyle: 'ecmascript', rejectLoneSurrogates: true });
}

/** Byte size of the canonical rendering, the measure used for bounds. */
export function canonicalJsonByteLength(value: unknown): number {
  return utf8ByteLength(canonicalJson(value));
}

// String concatenation (ropes) rather than parts and join: renderings are
// many small pieces, and this is the hot path of every response and export.
function render(value: unknown, options: RenderOptions): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string':
      return quoteString(value, options);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return value.toString();
    case 'number': {
      const asFloat = options.floatStyle === 'lossless' || (options.floatStyle === 'python' && !Number.isInteger(value));
      return asFloat ? pythonFloat(finite(value)) : ecmaNumber(value);
    }
    case 'object':
      break;
    default:
      throw new JsonError('json_unrepresentable', 'The value cannot be represented as JSON.');
  }
  if (value instanceof FloatValue) return options.floatStyle === 'ecmascript' ? ecmaNumber(value.value) : pythonFloat(finite(value.value));
  if (Array.isArray(value)) {
    let out = '[';
    for (let index = 0; index < value.length; index++) {
      if (index > 0) out += ',';
      out += render(value[index], options);
    }
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (const key of orderKeys(Object.keys(record), options.keyOrder)) {
    const member = record[key];
    if (member === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += quoteString(key, options) + ':' + render(member, options);
  }
  return out + '}';
}

/** `keys` in UTF-16 order, sorted in place only when they are not in it already (decoded and stored objects mostly are). */
export function inUtf16Order(keys: string[]): string[] {
  for (let i = 1; i < keys.length; i++) {
    if ((keys[i - 1] as string) > (keys[i] as string)) return keys.sort();
  }
  return keys;
}

function orderKeys(keys: string[], order: KeyOrder): string[] {
  if (order === 'insertion') return keys;
  if (order === 'utf16') return inUtf16Order(keys);
  return keys.sort(compareCodePoints);
}

/** Orders by code points (UTF-16 order differs above U+FFFF); allocates nothing, as sorts call it n log n times. */
export function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(j) as number;
    if (x !== y) return x - y;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  // A shorter text that is a prefix of the other comes first.
  return (i < a.length ? 1 : 0) - (j < b.length ? 1 : 0);
}

const SHORT_ESCAPES: Record<number, string> = {
  0x22: '\\"',
  0x5c: '\\\\',
  0x08: '\\b',
  0x09: '\\t',
  0x0a: '\\n',
  0x0c: '\\f',
  0x0d: '\\r',
};

/** Two lowercase hex digits per byte value: hex4 runs once per escaped UTF-16 unit, so its cost counts. */
const HEX_BYTE = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

function hex4(code: number): string {
  return '\\u' + HEX_BYTE[code >> 8]! + HEX_BYTE[code & 0xff]!;
}

// Characters that need more than copying: controls, quote, backslash,
// surrogates (lone ones are refused or escaped), and in ASCII-only output
// everything from U+007F.
const PLAIN_UNSAFE = /[\u0000-\u001f"\\\ud800-\udfff]/;
const ASCII_UNSAFE = /[\u0000-\u001f"\\\u007f-\uffff]/;

function quoteString(text: string, options: RenderOptions): string {
  if (!(options.asciiOnly ? ASCII_UNSAFE : PLAIN_UNSAFE).test(text)) return '"' + text + '"';
  let out = '"';
  let chunkStart = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    let escaped: string | undefined;
    if (code < 0x20 || code === 0x22 || code === 0x5c) {
      escaped = SHORT_ESCAPES[code] ?? hex4(code);
    } else if (code >= 0xd800 && code <= 0xdfff) {
      const isHigh = code <= 0xdbff;
      const next = text.charCodeAt(i + 1);
      const paired = isHigh && next >= 0xdc00 && next <= 0xdfff;
      if (!paired) {
        if (options.rejectLoneSurrogates) throw new JsonError('json_unrepresentable', 'The text holds a lone surrogate.');
        escaped = hex4(code);
      } else if (options.asciiOnly) {
        escaped = hex4(code) + hex4(next);
        out += text.slice(chunkStart, i) + escaped;
        i++;
        chunkStart = i + 1;
        continue;
      } else {
        i++;
        continue;
      }
    } else if (options.asciiOnly && code >= 0x7f) {
      escaped = hex4(code);
    }
    if (escaped !== undefined) {
      out += text.slice(chunkStart, i) + escaped;
      chunkStart = i + 1;
    }
  }
  return out + text.slice(chunkStart) + '"';
}

function finite(value: number): number {
  if (!Number.isFinite(value)) throw new JsonError('json_unrepresentable', 'The value cannot be represented as JSON.');
  return value;
}

// JSON.stringify refuses bigints and writes an integral float as `1`. Exact
// numbers therefore travel through it as stand-ins: a string holding U+0000,
// a per-process random marker and the number's exact text, turned back into
// that bare number afterwards; no other string can carry the marker, so
// nothing else is touched.
const NUMBER_MARKER = randomBytes(12).toString('hex');
const NUMBER_STAND_IN = new RegExp(`"\\\\u0000${NUMBER_MARKER}:(-?[0-9]+(?:\\.[0-9]+)?(?:e[+-][0-9]+)?)"`, 'g');

const standIn = (numberText: string): string => `\u0000${NUMBER_MARKER}:${numberText}`;

/** JSON.stringify, except that bigints are written as exact integers. */
export function stringifyExact(value: unknown): string {
  try {
    // Most values hold no bigint: the plain (replacer-free) path is the fast one.
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
  return restoreExactNumbers(JSON.stringify(value, (_key, member: unknown) => (typeof member === 'bigint' ? standIn(member.toString()) : member)));
}

/**
 * A copy of `value` whose bigints are stand-in strings, for a serialiser we
 * do not control (it calls JSON.stringify); restoreExactNumbers then turns
 * its text back into exact integers.
 */
export function withBigIntStandIns(value: unknown): unknown {
  return mapScalars(value, (scalar) => (typeof scalar === 'bigint' ? standIn(scalar.toString()) : scalar));
}

/**
 * withBigIntStandIns for a lossless value (bigints are integers, numbers are
 * floats): floats stand in as their Python repr too, so that `1.0` and
 * 2^63-1 reach a client exactly as the value's losslessJson text has them.
 */
export function withExactNumberStandIns(value: JsonValue): unknown {
  return mapScalars(value, (scalar) => {
    if (typeof scalar === 'bigint') return standIn(scalar.toString());
    return typeof scalar === 'number' ? standIn(pythonFloat(finite(scalar))) : scalar;
  });
}

/** The number stand-ins of JSON text (from the functions above) as bare numbers; other text is untouched. */
export function restoreExactNumbers(text: string): string {
  return text.includes(NUMBER_MARKER) ? text.replace(NUMBER_STAND_IN, '$1') : text;
}

/** Whether bytes of JSON text hold a number stand-in. */
export function holdsNumberStandIn(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(NUMBER_MARKER);
}

/** Renders a lossless value so that parseJson restores it exactly (floats keep `.0`). */
export function losslessJson(value: JsonValue): string {
  return renderJson(value, { keyOrder: 'insertion', asciiOnly: false, floatStyle: 'lossless' });
}

/** Marks every float of a lossless value for Python-style output (`1` stays 1, `1.0` renders 1.0). */
export function markFloats(value: JsonValue): unknown {
  return mapScalars(value, (scalar) => (typeof scalar === 'number' ? new FloatValue(scalar) : scalar));
}

function ecmaNumber(value: number): string {
  if (!Number.isFinite(value)) throw new JsonError('json_unrepresentable', 'The value cannot be represented as JSON.');
  return Object.is(value, -0) ? '0' : String(value);
}

/** Python's repr() of a float: shortest digits, `.0` on integral values, exponent outside [1e-4, 1e16). */
export function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const [mantissa = '', exponentText = '0'] = value.toExponential().split('e');
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (exponent < -4 || exponent >= 16) {
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const expSign = exponent < 0 ? '-' : '+';
    return `${sign}${body}e${expSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const intLength = exponent + 1;
  if (digits.length <= intLength) return `${sign}${digits.padEnd(intLength, '0')}.0`;
  return `${sign}${digits.slice(0, intLength)}.${digits.slice(intLength)}`;
}
