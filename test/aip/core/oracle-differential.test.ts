// Differential test: the product's reader (decodeObject) and graph verifier
// (verifyGraph, what `aip verify` runs) against the independent oracle in
// support/oracle.ts, written from the seed and spec only. Random valid graphs
// (fast-check, fixed seeds), then one change at a time: a field replaced,
// removed or added, an envelope changed, a byte flipped, a reference pointed
// elsewhere; also fields drawn freely so several rules fail at once, and the
// built `aip verify --all` over objects planted straight into a store.
// Accept/reject and the error code must agree.
import fc from 'fast-check';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeObject, encodeObject } from '../../../src/aip/core/codec.js';
import { V1_ONLY_TYPE_VERSIONS } from '../../../src/aip/core/objects.js';
import { verifyGraph, type LoadResult, type ObjectSource } from '../../../src/aip/core/verify-graph.js';
import {
  oApply, oDecodeObject, oEncode, oId, oPathConflict, oVerifyGraph, V1_ONLY_PAIRS, type OStore,
} from '../support/oracle.js';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';
import { seededUint32 } from '../../support/prng.js';

type Plain = unknown;
type Obj = { type: string; version: number | bigint; data: Record<string, Plain> };
type Entry = { artifact: string; executable: boolean };
type Gen = fc.GeneratorValue;

const ROOT_FILES = (): Map<string, Entry> => new Map();
const PATHS = ['a', 'b', 'a/b', 'a/c', 'c/d/e', 'z', 'hello.txt', 'A', 'x y', '.aipx', 'a/.aip/x', '.AIP/x', 'é', 'e\u0301', '\u{1f600}', '\ue000', '__proto__'];
const HEX = '0123456789abcdef';
const fakeId = (n: number): string => Array.from({ length: 64 }, (_, i) => HEX[(n * 7 + i * 13) % 16]).join('');

function utf8Cmp(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

// ------------------------------------------------------------ valid graphs

interface Graph {
  store: OStore;
  objects: Map<string, Obj>;
  byType: Map<string, string[]>;
}

function put(graph: Graph, object: Obj): string {
  const bytes = oEncode(object);
  const id = oId(bytes);
  if (!graph.store.has(id)) {
    graph.store.set(id, bytes);
    graph.objects.set(id, object);
    const key = object.type === 'evidence' ? `evidence/${String(object.version)}` : object.type;
    graph.byType.set(key, [...(graph.byType.get(key) ?? []), id]);
  }
  return id;
}

function validEvidenceV2(g: Gen, state: string, operations: string[], artifacts: string[], graph: Graph): Obj {
  const termination = g(fc.constantFrom, 'exited', 'signaled', 'timeout', 'cancelled', 'start_error', 'capture_error');
  const workspace = g(fc.constantFrom, 'clean', 'changed', 'unknown');
  const exit = termination === 'exited' ? g(fc.constantFrom, 0, 1, 255, 4294967295) : null;
  const out = g(fc.constantFrom, ...artifacts);
  const err = g(fc.constantFrom, ...artifacts);
  const len = (a: string): number => ((graph.objects.get(a)!.data.content) as Uint8Array).length;
  const limit = Math.max(len(out), len(err), 1) + g(fc.constantFrom, 0, 0, 3);
  return {
    type: 'evidence',
    version: 2,
    data: {
      cwd: '.', argv: g(fc.constantFrom, ['cmd'], ['npm', '', ' test ', '$(x)'], ['\u200b']), kind: 'test',
      error: termination === 'exited' ? '' : 'stopped', state,
      result: termination !== 'exited' || workspace === 'unknown' ? 'unknown' : exit === 0 ? 'pass' : 'fail',
      runner: 'oracle', stderr: { artifact: err, truncated: len(err) === limit }, stdout: { artifact: out, truncated: false },
      platform: 'linux', exit_code: exit, workspace,
      executable: termination === 'start_error' ? g(fc.constantFrom, '', '/bin/x') : g(fc.constantFrom, '/bin/x', 'C:\\x.exe', 'd:/y', '\\\\srv\\s'),
      operations, provenance: 'executed', started_at: '2026-01-01T00:00:00.000000000Z',
      timeout_ns: g(fc.constantFrom, 1, 2 ** 40, 2n ** 64n - 1n), duration_ns: g(fc.constantFrom, 0, 2n ** 60n),
      environment: 'inherited', finished_at: '2025-12-31T23:59:59.999999999Z', termination, output_limit: limit,
      workspace_error: workspace === 'unknown' ? 'inspection failed' : '',
    },
  };
}

function buildGraph(g: Gen): Graph {
  const graph: Graph = { store: new Map(), objects: new Map(), byType: new Map() };
  const root = put(graph, { type: 'state', version: 1, data: { files: ROOT_FILES(), intents: [], parents: [], operations: [] } });
  const artifacts = [...new Set(g(fc.array, fc.uint8Array({ maxLength: 6 }), { minLength: 2, maxLength: 4 })
    .map((content) => put(graph, { type: 'artifact', version: 1, data: { kind: 'file', content } })))];
  const i1 = put(graph, {
    type: 'intent', version: 1,
    data: { goal: 'g\u0301', title: '\ufeffT', context: [root], parents: [], created_at: '2024-02-29T23:59:59.123456789Z', constraints: ['', ' c '] },
  });
  const i2 = put(graph, {
    type: 'intent', version: 1,
    data: { goal: 'goal', title: 'two', context: [...new Set([root, ...artifacts])].sort(), parents: [i1], created_at: '0000-01-01T00:00:00.000000000Z', constraints: [] },
  });
  const intents = [i1, i2];
  let current = root;
  let files = ROOT_FILES();
  const states = [root];
  const steps = g(fc.integer, { min: 1, max: 3 });
  for (let s = 0; s < steps; s++) {
    const chosen = [...new Set(g(fc.array, fc.constantFrom(...PATHS), { maxLength: 4 }))].sort(utf8Cmp);
    const effects: { path: string; before: Entry | null; after: Entry | null }[] = [];
    for (const path of chosen) {
      const before = files.get(path) ?? null;
      let after: Entry | null;
      if (before !== null && g(fc.boolean)) after = null;
      else {
        after = { artifact: g(fc.constantFrom, ...artifacts), executable: g(fc.boolean) };
        if (before !== null && before.artifact === after.artifact && before.executable === after.executable) after.executable = !after.executable;
      }
      const trial = [...effects, { path, before, after }];
      if (oPathConflict(oApply(files as never, trial.map((e) => new Map(Object.entries(e))) as never).keys())) continue;
      effects.push({ path, before, after });
    }
    const intent = g(fc.constantFrom, ...intents);
    const inputs = [...new Set(effects.flatMap((e) => (e.before === null ? [] : [e.before.artifact])))].sort();
    const op = put(graph, { type: 'operation', version: 1, data: { inputs, intent, effects, base_state: current } });
    const next = new Map(files);
    for (const e of effects) {
      if (e.after === null) next.delete(e.path);
      else next.set(e.path, e.after);
    }
    files = next;
    current = put(graph, { type: 'state', version: 1, data: { files: next, intents: [intent], parents: [current], operations: [op] } });
    states.push(current);
  }
  const state = g(fc.constantFrom, ...states);
  const produced = graph.objects.get(state)!.data.operations as string[];
  put(graph, {
    type: 'evidence', version: 1,
    data: {
      cwd: g(fc.constantFrom, '.', 'a/b', 'src'), kind: 'test', notes: '', state, result: g(fc.constantFrom, 'pass', 'fail', 'unknown'),
      command: 'npm test', platform: 'linux', reporter: 'agent', operations: g(fc.boolean) ? produced : [],
      provenance: 'reported', recorded_at: '9999-12-31T23:59:59.999999999Z',
    },
  });
  put(graph, validEvidenceV2(g, state, g(fc.boolean) ? produced : [], artifacts, graph));
  const related = [...new Set(g(fc.array, fc.constantFrom(...graph.store.keys()), { maxLength: 3 }))].sort();
  put(graph, {
    type: 'decision', version: 1,
    data: { related, decision: 'd', question: 'q?', rationale: '\u00a0r', created_at: '2000-02-29T00:00:00.000000000Z', alternatives: ['b', 'a', 'a'] },
  });
  return graph;
}

// ------------------------------------------------------------ product side

async function productGraph(store: OStore, id: string, trusted?: (id: string) => boolean): Promise<string | null> {
  const source: ObjectSource = {
    async load(key: string): Promise<LoadResult> {
      const bytes = store.get(key);
      if (bytes === undefined) return { kind: 'missing' };
      const decoded = decodeObject(bytes);
      return decoded.ok ? { kind: 'found', object: decoded.value } : { kind: 'invalid', error: decoded.error };
    },
  };
  const verdict = await verifyGraph(id, source, trusted === undefined ? {} : { trusted });
  return verdict.ok ? null : verdict.error.code;
}

function productDecode(bytes: Uint8Array, v1Only = false): string | null {
  const r = decodeObject(bytes, v1Only ? { accept: V1_ONLY_TYPE_VERSIONS } : {});
  return r.ok ? null : r.error.code;
}

function oracleDecode(bytes: Uint8Array, v1Only = false): string | null {
  const r = oDecodeObject(bytes, v1Only ? V1_ONLY_PAIRS : undefined);
  return r.ok ? null : r.code;
}

// ------------------------------------------------------------ mutations

const TIMES = [
  '2026-02-29T00:00:00.000000000Z', '1900-02-29T00:00:00.000000000Z', '2000-02-29T00:00:00.000000000Z', '2026-04-31T00:00:00.000000000Z',
  '2026-01-01T24:00:00.000000000Z', '2026-01-01T23:60:00.000000000Z', '2026-12-31T23:59:60.000000000Z', '2026-00-01T00:00:00.000000000Z',
  '2026-01-00T00:00:00.000000000Z', '2026-01-01t00:00:00.000000000Z', '2026-01-01T00:00:00.000000000z', '2026-01-01T00:00:00.00000000Z',
  '2026-01-01T00:00:00.0000000000Z', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00.000000000+00:00', '+02026-01-01T00:00:00.000000000Z',
  '2026-1-01T00:00:00.000000000Z', '２026-01-01T00:00:00.000000000Z', '2026-01-01T00:00:00.000000000Z\n', '0000-02-29T00:00:00.000000000Z',
  '2026-01-01 00:00:00.000000000Z',
];
const PATH_VALUES = [
  'a', 'a/', '/a', 'a//b', './a', 'a/./b', 'a/..', '..', '.', '.aip', '.aip/x', '.AIP/x', 'a/.aip', 'a\\b', 'a\0b', '..a', '...', 'é',
  '\u{1f600}/x', ' ', '', 'a/b/c/d/e/f', '.aip.', 'x/.', '\ufeff',
];
const ID_VALUES = [fakeId(1), fakeId(1).toUpperCase(), fakeId(2).slice(1), `${fakeId(3)}0`, `${fakeId(4).slice(1)}g`, ` ${fakeId(5).slice(1)}`];
const TEXTS = [
  '', ' ', '\t\n\u000b\u000c\r', '\u0085', '\u00a0', '\u1680', '\u2000\u200a', '\u2028\u2029', '\u202f\u205f\u3000', '\u200b', '\ufeff', '\u180e',
  '\u0000', 'x', 'e\u0301', 'file', 'reported', 'executed', 'inherited', 'pass', 'fail', 'unknown', 'clean', 'changed', 'exited', 'signaled',
  'timeout', 'cancelled', 'start_error', 'capture_error', 'Pass', 'pass ', '/bin/sh', '/', 'C:/', 'C:\\x', 'c:/x', '1:/x', '\\\\', '\\\\x', '//x',
  'ab:/x', 'C:x',
];
const OTHERS: Plain[] = [
  null, true, false, 0, 1, 4294967295, 4294967296, 2n ** 64n - 1n, new Uint8Array([1]), new Uint8Array(0), [], [''], [' '], ['x', '\0'],
  ['a\0b'], ['\u200b', ''], [fakeId(2), fakeId(1)], [fakeId(1), fakeId(1)], [fakeId(1)], [fakeId(1), 1], {}, new Map(),
  { artifact: fakeId(1), executable: true }, { artifact: fakeId(1) }, { artifact: fakeId(1), executable: 1 },
  { artifact: fakeId(1), executable: false, extra: 1 }, { artifact: fakeId(1).toUpperCase(), truncated: false },
  nest(12), nest(13), nest(14), nest(15), [new Map([['k', nest(12)]])],
];
function nest(depth: number): Plain {
  return depth === 0 ? 'x' : [nest(depth - 1)];
}
const VALUES: Plain[] = [...TIMES, ...PATH_VALUES, ...ID_VALUES, ...TEXTS, ...OTHERS];

type Step = string | number;

// Every place in an object's data a single change can land on.
function slots(value: Plain, at: Step[] = []): Step[][] {
  const found: Step[][] = [];
  if (Array.isArray(value)) value.forEach((v, i) => found.push([...at, i], ...slots(v, [...at, i])));
  else if (value instanceof Map) for (const [k, v] of value) found.push([...at, k], ...slots(v, [...at, k]));
  else if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array)) {
    for (const [k, v] of Object.entries(value)) found.push([...at, k], ...slots(v, [...at, k]));
  }
  return found;
}

function containers(value: Plain, at: Step[] = []): Step[][] {
  const found: Step[][] = [];
  if (value instanceof Map || (value !== null && typeof value === 'object' && !(value instanceof Uint8Array) && !Array.isArray(value))) found.push(at);
  for (const s of slots(value, at)) if (s.length === at.length + 1) found.push(...containers(getAt(value, [s.at(-1)!]), s).filter((c) => c.length > at.length));
  return found;
}

function getAt(value: Plain, path: Step[]): Plain {
  let v = value;
  for (const step of path) {
    if (v instanceof Map) v = v.get(step as string);
    else v = (v as Record<string, Plain>)[step as string];
  }
  return v;
}

function setAt(value: Plain, path: Step[], next: Plain | typeof REMOVE): void {
  const parent = getAt(value, path.slice(0, -1));
  const key = path.at(-1)!;
  if (parent instanceof Map) {
    if (next === REMOVE) parent.delete(key as string);
    else parent.set(key as string, next);
  } else if (Array.isArray(parent)) {
    if (next === REMOVE) parent.splice(key as number, 1);
    else parent[key as number] = next;
  } else if (next === REMOVE) delete (parent as Record<string, Plain>)[key as string];
  else (parent as Record<string, Plain>)[key as string] = next;
}
const REMOVE = Symbol('remove');

function renameKey(map: Map<string, Plain>, from: string, to: string): void {
  const v = map.get(from);
  map.delete(from);
  map.set(to, v);
}

// One change to a valid object, as plain data (re-encoded canonically).
function mutate(g: Gen, object: Obj): Plain {
  const copy = structuredClone(object) as Obj;
  const kind = g(fc.integer, { min: 0, max: 9 });
  if (kind === 0) {
    const which = g(fc.integer, { min: 0, max: 5 });
    if (which === 0) copy.type = g(fc.constantFrom, 'artifact', 'intent', 'operation', 'state', 'evidence', 'decision', 'State', 'commit', '');
    else if (which === 1) copy.version = g(fc.constantFrom, 0, 1, 2, 3, 2n ** 64n - 1n);
    else if (which === 2) return { ...copy, extra: 1 };
    else if (which === 3) return { type: copy.type, version: copy.version };
    else if (which === 4) return { ...copy, data: g(fc.constantFrom, [], null, 'x', new Uint8Array(0)) };
    else return { ...copy, version: g(fc.constantFrom, '1', null, true) };
    return copy;
  }
  if (kind === 1) {
    const at = g(fc.constantFrom, ...containers(copy.data));
    const target = getAt(copy.data, at);
    const name = g(fc.constantFrom, 'extra', 'Kind', 'a', 'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz', '', '__proto__');
    if (target instanceof Map) target.set(name, 'x');
    else Object.defineProperty(target, name, { value: 'x', enumerable: true, writable: true, configurable: true });
    return copy;
  }
  const places = slots(copy.data);
  if (places.length === 0) return copy;
  const at = g(fc.constantFrom, ...places);
  const parent = getAt(copy.data, at.slice(0, -1));
  if (kind === 2) setAt(copy.data, at, REMOVE);
  else if (kind === 3 && parent instanceof Map) renameKey(parent, at.at(-1) as string, g(fc.constantFrom, ...PATH_VALUES));
  else setAt(copy.data, at, g(fc.constantFrom, ...VALUES));
  return copy;
}

// A byte-level change to a canonical encoding.
function mutateBytes(g: Gen, bytes: Uint8Array): Uint8Array {
  const pos = g(fc.integer, { min: 0, max: bytes.length - 1 });
  const byte = g(fc.integer, { min: 0, max: 255 });
  const how = g(fc.integer, { min: 0, max: 2 });
  if (how === 0) { const c = Uint8Array.from(bytes); c[pos] = byte; return c; }
  if (how === 1) return Uint8Array.from([...bytes.subarray(0, pos), byte, ...bytes.subarray(pos)]);
  return Uint8Array.from([...bytes.subarray(0, pos), ...bytes.subarray(pos + 1)]);
}

// ------------------------------------------------------------ graph changes

// Changes a valid object so that it stays schema-valid but may break a graph rule.
function graphMutate(g: Gen, graph: Graph, object: Obj): Obj | null {
  const copy = structuredClone(object) as Obj;
  const d = copy.data;
  const anyId = (): string => g(fc.constantFrom, ...graph.store.keys(), fakeId(9));
  const ofType = (t: string): string => g(fc.constantFrom, ...(graph.byType.get(t) ?? [fakeId(8)]), anyId());
  const sortedList = (xs: string[]): string[] => [...new Set(xs)].sort();
  switch (copy.type) {
    case 'intent':
      if (g(fc.boolean)) d.parents = sortedList([...(d.parents as string[]), anyId()]);
      else d.context = sortedList([...(d.context as string[]), anyId()]);
      return copy;
    case 'decision':
      d.related = sortedList([...(d.related as string[]), anyId()]);
      return copy;
    case 'operation': {
      const effects = d.effects as { path: string; before: Entry | null; after: Entry | null }[];
      const which = g(fc.integer, { min: 0, max: 5 });
      if (which === 0) d.base_state = ofType('state');
      else if (which === 1) d.intent = ofType('intent');
      else if (which === 2 && effects.length > 0) {
        const e = g(fc.constantFrom, ...effects);
        const flip = g(fc.integer, { min: 0, max: 2 });
        if (flip === 0 && e.before !== null) e.before.executable = !e.before.executable;
        else if (flip === 1 && e.before !== null) e.before = null;
        else if (e.after !== null) e.after.artifact = ofType('artifact');
        else e.before = { artifact: ofType('artifact'), executable: false };
      } else if (which === 3) {
        const path = g(fc.constantFrom, ...PATHS);
        if (effects.some((e) => e.path === path)) return null;
        effects.push({ path, before: g(fc.boolean) ? null : { artifact: ofType('artifact'), executable: false }, after: { artifact: ofType('artifact'), executable: true } });
        effects.sort((a, b) => utf8Cmp(a.path, b.path));
      } else if (which === 4 && effects.length > 0) effects.splice(g(fc.integer, { min: 0, max: effects.length - 1 }), 1);
      else return null;
      for (const e of effects) {
        if (e.before !== null && e.after !== null && e.before.artifact === e.after.artifact && e.before.executable === e.after.executable) return null;
        if (e.before === null && e.after === null) return null;
      }
      d.inputs = sortedList(effects.flatMap((e) => (e.before === null ? [] : [e.before.artifact])));
      return copy;
    }
    case 'state': {
      if ((d.parents as string[]).length === 0) return null;
      const which = g(fc.integer, { min: 0, max: 4 });
      const files = d.files as Map<string, Entry>;
      if (which === 0) d.parents = [ofType('state')];
      else if (which === 1) d.operations = [ofType('operation')];
      else if (which === 2) d.intents = [ofType('intent')];
      else if (which === 3 && files.size > 0) {
        const k = g(fc.constantFrom, ...files.keys());
        if (g(fc.boolean)) files.delete(k);
        else files.set(k, { artifact: ofType('artifact'), executable: !files.get(k)!.executable });
      } else {
        const path = g(fc.constantFrom, ...PATHS);
        files.set(path, { artifact: ofType('artifact'), executable: false });
        if (oPathConflict(files.keys())) return null;
      }
      return copy;
    }
    case 'evidence': {
      const which = g(fc.integer, { min: 0, max: 4 });
      if (which === 0) d.state = ofType('state');
      else if (which === 1) d.operations = sortedList([...(d.operations as string[]), ofType('operation')]);
      else if (copy.version === 2 && which === 2) (d[g(fc.constantFrom, 'stdout', 'stderr')] as { artifact: string }).artifact = ofType('artifact');
      else if (copy.version === 2 && which === 3) d.output_limit = g(fc.constantFrom, 1, 2, 3, 5, 6, 2n ** 64n - 1n);
      else if (copy.version === 2) {
        const c = d[g(fc.constantFrom, 'stdout', 'stderr')] as { truncated: boolean };
        c.truncated = !c.truncated;
      } else return null;
      return copy;
    }
    default:
      return null;
  }
}

// ------------------------------------------------------------ free combinations

// Each field drawn from a small pool of mostly valid, sometimes invalid
// values, so several rules can fail at once and the order of checks shows.
const A = fakeId(1);
const B = fakeId(2);
const C = fakeId(3);
const e = (artifact: string, executable: boolean): Entry => ({ artifact, executable });
// A small seeded generator: plain draws, no shrinking needed.
class Draw {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = seededUint32(seed);
  }
  int(max: number): number {
    return this.next() % (max + 1);
  }
  bool(): boolean { return this.int(1) === 1; }
  string(units: string[], min: number, max: number): string {
    return Array.from({ length: min + this.int(max - min) }, () => pick(this, ...units)).join('');
  }
}
const pick = <T>(g: Draw, ...xs: T[]): T => xs[g.int(xs.length - 1)]!;
const mostly = <T>(g: Draw, usual: T, ...others: T[]): T => (g.int(5) > 0 ? usual : pick(g, ...others));
const freeTime = (g: Draw): string => {
  const two = (): string => String(g.int(99)).padStart(2, '0');
  const year = pick(g, '2024', '1900', '2000', '2100', '0000', '9999', '2026');
  return `${year}-${two()}-${two()}T${two()}:${two()}:${two()}.${pick(g, '000000000', '999999999', '12345678', '1234567890')}${pick(g, 'Z', 'Z', 'z')}`;
};
const freeText = (g: Draw): string => g.string([' ', '\u0085', '\u00a0', '\u2007', '\u200b', '\ufeff', '\u180e', '\u3000', 'a', '\0', '\u2029'], 0, 3);
const freePath = (g: Draw): string => g.string(['a', '/', '.', '.', '\\', '\0', '.aip', '.AIP', 'é', 'b'], 0, 5);
const freeIds = (g: Draw): Plain => (g.int(3) > 0 ? pick(g, [], [A], [A, B, C]) : pick(g, [B, A], [A, A], [A.toUpperCase()], [A, 'x']));
const freeNonempty = (g: Draw): string => mostly(g, 'x', freeText(g));
const freeTimeMostly = (g: Draw): string => mostly(g, '2026-01-01T00:00:00.000000000Z', freeTime(g));

function freeData(g: Draw, type: string): Obj {
  switch (type) {
    case 'operation': {
      const paths = Array.from({ length: g.int(3) }, () => (g.bool() ? pick(g, 'a', 'a/b', 'b', 'é', 'z') : g.string(['a', '/', '.', 'b'], 0, 3)));
      const side = (): Entry | null => pick(g, null, null, e(A, false), e(A, true), e(B, false));
      const effects = paths.map((path) => ({ path, before: side(), after: side() }));
      const derived = [...new Set(effects.flatMap((x) => (x.before === null ? [] : [x.before.artifact])))].sort();
      return { type, version: 1, data: { inputs: g.bool() ? derived : freeIds(g), intent: mostly(g, A, B.toUpperCase()), effects, base_state: B } };
    }
    case 'state': {
      const files = new Map<string, Plain>();
      for (let i = g.int(3); i > 0; i--) files.set(g.bool() ? pick(g, 'a', 'a/b', 'b/c', 'b') : freePath(g), pick(g, e(A, false), e(B, true)));
      return { type, version: 1, data: { files, intents: pick(g, [], [A], [A, B]), parents: pick(g, [], [B], [B, C]), operations: pick(g, [], [C], [A, C]) } };
    }
    case 'evidence/2': {
      const termination = mostly(g, pick(g, 'exited', 'exited', 'signaled', 'timeout', 'start_error', 'capture_error', 'cancelled'), 'crashed', 'Exited');
      return {
        type: 'evidence', version: 2,
        data: {
          cwd: mostly(g, '.', './', ''), argv: mostly(g, ['x'], [], [''], [' '], ['\u200b'], ['x', ''], ['x', 'a\0'], ['\0']), kind: mostly(g, 'k', ' '),
          error: pick(g, '', '', 'boom', ' ', '\u0085'), state: A, result: pick(g, 'pass', 'fail', 'unknown'), runner: 'r',
          stderr: { artifact: B, truncated: g.bool() }, stdout: { artifact: C, truncated: false }, platform: 'p',
          exit_code: pick<Plain>(g, null, null, 0, 0, 1, 4294967295, 4294967296, 2n ** 64n - 1n), workspace: pick(g, 'clean', 'changed', 'unknown'),
          executable: pick(g, '/x', '/x', '/', '', 'C:\\x', 'C:/', 'c:x', '\\\\', '\\\\s', 'x', '1:/x', 'é:/x', '/\n', 'Z:\\\u{1f600}'), operations: mostly(g, [A], [B, A]), provenance: 'executed',
          started_at: freeTimeMostly(g), timeout_ns: mostly<Plain>(g, 1, 0, 2n ** 64n - 1n), duration_ns: pick(g, 0, 5), environment: 'inherited',
          finished_at: freeTimeMostly(g), termination, output_limit: mostly(g, 1024, 0, 1), workspace_error: pick(g, '', '', 'why', '\u3000'),
        },
      };
    }
    case 'evidence/1':
      return {
        type: 'evidence', version: 1,
        data: {
          cwd: pick(g, '.', freePath(g)), kind: freeNonempty(g), notes: freeText(g), state: A, result: mostly(g, 'pass', 'fail', 'unknown', 'error'),
          command: freeNonempty(g), platform: 'p', reporter: freeNonempty(g), operations: freeIds(g), provenance: mostly(g, 'reported', 'executed'), recorded_at: freeTimeMostly(g),
        },
      };
    case 'intent':
      return { type, version: 1, data: { goal: freeNonempty(g), title: freeNonempty(g), context: freeIds(g), parents: freeIds(g), created_at: freeTimeMostly(g), constraints: [freeText(g)] } };
    default:
      return { type: 'decision', version: 1, data: { related: freeIds(g), decision: freeNonempty(g), question: freeNonempty(g), rationale: freeNonempty(g), created_at: freeTimeMostly(g), alternatives: [] } };
  }
}

// ------------------------------------------------------------ the tests

const show = (v: Plain): string => JSON.stringify(v, (_k, x: unknown) =>
  typeof x === 'bigint' ? `${x}n` : x instanceof Map ? Object.fromEntries(x) : x instanceof Uint8Array ? Buffer.from(x).toString('hex') : x);

/**
 * Writes objects straight into a repository's store, read-only as aip keeps
 * them. One already there (the root state `aip init` stored) has these very
 * bytes, its id being their digest, and is left alone: rewriting the
 * read-only file works only as root.
 */
async function plantObjects(dir: string, store: OStore): Promise<void> {
  for (const [id, bytes] of store) {
    const folder = join(dir, '.aip', 'objects', id.slice(0, 2));
    await mkdir(folder, { recursive: true });
    try {
      await writeFile(join(folder, id.slice(2)), bytes, { flag: 'wx' });
      await chmod(join(folder, id.slice(2)), 0o444);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

describe('AIP objects against an independent oracle written from the spec', () => {
  it('builds graphs the oracle and the product both accept', async () => {
    await fc.assert(fc.asyncProperty(fc.gen(), async (g) => {
      const graph = buildGraph(g);
      for (const [id, bytes] of graph.store) {
        expect(oracleDecode(bytes), id).toBe(null);
        expect(productDecode(bytes), id).toBe(null);
        const decoded = decodeObject(bytes);
        const reencoded = decoded.ok ? encodeObject(decoded.value) : decoded;
        expect(reencoded.ok && Buffer.from(reencoded.value.bytes).equals(bytes), id).toBe(true);
        expect(oVerifyGraph(graph.store, id)).toBe(null);
        expect(await productGraph(graph.store, id)).toBe(null);
      }
    }), { seed: 1301, numRuns: 25, endOnFailure: true });
  });

  it('gives the same verdict and code for one field changed, removed or added', () => {
    fc.assert(fc.property(fc.gen(), (g) => {
      const graph = buildGraph(g);
      for (const object of graph.objects.values()) {
        for (let i = 0; i < 6; i++) {
          const changed = mutate(g, object);
          let bytes: Uint8Array;
          try {
            bytes = oEncode(changed);
          } catch {
            continue;
          }
          const v1Only = g(fc.integer, { min: 0, max: 4 }) === 0;
          expect({ product: productDecode(bytes, v1Only), v1Only, changed: show(changed) })
            .toEqual({ product: oracleDecode(bytes, v1Only), v1Only, changed: show(changed) });
        }
      }
    }), { seed: 1302, numRuns: 60, endOnFailure: true });
  });

  it('gives the same verdict and first code for fields drawn freely, several rules failing at once', () => {
    fc.assert(fc.property(fc.integer(), (seed) => {
      const g = new Draw(seed);
      for (const type of ['operation', 'state', 'evidence/2', 'evidence/1', 'intent', 'decision']) {
        const object = freeData(g, type);
        const bytes = oEncode(object);
        expect({ product: productDecode(bytes), object: show(object) }).toEqual({ product: oracleDecode(bytes), object: show(object) });
      }
    }), { seed: 1305, numRuns: 300, endOnFailure: true });
  });

  it('gives the same verdict and code for one byte changed, added or dropped', () => {
    fc.assert(fc.property(fc.gen(), (g) => {
      const graph = buildGraph(g);
      for (const bytes of graph.store.values()) {
        for (let i = 0; i < 4; i++) {
          const changed = mutateBytes(g, bytes);
          const hex = Buffer.from(changed).toString('hex');
          expect({ product: productDecode(changed), hex }).toEqual({ product: oracleDecode(changed), hex });
        }
      }
    }), { seed: 1303, numRuns: 40, endOnFailure: true });
  });

  it('gives the same graph verdict and code for one reference or entry changed', async () => {
    await fc.assert(fc.asyncProperty(fc.gen(), async (g) => {
      const graph = buildGraph(g);
      for (const object of [...graph.objects.values()]) {
        const changed = graphMutate(g, graph, object);
        if (changed === null) continue;
        const bytes = oEncode(changed);
        const oracleSchema = oracleDecode(bytes);
        expect(productDecode(bytes)).toBe(oracleSchema);
        if (oracleSchema !== null) continue;
        const store = new Map(graph.store);
        const id = oId(bytes);
        store.set(id, bytes);
        const expected = { product: oVerifyGraph(store, id), changed: show(changed) };
        expect({ product: await productGraph(store, id), changed: show(changed) }).toEqual(expected);
        // The store invariant (5.7): with the valid graph trusted, only direct references are re-checked.
        expect({ product: await productGraph(store, id, (x) => x !== id && graph.store.has(x)), changed: show(changed) }).toEqual(expected);
      }
    }), { seed: 1304, numRuns: 60, endOnFailure: true });
  });

  it('the aip CLI verify reports, for objects planted in the store, what the oracle finds', async () => {
    requireBuiltBin();
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const store: OStore = new Map();
    fc.assert(fc.property(fc.gen(), (g) => {
      const graph = buildGraph(g);
      for (const [id, bytes] of graph.store) store.set(id, bytes);
      for (const object of graph.objects.values()) {
        for (const changed of [graphMutate(g, graph, object), mutate(g, object), mutate(g, object)]) {
          if (changed === null) continue;
          try {
            const bytes = oEncode(changed);
            store.set(oId(bytes), bytes);
          } catch {
            // not encodable: nothing to plant
          }
        }
      }
    }), { seed: 1306, numRuns: 3 });
    await plantObjects(dir, store);
    expect((await aip(['index', 'rebuild'], { cwd: dir })).code).toBe(0);
    const result = await aip(['--format', 'json', 'verify', '--all'], { cwd: dir });
    const report = JSON.parse(result.text) as { valid: string[]; invalid: { id: string; code: string }[] };
    const product = new Map<string, string | null>([...report.valid.map((id) => [id, null] as const), ...report.invalid.map((x) => [x.id, x.code] as const)]);
    const oracle = new Map([...store.keys()].map((id) => [id, oVerifyGraph(store, id)]));
    expect(report.invalid.length).toBeGreaterThan(20);
    expect(report.valid.length).toBeGreaterThan(20);
    expect(product).toEqual(oracle);
    expect(result.code).toBe([...oracle.values()].every((x) => x === null) ? 0 : 1);
  });

  it('the aip CLI put, from CBOR and from its JSON presentation, stores exactly what the oracle accepts', async () => {
    requireBuiltBin();
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const store: OStore = new Map();
    const candidates: Plain[] = [];
    fc.assert(fc.property(fc.gen(), (g) => {
      const graph = buildGraph(g);
      for (const [id, bytes] of graph.store) store.set(id, bytes);
      for (const object of graph.objects.values()) candidates.push(graphMutate(g, graph, object) ?? mutate(g, object));
    }), { seed: 1307, numRuns: 1 });
    await plantObjects(dir, store);
    expect((await aip(['index', 'rebuild'], { cwd: dir })).code).toBe(0);
    let puts = 0;
    let refused = 0;
    for (const [i, candidate] of candidates.entries()) {
      let bytes: Uint8Array;
      try {
        bytes = oEncode(candidate);
      } catch {
        continue;
      }
      const id = oId(bytes);
      const expected = oVerifyGraph(new Map([...store, [id, bytes]]), id);
      // JSON shows bytes only as an artifact's base64 content (9.4).
      const json = i % 2 === 0 ? presentJson(candidate, false) : null;
      const result = json === null ? await aip(['put', '-'], { cwd: dir, input: bytes }) : await aip(['put', '--from', 'json', '-'], { cwd: dir, input: json });
      puts++;
      if (expected !== null) refused++;
      expect({ exit: result.code, code: result.stderr.match(/[a-z]+\.[a-z_]+/)?.[0] ?? null, input: json ?? show(candidate) })
        .toEqual({ exit: expected === null ? 0 : 5, code: expected, input: json ?? show(candidate) });
      if (expected === null) store.set(id, bytes);
    }
    expect(puts).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(3);
  });
});

function presentJson(value: Plain, bytesAllowed: boolean): string | null {
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  if (value instanceof Uint8Array) return bytesAllowed ? JSON.stringify(Buffer.from(value).toString('base64')) : null;
  const top = !Array.isArray(value) && !(value instanceof Map) && (value as { type?: unknown }).type === 'artifact';
  const parts = Array.isArray(value)
    ? value.map((x) => presentJson(x, false))
    : (value instanceof Map ? [...value] : Object.entries(value as object)).map(([k, x]) => {
      const inner = presentJson(x as Plain, (top && k === 'data') || (bytesAllowed && k === 'content'));
      return inner === null ? null : `${JSON.stringify(k)}:${inner}`;
    });
  if (parts.includes(null)) return null;
  if (top && !((value as { data?: { content?: unknown } }).data?.content instanceof Uint8Array)) return null;
  return Array.isArray(value) ? `[${parts.join(',')}]` : `{${parts.join(',')}}`;
}
