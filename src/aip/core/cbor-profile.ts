// The frozen deterministic CBOR profile of AIP v1 (spec section 2): the closed
// data model, the writer (cborg with RFC 8949 deterministic options, after a
// profile check) and a strict one-pass reader for untrusted bytes. Pure.
// It knows nothing about object schemas; that belongs to schemas.ts.
import { encode as cborgEncode, rfc8949EncodeOptions } from 'cborg';
import { AipError, failure, success, type AipErrorCode, type Outcome } from './errors.js';
import { quoted } from './quote.js';

/** A map in the profile: text keys only; insertion order is presentation order. */
export type CborMap = ReadonlyMap<string, CborValue>;
export type CborValue = number | bigint | string | Uint8Array | boolean | null | readonly CborValue[] | CborMap;

export const MAX_DEPTH = 16;
/**
 * The longest array and the largest map this implementation holds. V8 ends
 * the process (a fatal error, not an exception) when an array grows past
 * about 112 million items, and a Map refuses its 2^24th entry; only a
 * `max_object_bytes` above 100 MiB lets a valid object reach either.
 */
export const MAX_ARRAY_ITEMS = 100_000_000;
export const MAX_MAP_ENTRIES = 16_000_000;
export const DEFAULT_MAX_OBJECT_BYTES = 67_108_864;
const MAX_UINT64 = 0xffff_ffff_ffff_ffffn;

const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function isCborMap(value: CborValue | undefined): value is CborMap {
  return value instanceof Map && value !== NOT_BUILT;
}

export function isCborArray(value: CborValue | undefined): value is readonly CborValue[] {
  return Array.isArray(value);
}

/**
 * Stands, in a decoded value, for a map or array the reader checked but did
 * not build: one past the most any valid object of its size holds (see
 * containerBudget). Neither a map nor an array to isCborMap and isCborArray,
 * so a schema check that reaches one fails there (schema.type).
 */
export const NOT_BUILT: CborMap = new Map<string, CborValue>();

/**
 * How many maps and arrays a reader builds from `length` bytes. A one-byte
 * empty map costs about 200 bytes of heap, so 25 MB of them (an object well
 * under the 64 MiB limit) ran the reader out of memory after minutes. Past
 * the object's few fixed containers, every map of a valid object holds a
 * 64-character ID (a file entry, an effect's entry, a capture: 45 bytes or
 * more each) and every array is a field of its own; one per 32 bytes plus 16
 * is never reached by a valid object.
 */
function containerBudget(length: number): number {
  return Math.floor(length / 32) + 16;
}

export function isUnsigned(value: CborValue | undefined): value is number | bigint {
  return (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) ||
    (typeof value === 'bigint' && value >= 0n && value <= MAX_UINT64);
}

/** Bytewise order of UTF-8 encodings, which is code point order (not UTF-16 order). */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (U+D800..U+DFFF) encode code points above U+FFFF, which sort
    // after every BMP character in UTF-8 even though 0xD800 < 0xE000.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** Canonical order of text map keys: shorter UTF-8 first, then bytewise. */
export function compareMapKeys(a: string, b: string): number {
  const la = utf8Length(a);
  const lb = utf8Length(b);
  return la !== lb ? la - lb : compareUtf8(a, b);
}

export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

// ---------------------------------------------------------------- writer

function checkEncodable(value: CborValue, depth: number, at: string): AipError | undefined {
  // Like the reader (spec 2.5), only arrays and maps count: a scalar inside depth 16 is fine.
  const tooDeep = (): AipError => new AipError('cbor.too_deep', `${at}: nesting deeper than ${MAX_DEPTH}`);
  if (value === null || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') {
    // A non-integer or unsafe number would silently become a float.
    return Number.isSafeInteger(value) && value >= 0
      ? undefined
      : new AipError('cbor.type', `${at}: ${value} is not an unsigned integer`);
  }
  if (typeof value === 'bigint') {
    return value >= 0n && value <= MAX_UINT64 ? undefined : new AipError('cbor.type', `${at}: ${value} is out of the unsigned 64-bit range`);
  }
  if (typeof value === 'string') {
    // A lone surrogate would silently become U+FFFD.
    return value.isWellFormed() ? undefined : new AipError('cbor.utf8', `${at}: text contains a lone surrogate`);
  }
  if (value instanceof Uint8Array) return undefined;
  if (Array.isArray(value)) {
    if (depth > MAX_DEPTH) return tooDeep();
    for (let i = 0; i < value.length; i++) {
      const problem = checkEncodable(value[i] as CborValue, depth + 1, `${at}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (value instanceof Map) {
    if (depth > MAX_DEPTH) return tooDeep();
    for (const [key, item] of value) {
      if (typeof key !== 'string') return new AipError('cbor.key_type', `${at}: a map key is not text`);
      if (!key.isWellFormed()) return new AipError('cbor.utf8', `${at}: a map key contains a lone surrogate`);
      const problem = checkEncodable(item, depth + 1, `${at}.${key}`);
      if (problem) return problem;
    }
    return undefined;
  }
  return new AipError('cbor.type', `${at}: value outside the AIP data model`);
}

/** Deterministic encoding (RFC 8949 4.2.1) of a value of the closed data model. */
export function encodeCanonical(value: CborValue): Outcome<Uint8Array> {
  const problem = checkEncodable(value, 1, '$');
  if (problem) return { ok: false, error: problem };
  return success(cborgEncode(value, rfc8949EncodeOptions));
}

// ---------------------------------------------------------------- reader

class ScanFailure {
  constructor(
    readonly code: AipErrorCode,
    readonly message: string,
  ) {}
}

export interface ScanResult {
  readonly value: CborValue;
  /** Offset just after the item. */
  readonly end: number;
}

class Scanner {
  private pos: number;
  /** Maps and arrays still to build; past it they are checked and stand as NOT_BUILT. */
  private containersLeft: number;

  constructor(
    private readonly bytes: Uint8Array,
    start: number,
  ) {
    this.pos = start;
    this.containersLeft = containerBudget(bytes.length - start);
  }

  offset(): number {
    return this.pos;
  }

  private fail(code: AipErrorCode, what: string): never {
    throw new ScanFailure(code, `${what} at byte ${this.pos}`);
  }

  private remaining(): number {
    return this.bytes.length - this.pos;
  }

  /** Reads an initial byte and its argument; returns major type and argument. */
  private head(): { major: number; arg: number | bigint } {
    if (this.pos >= this.bytes.length) this.fail('cbor.truncated', 'input ends before an item');
    const start = this.pos;
    const initial = this.bytes[this.pos] as number;
    const major = initial >> 5;
    const info = initial & 0x1f;
    if (info === 31) this.fail('cbor.indefinite', 'indefinite length or break');
    if (info >= 28) this.fail('cbor.reserved', `reserved additional information ${info}`);
    if (major === 1) this.fail('cbor.type', 'negative integer');
    if (major === 6) this.fail('cbor.type', 'tag');
    if (major === 7) {
      if (info === 20 || info === 21 || info === 22) {
        this.pos++;
        return { major, arg: info };
      }
      if (info >= 25 && info <= 27) this.fail('cbor.type', 'floating-point number');
      if (info === 23) this.fail('cbor.type', 'undefined');
      this.fail('cbor.type', 'simple value');
    }
    this.pos++;
    if (info < 24) return { major, arg: info };
    const width = 1 << (info - 24);
    if (this.remaining() < width) {
      this.pos = start;
      this.fail('cbor.truncated', 'input ends inside an argument');
    }
    const b = this.bytes;
    const p = this.pos;
    let arg: number | bigint;
    let minimum: number;
    if (width === 1) {
      arg = b[p] as number;
      minimum = 24;
    } else if (width === 2) {
      arg = ((b[p] as number) << 8) | (b[p + 1] as number);
      minimum = 0x100;
    } else if (width === 4) {
      arg = (b[p] as number) * 0x1000000 + (((b[p + 1] as number) << 16) | ((b[p + 2] as number) << 8) | (b[p + 3] as number));
      minimum = 0x10000;
    } else {
      const hi = (b[p] as number) * 0x1000000 + (((b[p + 1] as number) << 16) | ((b[p + 2] as number) << 8) | (b[p + 3] as number));
      const lo = (b[p + 4] as number) * 0x1000000 + (((b[p + 5] as number) << 16) | ((b[p + 6] as number) << 8) | (b[p + 7] as number));
      const big = (BigInt(hi) << 32n) | BigInt(lo);
      arg = big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
      minimum = 0x1_0000_0000;
    }
    if (arg < minimum) {
      this.pos = start;
      this.fail('cbor.not_shortest', 'argument not in its shortest form');
    }
    this.pos += width;
    return { major, arg };
  }

  /** Compares a declared count with the bytes left, before anything is allocated. */
  private checkLength(arg: number | bigint, bytesPerUnit: number, what: string): number {
    const left = this.remaining();
    if (typeof arg === 'bigint' || arg * bytesPerUnit > left) {
      this.fail('cbor.truncated', `declared ${what} length ${arg} exceeds the ${left} remaining bytes`);
    }
    return arg;
  }

  private text(length: number): string {
    const start = this.pos;
    const end = start + length;
    const b = this.bytes;
    let ascii = true;
    for (let i = start; i < end; i++) {
      if ((b[i] as number) >= 0x80) {
        ascii = false;
        break;
      }
    }
    let text: string;
    if (ascii && length <= 64) {
      text = String.fromCharCode(...b.subarray(start, end));
    } else {
      try {
        text = utf8Decoder.decode(b.subarray(start, end));
      } catch (error) {
        // The decoder refuses bad UTF-8 with a TypeError; anything else is a
        // text longer than a JavaScript string holds (max_object_bytes may
        // be up to 1 GiB, a string about 512 MiB).
        if (error instanceof TypeError) this.fail('cbor.utf8', 'invalid UTF-8 in a text string');
        this.fail('cbor.too_large', `a text string of ${length} bytes is more than this implementation holds`);
      }
    }
    this.pos = end;
    return text;
  }

  item(depth: number): CborValue {
    const { major, arg } = this.head();
    switch (major) {
      case 0:
        return arg;
      case 2: {
        const length = this.checkLength(arg, 1, 'byte string');
        const out = this.bytes.slice(this.pos, this.pos + length);
        this.pos += length;
        return out;
      }
      case 3:
        return this.text(this.checkLength(arg, 1, 'text string'));
      case 4: {
        if (depth > MAX_DEPTH) this.fail('cbor.too_deep', `nesting deeper than ${MAX_DEPTH}`);
        const count = this.checkLength(arg, 1, 'array');
        if (count > MAX_ARRAY_ITEMS) this.fail('cbor.too_large', `an array of ${count} items is more than this implementation holds (at most ${MAX_ARRAY_ITEMS})`);
        const build = this.containersLeft > 0;
        this.containersLeft--;
        const out: CborValue[] = [];
        for (let i = 0; i < count; i++) {
          const value = this.item(depth + 1);
          if (build) out.push(value);
        }
        return build ? out : NOT_BUILT;
      }
      case 5: {
        if (depth > MAX_DEPTH) this.fail('cbor.too_deep', `nesting deeper than ${MAX_DEPTH}`);
        const count = this.checkLength(arg, 2, 'map');
        if (count > MAX_MAP_ENTRIES) this.fail('cbor.too_large', `a map of ${count} entries is more than this implementation holds (at most ${MAX_MAP_ENTRIES})`);
        const build = this.containersLeft > 0;
        this.containersLeft--;
        const out = build ? new Map<string, CborValue>() : undefined;
        let previous: Uint8Array | undefined;
        for (let i = 0; i < count; i++) {
          const keyStart = this.pos;
          if (keyStart < this.bytes.length && (this.bytes[keyStart] as number) >> 5 !== 3) {
            this.fail('cbor.key_type', 'map key that is not a text string');
          }
          const key = this.item(depth + 1) as string;
          const encodedKey = this.bytes.subarray(keyStart, this.pos);
          if (previous !== undefined && compareBytes(previous, encodedKey) >= 0) {
            this.pos = keyStart;
            this.fail('cbor.key_order', `map key ${quoted(key)} is not after the previous key`);
          }
          previous = encodedKey;
          const value = this.item(depth + 1);
          out?.set(key, value);
        }
        return out ?? NOT_BUILT;
      }
      default:
        // Major 7 (false, true, null); every other major was rejected in head().
        return arg === 20 ? false : arg === 21 ? true : null;
    }
  }
}

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** Reads the first item of `bytes` from `start`, leaving any following bytes alone. */
export function scanItem(bytes: Uint8Array, start = 0): Outcome<ScanResult> {
  const scanner = new Scanner(bytes, start);
  try {
    const value = scanner.item(1);
    return success({ value, end: scanner.offset() });
  } catch (error) {
    if (error instanceof ScanFailure) return failure(error.code, error.message);
    throw error;
  }
}

/** Decodes exactly one canonical item filling `bytes`, after bounding its size. */
export function decodeCanonical(bytes: Uint8Array, maxBytes = DEFAULT_MAX_OBJECT_BYTES): Outcome<CborValue> {
  if (bytes.length > maxBytes) return failure('cbor.too_large', `${bytes.length} bytes exceed the limit of ${maxBytes}`);
  const scanned = scanItem(bytes);
  if (!scanned.ok) return scanned;
  if (scanned.value.end !== bytes.length) {
    return failure('cbor.trailing', `${bytes.length - scanned.value.end} bytes after the top-level item`);
  }
  return success(scanned.value.value);
}
