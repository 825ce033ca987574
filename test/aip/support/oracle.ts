// An independent oracle for AIP v1 objects, written only from the seed
// (shared/seeds/003) and the spec (aip-objects.md sections 2 to 6), without
// reference to src/aip (one exception: the order of checks inside a single
// CBOR item, which the spec leaves open, follows docs/decisions-aip.md D2).
// It decodes bytes with its own deterministic CBOR
// reader, checks envelope and schema, and verifies graphs over a store of
// encoded objects. Used by the differential test to compare accept/reject and
// error codes with the product. Test support only.
import { createHash } from 'node:crypto';

export type OValue = number | bigint | string | Uint8Array | boolean | null | OValue[] | OMap;
export type OMap = Map<string, OValue>;
export type OResult = { ok: true; value: OMap; type: string; version: number } | { ok: false; code: string };

// ---------------------------------------------------------------- encoding

// Encodes plain JavaScript values (objects become maps with text keys) under
// the deterministic rules of 2.2. Refuses what the profile cannot hold.
export function oEncode(value: unknown): Uint8Array {
  const out: number[] = [];
  encodeInto(value, out);
  return Uint8Array.from(out);
}

function head(major: number, arg: bigint, out: number[]): void {
  const m = major << 5;
  if (arg < 24n) out.push(m | Number(arg));
  else if (arg < 0x100n) out.push(m | 24, Number(arg));
  else if (arg < 0x10000n) out.push(m | 25, ...beBytes(arg, 2));
  else if (arg < 0x100000000n) out.push(m | 26, ...beBytes(arg, 4));
  else out.push(m | 27, ...beBytes(arg, 8));
}

function beBytes(v: bigint, n: number): number[] {
  const r: number[] = [];
  for (let i = n - 1; i >= 0; i--) r.push(Number((v >> BigInt(8 * i)) & 0xffn));
  return r;
}

function encodeKey(key: string): Uint8Array {
  const out: number[] = [];
  encodeInto(key, out);
  return Uint8Array.from(out);
}

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function encodeInto(value: unknown, out: number[]): void {
  if (value === null) out.push(0xf6);
  else if (value === false) out.push(0xf4);
  else if (value === true) out.push(0xf5);
  else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`oracle encoder: not an unsigned integer: ${value}`);
    head(0, BigInt(value), out);
  } else if (typeof value === 'bigint') {
    if (value < 0n || value >= 2n ** 64n) throw new Error('oracle encoder: bigint out of range');
    head(0, value, out);
  } else if (typeof value === 'string') {
    if (!value.isWellFormed()) throw new Error('oracle encoder: lone surrogate');
    const b = Buffer.from(value, 'utf8');
    head(3, BigInt(b.length), out);
    for (const x of b) out.push(x);
  } else if (value instanceof Uint8Array) {
    head(2, BigInt(value.length), out);
    for (const x of value) out.push(x);
  } else if (Array.isArray(value)) {
    head(4, BigInt(value.length), out);
    for (const item of value) encodeInto(item, out);
  } else if (value instanceof Map || typeof value === 'object') {
    const entries: [string, unknown][] = value instanceof Map ? [...(value as Map<string, unknown>)] : Object.entries(value as object);
    const keyed = entries.map(([k, v]) => ({ k: encodeKey(k), v }));
    keyed.sort((a, b) => compareBytes(a.k, b.k));
    head(5, BigInt(keyed.length), out);
    for (const { k, v } of keyed) {
      for (const x of k) out.push(x);
      encodeInto(v, out);
    }
  } else throw new Error(`oracle encoder: unsupported ${typeof value}`);
}

export function oId(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

// ---------------------------------------------------------------- decoding

class Fail extends Error {
  constructor(readonly code: string) { super(code); }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
export const MAX_OBJECT_BYTES = 64 * 1024 * 1024;

// Section 2.5 step 2: one pass, first violation met.
export function oDecodeCbor(bytes: Uint8Array): { ok: true; value: OValue } | { ok: false; code: string } {
  if (bytes.length > MAX_OBJECT_BYTES) return { ok: false, code: 'cbor.too_large' };
  let pos = 0;
  const need = (n: number | bigint): void => {
    if (BigInt(bytes.length - pos) < BigInt(n)) throw new Fail('cbor.truncated');
  };
  const readArg = (ai: number): { arg: bigint; width: number } => {
    if (ai < 24) return { arg: BigInt(ai), width: 0 };
    const width = ai === 24 ? 1 : ai === 25 ? 2 : ai === 26 ? 4 : 8;
    need(width);
    let arg = 0n;
    for (let i = 0; i < width; i++) arg = (arg << 8n) | BigInt(bytes[pos + i]!);
    pos += width;
    return { arg, width };
  };
  const shortest = (arg: bigint, width: number): boolean =>
    width === 0 || (width === 1 && arg >= 24n) || (width === 2 && arg >= 0x100n) ||
    (width === 4 && arg >= 0x10000n) || (width === 8 && arg >= 0x100000000n);

  const item = (depth: number): OValue => {
    need(1);
    const ib = bytes[pos++]!;
    const major = ib >> 5;
    const ai = ib & 31;
    if (ai === 31) throw new Fail('cbor.indefinite');
    if (ai >= 28) throw new Fail('cbor.reserved');
    if (major === 7) {
      if (ai === 20) return false;
      if (ai === 21) return true;
      if (ai === 22) return null;
      throw new Fail('cbor.type');
    }
    // The spec leaves the order inside one item open; docs/decisions-aip.md
    // D2 fixes it: type before the argument's length and width.
    if (major === 1 || major === 6) throw new Fail('cbor.type');
    const { arg, width } = readArg(ai);
    if (!shortest(arg, width)) throw new Fail('cbor.not_shortest');
    if (major === 0) return arg <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(arg) : arg;
    if (major === 2 || major === 3) {
      need(arg);
      const n = Number(arg);
      const slice = bytes.subarray(pos, pos + n);
      pos += n;
      if (major === 2) return Uint8Array.from(slice);
      try {
        return utf8.decode(slice);
      } catch {
        throw new Fail('cbor.utf8');
      }
    }
    if (depth + 1 > 16) throw new Fail('cbor.too_deep');
    if (major === 4) {
      need(arg);
      const list: OValue[] = [];
      for (let i = 0n; i < arg; i++) list.push(item(depth + 1));
      return list;
    }
    // major 5
    need(arg * 2n);
    const map: OMap = new Map();
    let prev: Uint8Array | null = null;
    for (let i = 0n; i < arg; i++) {
      const start = pos;
      need(1);
      // D2: at a key position the major type is peeked first.
      if (bytes[pos]! >> 5 !== 3) throw new Fail('cbor.key_type');
      const key = item(depth + 1) as string;
      const encoded = bytes.subarray(start, pos);
      if (prev !== null && compareBytes(prev, encoded) >= 0) throw new Fail('cbor.key_order');
      prev = encoded;
      map.set(key, item(depth + 1));
    }
    return map;
  };

  try {
    const value = item(0);
    if (pos !== bytes.length) return { ok: false, code: 'cbor.trailing' };
    return { ok: true, value };
  } catch (e) {
    if (e instanceof Fail) return { ok: false, code: e.code };
    throw e;
  }
}

// ---------------------------------------------------------------- value rules

const WHITE_SPACE = new Set<number>([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680,
  0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

export function oNonempty(s: string): boolean {
  for (const ch of s) if (!WHITE_SPACE.has(ch.codePointAt(0)!)) return true;
  return false;
}

export function oIsPath(s: string): boolean {
  if (s.length === 0 || s.includes('\\') || s.includes('\0')) return false;
  const parts = s.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return false;
  return parts[0] !== '.aip';
}

export function oPathConflict(paths: Iterable<string>): boolean {
  const set = new Set(paths);
  for (const p of set) {
    let i = p.indexOf('/');
    while (i !== -1) {
      if (set.has(p.slice(0, i))) return true;
      i = p.indexOf('/', i + 1);
    }
  }
  return false;
}

const TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{9}Z$/;

export function oIsTime(s: string): boolean {
  const m = TIME.exec(s);
  if (m === null) return false;
  const [y, mo, d, h, mi, sec] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || sec > 59 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
  return d <= days;
}

const ID = /^[0-9a-f]{64}$/;

function isMap(v: OValue | undefined): v is OMap {
  return v instanceof Map;
}
function isUint(v: OValue | undefined): v is number | bigint {
  return (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'bigint' && v >= 0n);
}

type Check = (v: OValue) => void;

const text: Check = (v) => { if (typeof v !== 'string') throw new Fail('schema.type'); };
const nonempty: Check = (v) => { text(v); if (!oNonempty(v as string)) throw new Fail('schema.nonempty'); };
const id: Check = (v) => { text(v); if (!ID.test(v as string)) throw new Fail('schema.id'); };
const ids: Check = (v) => {
  if (!Array.isArray(v)) throw new Fail('schema.type');
  v.forEach(id);
  for (let i = 1; i < v.length; i++) if ((v[i - 1] as string) >= (v[i] as string)) throw new Fail('schema.ids');
};
const time: Check = (v) => { text(v); if (!oIsTime(v as string)) throw new Fail('schema.time'); };
const path: Check = (v) => { text(v); if (!oIsPath(v as string)) throw new Fail('schema.path'); };
const bool: Check = (v) => { if (typeof v !== 'boolean') throw new Fail('schema.type'); };
const uint: Check = (v) => { if (!isUint(v)) throw new Fail('schema.type'); };
const positive: Check = (v) => { uint(v); if (v === 0 || v === 0n) throw new Fail('schema.range'); };
const textArray: Check = (v) => { if (!Array.isArray(v)) throw new Fail('schema.type'); v.forEach(text); };
const bytesField: Check = (v) => { if (!(v instanceof Uint8Array)) throw new Fail('schema.type'); };
const oneOf = (...allowed: string[]): Check => (v) => { text(v); if (!allowed.includes(v as string)) throw new Fail('schema.enum'); };

// A nested map with an exact key set: unknown keys, then missing keys, then
// each value in canonical key order.
function record(fields: [string, Check][]): Check {
  return (v) => {
    if (!isMap(v)) throw new Fail('schema.type');
    checkFields(v, fields);
  };
}
function checkFields(v: OMap, fields: [string, Check][]): void {
  const names = new Set(fields.map(([k]) => k));
  for (const k of v.keys()) if (!names.has(k)) throw new Fail('schema.unknown_field');
  for (const [k] of fields) if (!v.has(k)) throw new Fail('schema.missing_field');
  const ordered = [...fields].sort((a, b) => compareBytes(encodeKey(a[0]), encodeKey(b[0])));
  for (const [k, check] of ordered) check(v.get(k)!);
}

const fileEntry = record([['artifact', id], ['executable', bool]]);
const nullableEntry: Check = (v) => { if (v !== null) fileEntry(v); };
const effect = record([['path', path], ['after', nullableEntry], ['before', nullableEntry]]);
const effects: Check = (v) => { if (!Array.isArray(v)) throw new Fail('schema.type'); v.forEach(effect); };
const files: Check = (v) => {
  if (!isMap(v)) throw new Fail('schema.type');
  for (const [k, entry] of v) { path(k); fileEntry(entry); }
  if (oPathConflict(v.keys())) throw new Fail('schema.path_conflict');
};
const capture = record([['artifact', id], ['truncated', bool]]);
const argvField: Check = (v) => { textArray(v); if ((v as OValue[]).length === 0) throw new Fail('schema.argv'); };
const exitCode: Check = (v) => { if (v !== null) uint(v); };
const cwdV1: Check = (v) => { text(v); if (v !== '.' && !oIsPath(v as string)) throw new Fail('schema.path'); };

type Schema = { fields: [string, Check][]; cross?: (d: OMap) => void };

function entryEq(a: OValue, b: OValue): boolean {
  if (a === null || b === null) return a === b;
  const x = a as OMap;
  const y = b as OMap;
  return x.get('artifact') === y.get('artifact') && x.get('executable') === y.get('executable');
}

function utf8Less(a: string, b: string): number {
  return compareBytes(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

const SCHEMAS: Record<string, Schema> = {
  'artifact/1': { fields: [['kind', oneOf('file')], ['content', bytesField]] },
  'intent/1': {
    fields: [['goal', nonempty], ['title', nonempty], ['context', ids], ['parents', ids], ['created_at', time], ['constraints', textArray]],
  },
  'operation/1': {
    fields: [['inputs', ids], ['intent', id], ['effects', effects], ['base_state', id]],
    cross: (d) => {
      const list = d.get('effects') as OMap[];
      for (let i = 1; i < list.length; i++) {
        if (utf8Less(list[i - 1]!.get('path') as string, list[i]!.get('path') as string) >= 0) throw new Fail('schema.effects');
      }
      for (const e of list) {
        const before = e.get('before')!;
        const after = e.get('after')!;
        if ((before === null && after === null) || entryEq(before, after)) throw new Fail('schema.effect');
      }
      const expected = [...new Set(list.filter((e) => e.get('before') !== null).map((e) => (e.get('before') as OMap).get('artifact') as string))].sort();
      const inputs = d.get('inputs') as string[];
      if (expected.length !== inputs.length || expected.some((x, i) => x !== inputs[i])) throw new Fail('schema.inputs');
    },
  },
  'state/1': {
    fields: [['files', files], ['intents', ids], ['parents', ids], ['operations', ids]],
    cross: (d) => {
      const n = (k: string): number => (d.get(k) as OValue[]).length;
      const root = (d.get('files') as OMap).size === 0 && n('intents') === 0 && n('parents') === 0 && n('operations') === 0;
      const single = n('intents') === 1 && n('parents') === 1 && n('operations') === 1;
      if (!root && !single) throw new Fail('schema.state_shape');
    },
  },
  'evidence/1': {
    fields: [
      ['cwd', cwdV1], ['kind', nonempty], ['notes', text], ['state', id], ['result', oneOf('pass', 'fail', 'unknown')],
      ['command', nonempty], ['platform', nonempty], ['reporter', nonempty], ['operations', ids],
      ['provenance', oneOf('reported')], ['recorded_at', time],
    ],
  },
  'decision/1': {
    fields: [['related', ids], ['decision', nonempty], ['question', nonempty], ['rationale', nonempty], ['created_at', time], ['alternatives', textArray]],
  },
  'evidence/2': {
    fields: [
      ['cwd', oneOf('.')], ['argv', argvField], ['kind', nonempty], ['error', text], ['state', id],
      ['result', oneOf('pass', 'fail', 'unknown')], ['runner', nonempty], ['stderr', capture], ['stdout', capture],
      ['platform', nonempty], ['exit_code', exitCode], ['workspace', oneOf('clean', 'changed', 'unknown')],
      ['executable', text], ['operations', ids], ['provenance', oneOf('executed')], ['started_at', time],
      ['timeout_ns', positive], ['duration_ns', uint], ['environment', oneOf('inherited')], ['finished_at', time],
      ['termination', oneOf('exited', 'signaled', 'timeout', 'cancelled', 'start_error', 'capture_error')],
      ['output_limit', positive], ['workspace_error', text],
    ],
    cross: (d) => {
      const argv = d.get('argv') as string[];
      if (!oNonempty(argv[0]!) || argv.some((a) => a.includes('\0'))) throw new Fail('schema.argv');
      const termination = d.get('termination') as string;
      const exe = d.get('executable') as string;
      const absolute = /^\/./su.test(exe) || /^[A-Za-z]:[/\\]./su.test(exe) || /^\\\\./su.test(exe);
      if (!absolute && !(exe === '' && termination === 'start_error')) throw new Fail('schema.executable');
      const exit = d.get('exit_code')!;
      if (termination === 'exited') {
        if (exit === null || (typeof exit === 'bigint' ? exit > 4294967295n : (exit as number) > 4294967295)) throw new Fail('schema.exit_code');
      } else if (exit !== null) throw new Fail('schema.exit_code');
      const error = d.get('error') as string;
      if (termination === 'exited' ? error !== '' : !oNonempty(error)) throw new Fail('schema.error');
      const workspace = d.get('workspace') as string;
      const wsError = d.get('workspace_error') as string;
      if (workspace === 'unknown' ? !oNonempty(wsError) : wsError !== '') throw new Fail('schema.workspace_error');
      const expected = termination !== 'exited' || workspace === 'unknown' ? 'unknown' : exit === 0 ? 'pass' : 'fail';
      if (d.get('result') !== expected) throw new Fail('schema.result');
    },
  },
};

export const V1_ONLY_PAIRS = ['artifact/1', 'intent/1', 'operation/1', 'state/1', 'evidence/1', 'decision/1'];

// Sections 2.5 steps 3 to 5.
export function oCheckObject(value: OValue, accepted: string[] = Object.keys(SCHEMAS)): OResult {
  if (!isMap(value) || value.size !== 3 || typeof value.get('type') !== 'string' || !isUint(value.get('version')) || !isMap(value.get('data'))) {
    return { ok: false, code: 'object.envelope' };
  }
  const type = value.get('type') as string;
  const version = value.get('version') as number | bigint;
  const pair = `${type}/${String(version)}`;
  const schema = SCHEMAS[pair];
  if (schema === undefined || !accepted.includes(pair)) return { ok: false, code: 'object.unsupported' };
  const data = value.get('data') as OMap;
  try {
    checkFields(data, schema.fields);
    schema.cross?.(data);
  } catch (e) {
    if (e instanceof Fail) return { ok: false, code: e.code };
    throw e;
  }
  return { ok: true, value: data, type, version: Number(version) };
}

export function oDecodeObject(bytes: Uint8Array, accepted?: string[]): OResult {
  const decoded = oDecodeCbor(bytes);
  if (!decoded.ok) return decoded;
  return oCheckObject(decoded.value, accepted);
}

// ---------------------------------------------------------------- graph

export type OStore = Map<string, Uint8Array>;

// Full verification of one object and its reference closure (section 5).
// Returns null when valid, or the first failure's code.
export function oVerifyGraph(store: OStore, rootId: string): string | null {
  const memo = new Map<string, string | null | 'in-progress'>();

  const load = (oid: string): Extract<OResult, { ok: true }> => {
    const bytes = store.get(oid);
    if (bytes === undefined) throw new Fail('graph.missing');
    if (oId(bytes) !== oid) throw new Fail('store.hash');
    const r = oDecodeObject(bytes);
    if (!r.ok) throw new Fail(r.code);
    return r;
  };

  const verify = (oid: string): void => {
    const seen = memo.get(oid);
    if (seen === 'in-progress') throw new Fail('graph.cycle');
    if (seen === null) return;
    if (seen !== undefined) throw new Fail(seen);
    memo.set(oid, 'in-progress');
    try {
      verifyOne(oid);
      memo.set(oid, null);
    } catch (e) {
      if (e instanceof Fail) memo.set(oid, e.code);
      throw e;
    }
  };

  // Resolves a reference: it must be stored, of the expected type, and valid.
  const ref = (oid: string, type: string | null): Extract<OResult, { ok: true }> => {
    const r = load(oid);
    if (type !== null && r.type !== type) throw new Fail('graph.type');
    verify(oid);
    return r;
  };

  const verifyOne = (oid: string): void => {
    const { type, version, value: d } = load(oid);
    const list = (k: string): string[] => d.get(k) as string[];
    switch (type) {
      case 'artifact':
        return;
      case 'intent':
        list('context').forEach((x) => ref(x, null));
        list('parents').forEach((x) => ref(x, 'intent'));
        return;
      case 'decision':
        list('related').forEach((x) => ref(x, null));
        return;
      case 'operation': {
        ref(d.get('intent') as string, 'intent');
        const base = ref(d.get('base_state') as string, 'state').value.get('files') as OMap;
        list('inputs').forEach((x) => ref(x, 'artifact'));
        const effects = d.get('effects') as OMap[];
        for (const e of effects) {
          for (const side of ['before', 'after']) {
            const entry = e.get(side)!;
            if (entry !== null) ref((entry as OMap).get('artifact') as string, 'artifact');
          }
        }
        for (const e of effects) {
          const here = base.get(e.get('path') as string) ?? null;
          if (!entryEq(e.get('before')!, here)) throw new Fail('graph.before');
        }
        const result = oApply(base, effects);
        if (oPathConflict(result.keys())) throw new Fail('graph.apply');
        return;
      }
      case 'state': {
        list('parents').forEach((x) => ref(x, 'state'));
        list('operations').forEach((x) => ref(x, 'operation'));
        list('intents').forEach((x) => ref(x, 'intent'));
        for (const entry of (d.get('files') as OMap).values()) ref((entry as OMap).get('artifact') as string, 'artifact');
        if (list('parents').length === 0) return;
        const op = load(list('operations')[0]!).value;
        if (list('parents')[0] !== op.get('base_state')) throw new Fail('graph.state_parent');
        if (list('intents')[0] !== op.get('intent')) throw new Fail('graph.state_intents');
        const parentFiles = load(list('parents')[0]!).value.get('files') as OMap;
        const expected = oApply(parentFiles, op.get('effects') as OMap[]);
        const actual = d.get('files') as OMap;
        if (expected.size !== actual.size || [...expected].some(([k, v]) => !actual.has(k) || !entryEq(v, actual.get(k)!))) {
          throw new Fail('graph.state_files');
        }
        return;
      }
      case 'evidence': {
        const state = ref(d.get('state') as string, 'state').value;
        list('operations').forEach((x) => ref(x, 'operation'));
        let lengths: [number, boolean][] = [];
        if (version === 2) {
          lengths = (['stdout', 'stderr'] as const).map((k) => {
            const c = d.get(k) as OMap;
            const art = ref(c.get('artifact') as string, 'artifact').value;
            return [(art.get('content') as Uint8Array).length, c.get('truncated') as boolean];
          });
        }
        const produced = new Set(state.get('operations') as string[]);
        if (list('operations').some((x) => !produced.has(x))) throw new Fail('graph.operations_subset');
        const limit = BigInt((d.get('output_limit') ?? 0) as number | bigint);
        for (const [len, truncated] of lengths) {
          if (BigInt(len) > limit || (truncated && BigInt(len) !== limit)) throw new Fail('graph.capture_length');
        }
        return;
      }
      default:
        throw new Error(`oracle: unexpected type ${type}`);
    }
  };

  try {
    verify(rootId);
    return null;
  } catch (e) {
    if (e instanceof Fail) return e.code;
    throw e;
  }
}

export function oApply(base: OMap, effects: OMap[]): OMap {
  const result: OMap = new Map(base);
  for (const e of effects) {
    const after = e.get('after')!;
    if (after === null) result.delete(e.get('path') as string);
    else result.set(e.get('path') as string, after);
  }
  return result;
}
