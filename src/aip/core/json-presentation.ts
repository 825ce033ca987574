// The JSON presentation of objects (spec 9.4): writing it with canonical key
// order, base64 content and exact integers, and reading it back through the
// same schema checks. Presentation only: IDs always come from the CBOR bytes.
import { DEFAULT_JSON_LIMITS, JsonError, parseJson as parseLosslessJson, textPosition, type JsonValue } from '../../common/json.js';
import { MAX_ARRAY_ITEMS, MAX_MAP_ENTRIES, type CborValue } from './cbor-profile.js';
import { encodeObject, type Encoded } from './codec.js';
import { failure, success, type Outcome } from './errors.js';
import { quoted } from './quote.js';
import type { AipObject, Id } from './objects.js';
import { objectToValue, validateObjectValue } from './schemas.js';

/** A JSON tree whose objects are Maps (order kept, any key safe) and whose integers may be bigints. */
export type JsonTree = null | boolean | string | number | bigint | readonly JsonTree[] | ReadonlyMap<string, JsonTree>;

const MAX_JSON_DEPTH = 32;

// ---------------------------------------------------------------- writer

/** What the writer takes: a JSON tree whose byte strings (artifact content) are written as base64. */
type Presentable = JsonTree | Uint8Array | readonly Presentable[] | ReadonlyMap<string, Presentable>;

/**
 * The text comes out in pieces of about this many characters. An object may
 * be 64 MiB of CBOR holding tens of millions of items, whose presentation is
 * beyond V8's longest string: held whole, it ran the process out of memory.
 */
const CHUNK_CHARS = 64 * 1024;

class TextChunks {
  private parts: string[] = [];
  private length = 0;

  push(text: string): void {
    this.parts.push(text);
    this.length += text.length;
  }

  get full(): boolean {
    return this.length >= CHUNK_CHARS;
  }

  take(): string {
    const text = this.parts.join('');
    this.parts = [];
    this.length = 0;
    return text;
  }
}

function writeScalar(value: null | boolean | number | bigint | string, out: TextChunks): void {
  out.push(typeof value === 'string' ? JSON.stringify(value) : String(value));
}

/** Bytes of content per base64 piece: a multiple of 3, so the pieces join into one padded text. */
const BASE64_PIECE_BYTES = (CHUNK_CHARS / 4) * 3;

/** Artifact content as one base64 string, made in pieces: the text of 400 MB is beyond V8's longest string. */
function* writeBytes(value: Uint8Array, out: TextChunks): Generator<string, void> {
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  out.push('"');
  for (let at = 0; at < bytes.length; at += BASE64_PIECE_BYTES) {
    out.push(bytes.subarray(at, at + BASE64_PIECE_BYTES).toString('base64'));
    if (out.full) yield out.take();
  }
  out.push('"');
}

/** Writes `value` into `out`, yielding a chunk whenever one is full; the caller takes the rest. */
function* write(value: Presentable, indent: string, level: number, out: TextChunks): Generator<string, void> {
  if (value instanceof Uint8Array) {
    yield* writeBytes(value, out);
    return;
  }
  if (!(value instanceof Map) && !Array.isArray(value)) {
    writeScalar(value as null | boolean | number | bigint | string, out);
    return;
  }
  const inner = indent === '' ? '' : `\n${indent.repeat(level + 1)}`;
  const close = indent === '' ? '' : `\n${indent.repeat(level)}`;
  const colon = indent === '' ? ':' : ': ';
  const next = `,${inner}`;
  const empty = Array.isArray(value) ? value.length === 0 : (value as ReadonlyMap<string, Presentable>).size === 0;
  const [open, end] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (empty) {
    out.push(`${open}${end}`);
    return;
  }
  out.push(open);
  let first = true;
  const items: Iterable<Presentable | readonly [string, Presentable]> = Array.isArray(value) ? (value as readonly Presentable[]) : (value as ReadonlyMap<string, Presentable>);
  for (const entry of items) {
    out.push(first ? inner : next);
    first = false;
    let item: Presentable;
    if (Array.isArray(value)) item = entry as Presentable;
    else {
      const [key, member] = entry as readonly [string, Presentable];
      out.push(`${JSON.stringify(key)}${colon}`);
      item = member;
    }
    if (item instanceof Map || Array.isArray(item) || item instanceof Uint8Array) yield* write(item, indent, level + 1, out);
    else writeScalar(item as null | boolean | number | bigint | string, out);
    if (out.full) yield out.take();
  }
  out.push(`${close}${end}`);
}

/** The text of `value` in pieces of about CHUNK_CHARS; `indent` of '' gives one line. */
function* chunksOf(value: Presentable, indent: string): Generator<string, void> {
  const out = new TextChunks();
  yield* write(value, indent, 0, out);
  yield out.take();
}

/** Serialises a JSON tree; `indent` of '' gives one line. Lone surrogates are escaped by JSON.stringify. */
export function stringifyJson(value: JsonTree, indent = ''): string {
  return [...chunksOf(value, indent)].join('');
}

/** stringifyJson in pieces of about 64 KiB, for output of any size. */
export function stringifyJsonChunks(value: JsonTree, indent = ''): Iterable<string> {
  return chunksOf(value, indent);
}

/** `{"id", "type", "version", "data"}` with data in canonical key order (files keys too). */
function objectToPresentable(id: Id, object: AipObject): ReadonlyMap<string, Presentable> {
  const value = objectToValue(object);
  let data = value.get('data') as ReadonlyMap<string, Presentable>;
  const files = data.get('files');
  if (object.type === 'state' && files instanceof Map) {
    const sorted = [...(files as ReadonlyMap<string, Presentable>)].sort(([a], [b]) => {
      const ea = Buffer.from(a);
      const eb = Buffer.from(b);
      return ea.length !== eb.length ? ea.length - eb.length : Buffer.compare(ea, eb);
    });
    data = new Map([...data].map(([key, member]) => [key, key === 'files' ? new Map(sorted) : member]));
  }
  return new Map<string, Presentable>([['id', id], ['type', object.type], ['version', object.version], ['data', data]]);
}

/** An object's JSON presentation in pieces, for output of any size. */
export function objectToJsonChunks(id: Id, object: AipObject, indent = ''): Iterable<string> {
  return chunksOf(objectToPresentable(id, object), indent);
}

export function objectToJson(id: Id, object: AipObject, indent = ''): string {
  return [...objectToJsonChunks(id, object, indent)].join('');
}

// ---------------------------------------------------------------- reader

const MAX_UINT64 = 0xffff_ffff_ffff_ffffn;

class JsonFailure {
  constructor(readonly message: string) {}
}

/** Lossless JSON to a tree of Maps; only unsigned integers up to 2^64-1 are numbers here. */
function toJsonTree(value: JsonValue): JsonTree {
  if (typeof value === 'number') throw new JsonFailure('only integers are allowed (no fractions or exponents)');
  if (typeof value === 'bigint') {
    if (value < 0n) throw new JsonFailure('negative numbers are not allowed');
    if (value > MAX_UINT64) throw new JsonFailure('integer out of the unsigned 64-bit range');
    return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  }
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(toJsonTree);
  const out = new Map<string, JsonTree>();
  for (const key of Object.keys(value)) out.set(key, toJsonTree(value[key] as JsonValue));
  return out;
}

/**
 * Whether valid JSON text has a minus sign outside its strings, where it can
 * only start a number. The parser reads `-0` as the integer 0, so its sign
 * is found here: spec 9.4 refuses negative values.
 */
function hasNegativeNumber(text: string): boolean {
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // the escaped character cannot end the string
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2d) return true;
  }
  return false;
}

/**
 * Strict JSON through the project's lossless parser: duplicate members,
 * fractions, exponents and negative numbers (`-0` included) are refused;
 * integers stay exact.
 */
/** The most items one array, and entries one map, may hold: the CBOR reader's bounds (D69); tests lower them. */
export interface ItemBounds {
  readonly arrayItems: number;
  readonly mapEntries: number;
}

const ITEM_BOUNDS: ItemBounds = { arrayItems: MAX_ARRAY_ITEMS, mapEntries: MAX_MAP_ENTRIES };

export function parseJson(text: string, maxBytes = DEFAULT_JSON_LIMITS.maxBytes, bounds = ITEM_BOUNDS): Outcome<JsonTree> {
  try {
    // Past the envelope's few, every object of a valid presentation holds a
    // 64-character ID (a file entry, an effect's entry, a capture) and every
    // array is a field: one container per 32 characters is never reached
    // (the CBOR reader's bound). Without it, megabytes of `{}` ran out of memory.
    const maxContainers = Math.floor(text.length / 32) + 16;
    // Met here before V8's own limits end the process (an array) or throw (a Map).
    const value = parseLosslessJson(text, {
      maxBytes,
      maxDepth: MAX_JSON_DEPTH,
      rejectDuplicateKeys: true,
      maxContainers,
      maxArrayItems: bounds.arrayItems,
      maxObjectMembers: bounds.mapEntries,
    });
    if (hasNegativeNumber(text)) throw new JsonFailure('negative numbers are not allowed');
    return success(toJsonTree(value));
  } catch (error) {
    if (error instanceof JsonFailure) return failure('object.envelope', `invalid JSON: ${error.message}`);
    if (error instanceof JsonError && error.code === 'json_too_many_items') {
      return failure('cbor.too_large', `the JSON presentation has ${error.excess ?? 'too many items'}, more than this implementation holds`);
    }
    if (error instanceof JsonError) {
      // Where the text stops being JSON, so a hand-written file can be mended.
      const at = error.offset === undefined ? undefined : textPosition(text, error.offset);
      return failure('object.envelope', `invalid JSON${at === undefined ? '' : ` at line ${at.line}, column ${at.column}`}: ${error.message}`);
    }
    throw error;
  }
}

function decodeBase64(text: string): Uint8Array | undefined {
  // No pattern test first: a regular expression over megabytes of base64
  // overflowed the stack. Node's decoder skips what is not base64, so the
  // round trip below is the whole check: it accepts only the alphabet,
  // padded, with no stray padding bits (two texts must not name one content).
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? new Uint8Array(bytes) : undefined;
}

/** Reads an object's JSON presentation; `id`, when present, must equal the computed ID. */
export function objectFromJson(text: string, maxBytes = DEFAULT_JSON_LIMITS.maxBytes, bounds = ITEM_BOUNDS): Outcome<Encoded> {
  const parsed = parseJson(text, maxBytes, bounds);
  if (!parsed.ok) return parsed;
  const tree = parsed.value;
  if (!(tree instanceof Map)) return failure('object.envelope', 'the JSON presentation must be an object');
  const top = tree as ReadonlyMap<string, JsonTree>;
  for (const key of top.keys()) {
    if (!['id', 'type', 'version', 'data'].includes(key)) return failure('object.envelope', `unknown member ${quoted(key)}`);
  }
  const claimed = top.get('id');
  if (claimed !== undefined && typeof claimed !== 'string') return failure('object.envelope', 'id must be a string');
  let data = top.get('data');
  // Content that is not canonical base64 stays as it is, so the schema reports
  // it as a wrong type only where spec 2.5 puts that check: after the envelope,
  // the type/version pair, unknown and missing fields, and `kind`.
  const rawContent = top.get('type') === 'artifact' && data instanceof Map ? data.get('content') : undefined;
  const content = typeof rawContent === 'string' ? decodeBase64(rawContent) : undefined;
  if (content !== undefined) {
    data = new Map<string, JsonTree | Uint8Array>([...(data as ReadonlyMap<string, JsonTree>)].map(([k, v]) => [k, k === 'content' ? content : v])) as unknown as JsonTree;
  }
  const envelope = new Map<string, CborValue>();
  for (const key of ['data', 'type', 'version']) {
    const value = key === 'data' ? data : top.get(key);
    if (value !== undefined) envelope.set(key, value as CborValue);
  }
  const checked = validateObjectValue(envelope);
  if (!checked.ok) {
    if (rawContent !== undefined && checked.error.code === 'schema.type' && checked.error.message.startsWith('data.content:')) {
      const expected = typeof rawContent === 'string' ? 'not canonical base64 (RFC 4648 section 4, padded)' : 'expected a base64 string';
      return failure('schema.type', `data.content: ${expected}`);
    }
    return checked;
  }
  const encoded = encodeObject(checked.value);
  if (!encoded.ok) return encoded;
  if (claimed !== undefined && claimed !== encoded.value.id) {
    return failure('object.id', `the given id ${claimed.slice(0, 80)} differs from the computed ID ${encoded.value.id}`);
  }
  return encoded;
}
