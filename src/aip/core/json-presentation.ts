// The JSON presentation of objects (spec 9.4): writing it with canonical key
// order, base64 content and exact integers, and reading it back through the
// same schema checks. Presentation only: IDs always come from the CBOR bytes.
import { type CborValue } from './cbor-profile.js';
import { encodeObject, type Encoded } from './codec.js';
import { failure, success, type Outcome } from './errors.js';
import type { AipObject, Id } from './objects.js';
import { objectToValue, validateObjectValue } from './schemas.js';

/** A JSON tree whose objects are Maps (order kept, any key safe) and whose integers may be bigints. */
export type JsonTree = null | boolean | string | number | bigint | readonly JsonTree[] | ReadonlyMap<string, JsonTree>;

const MAX_JSON_DEPTH = 32;

// ---------------------------------------------------------------- writer

function write(value: JsonTree, indent: string, level: number, out: string[]): void {
  if (value === null || typeof value === 'boolean' || typeof value === 'number') {
    out.push(String(value));
    return;
  }
  if (typeof value === 'bigint') {
    out.push(value.toString());
    return;
  }
  if (typeof value === 'string') {
    out.push(JSON.stringify(value));
    return;
  }
  const inner = indent === '' ? '' : `\n${indent.repeat(level + 1)}`;
  const close = indent === '' ? '' : `\n${indent.repeat(level)}`;
  const colon = indent === '' ? ':' : ': ';
  if (Array.isArray(value)) {
    if (value.length === 0) {
      out.push('[]');
      return;
    }
    out.push('[');
    value.forEach((item: JsonTree, i) => {
      out.push(i === 0 ? inner : `,${inner}`);
      write(item, indent, level + 1, out);
    });
    out.push(`${close}]`);
    return;
  }
  const map = value as ReadonlyMap<string, JsonTree>;
  if (map.size === 0) {
    out.push('{}');
    return;
  }
  out.push('{');
  let first = true;
  for (const [key, item] of map) {
    out.push(first ? inner : `,${inner}`, JSON.stringify(key), colon);
    write(item, indent, level + 1, out);
    first = false;
  }
  out.push(`${close}}`);
}

/** Serialises a JSON tree; `indent` of '' gives one line. Lone surrogates are escaped by JSON.stringify. */
export function stringifyJson(value: JsonTree, indent = ''): string {
  const out: string[] = [];
  write(value, indent, 0, out);
  return out.join('');
}

function toTree(value: CborValue): JsonTree {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (Array.isArray(value)) return value.map(toTree);
  if (value instanceof Map) {
    const out = new Map<string, JsonTree>();
    for (const [k, v] of value as ReadonlyMap<string, CborValue>) out.set(k, toTree(v));
    return out;
  }
  return value as JsonTree;
}

/** `{"id", "type", "version", "data"}` with data in canonical key order (files keys too). */
export function objectToJsonTree(id: Id, object: AipObject): ReadonlyMap<string, JsonTree> {
  const value = objectToValue(object);
  const data = toTree(value.get('data') as CborValue) as ReadonlyMap<string, JsonTree>;
  const files = data.get('files');
  if (object.type === 'state' && files instanceof Map) {
    const sorted = [...(files as ReadonlyMap<string, JsonTree>)].sort(([a], [b]) => {
      const ea = Buffer.from(a);
      const eb = Buffer.from(b);
      return ea.length !== eb.length ? ea.length - eb.length : Buffer.compare(ea, eb);
    });
    (data as Map<string, JsonTree>).set('files', new Map(sorted));
  }
  return new Map<string, JsonTree>([['id', id], ['type', object.type], ['version', object.version], ['data', data]]);
}

export function objectToJson(id: Id, object: AipObject, indent = ''): string {
  return stringifyJson(objectToJsonTree(id, object), indent);
}

// ---------------------------------------------------------------- reader

class JsonFailure {
  constructor(readonly message: string) {}
}

class JsonParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  private fail(problem: string): never {
    throw new JsonFailure(`invalid JSON at offset ${this.pos}: ${problem}`);
  }

  private space(): void {
    while (this.pos < this.text.length) {
      const c = this.text.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos++;
      else break;
    }
  }

  document(): JsonTree {
    this.space();
    const value = this.value(1);
    this.space();
    if (this.pos !== this.text.length) this.fail('text after the document');
    return value;
  }

  private value(depth: number): JsonTree {
    if (depth > MAX_JSON_DEPTH) this.fail('nesting too deep');
    const c = this.text[this.pos];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return this.string();
    if (c !== undefined && c >= '0' && c <= '9') return this.integer();
    if (c === '-') this.fail('negative numbers are not allowed');
    for (const [word, result] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return result;
      }
    }
    return this.fail('unexpected character');
  }

  private integer(): JsonTree {
    const start = this.pos;
    while (this.pos < this.text.length && this.text[this.pos]! >= '0' && this.text[this.pos]! <= '9') this.pos++;
    const digits = this.text.slice(start, this.pos);
    const next = this.text[this.pos];
    if (next === '.' || next === 'e' || next === 'E') this.fail('only integers are allowed (no fractions or exponents)');
    if (digits.length > 1 && digits.startsWith('0')) this.fail('leading zero');
    if (digits.length > 20) this.fail('integer out of the unsigned 64-bit range');
    const big = BigInt(digits);
    if (big > 0xffff_ffff_ffff_ffffn) this.fail('integer out of the unsigned 64-bit range');
    return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }

  private string(): string {
    this.pos++; // opening quote
    let out = '';
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') {
        this.pos++;
        return out;
      }
      if (c === '\\') {
        const e = this.text[this.pos + 1];
        const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (e !== undefined && simple[e] !== undefined) {
          out += simple[e];
          this.pos += 2;
        } else if (e === 'u') {
          const hex = this.text.slice(this.pos + 2, this.pos + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('bad \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          this.pos += 6;
        } else this.fail('bad escape');
        continue;
      }
      if (c.charCodeAt(0) < 0x20) this.fail('control character in a string');
      out += c;
      this.pos++;
    }
  }

  private array(depth: number): JsonTree {
    this.pos++;
    const out: JsonTree[] = [];
    this.space();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.space();
      out.push(this.value(depth + 1));
      this.space();
      const c = this.text[this.pos++];
      if (c === ']') return out;
      if (c !== ',') this.fail('expected , or ]');
    }
  }

  private object(depth: number): JsonTree {
    this.pos++;
    const out = new Map<string, JsonTree>();
    this.space();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.space();
      if (this.text[this.pos] !== '"') this.fail('expected a member name');
      const key = this.string();
      if (out.has(key)) this.fail(`duplicate member ${JSON.stringify(key)}`);
      this.space();
      if (this.text[this.pos++] !== ':') this.fail('expected :');
      this.space();
      out.set(key, this.value(depth + 1));
      this.space();
      const c = this.text[this.pos++];
      if (c === '}') return out;
      if (c !== ',') this.fail('expected , or }');
    }
  }
}

/** Strict JSON: duplicate members, fractions, exponents and negative numbers are refused; integers stay exact. */
export function parseJson(text: string): Outcome<JsonTree> {
  try {
    return success(new JsonParser(text).document());
  } catch (error) {
    if (error instanceof JsonFailure) return failure('object.envelope', error.message);
    throw error;
  }
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function decodeBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  // Non-canonical padding bits would make two texts name one content.
  return bytes.toString('base64') === text ? new Uint8Array(bytes) : undefined;
}

/** Reads an object's JSON presentation; `id`, when present, must equal the computed ID. */
export function objectFromJson(text: string): Outcome<Encoded> {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed;
  const tree = parsed.value;
  if (!(tree instanceof Map)) return failure('object.envelope', 'the JSON presentation is an object');
  const top = tree as ReadonlyMap<string, JsonTree>;
  for (const key of top.keys()) {
    if (!['id', 'type', 'version', 'data'].includes(key)) return failure('object.envelope', `unknown member ${JSON.stringify(key)}`);
  }
  const claimed = top.get('id');
  if (claimed !== undefined && typeof claimed !== 'string') return failure('object.envelope', 'id must be a string');
  let data = top.get('data');
  if (top.get('type') === 'artifact' && data instanceof Map && typeof data.get('content') === 'string') {
    const content = decodeBase64(data.get('content') as string);
    if (content === undefined) return failure('schema.type', 'data.content: not canonical base64 (RFC 4648 section 4, padded)');
    data = new Map<string, JsonTree | Uint8Array>([...(data as ReadonlyMap<string, JsonTree>)].map(([k, v]) => [k, k === 'content' ? content : v])) as unknown as JsonTree;
  } else if (top.get('type') === 'artifact' && data instanceof Map && data.has('content')) {
    return failure('schema.type', 'data.content: expected a base64 string');
  }
  const envelope = new Map<string, CborValue>();
  for (const key of ['data', 'type', 'version']) {
    const value = key === 'data' ? data : top.get(key);
    if (value !== undefined) envelope.set(key, value as CborValue);
  }
  const checked = validateObjectValue(envelope);
  if (!checked.ok) return checked;
  const encoded = encodeObject(checked.value);
  if (!encoded.ok) return encoded;
  if (claimed !== undefined && claimed !== encoded.value.id) {
    return failure('object.id', `the given id ${claimed.slice(0, 80)} differs from the computed ID ${encoded.value.id}`);
  }
  return encoded;
}
