// Schemas per (type, version) (spec sections 2.3 and 4): the envelope check,
// field and cross-field rules in the spec's order, and the mapping between
// typed objects and profile values. Pure; graph rules live in verify-graph.ts.
import { compareUtf8, isCborArray, isCborMap, isUnsigned, NOT_BUILT, type CborMap, type CborValue } from './cbor-profile.js';
import { failure, success, type AipErrorCode, type Outcome } from './errors.js';
import { quoted, quotedPath } from './quote.js';
import {
  ALL_TYPE_VERSIONS,
  type AipObject,
  type Capture,
  type Effect,
  type EvidenceResult,
  type FileEntry,
  type Id,
  type Termination,
  type TypeVersion,
  type Uint,
  type Workspace,
} from './objects.js';
import {
  PATH_PROBLEM_TEXT,
  findPathConflict,
  isAbsoluteExecutable,
  isId,
  isNonemptyText,
  isTime,
  pathProblem,
} from './value-rules.js';

/** Field names of every map, in canonical encoded order (spec 2.2). */
export const FIELD_ORDER = {
  envelope: ['data', 'type', 'version'],
  'artifact/1': ['kind', 'content'],
  'intent/1': ['goal', 'title', 'context', 'parents', 'created_at', 'constraints'],
  'operation/1': ['inputs', 'intent', 'effects', 'base_state'],
  effect: ['path', 'after', 'before'],
  fileEntry: ['artifact', 'executable'],
  'state/1': ['files', 'intents', 'parents', 'operations'],
  'evidence/1': ['cwd', 'kind', 'notes', 'state', 'result', 'command', 'platform', 'reporter', 'operations', 'provenance', 'recorded_at'],
  'decision/1': ['related', 'decision', 'question', 'rationale', 'created_at', 'alternatives'],
  'evidence/2': [
    'cwd', 'argv', 'kind', 'error', 'state', 'result', 'runner', 'stderr', 'stdout', 'platform', 'exit_code', 'workspace',
    'executable', 'operations', 'provenance', 'started_at', 'timeout_ns', 'duration_ns', 'environment', 'finished_at',
    'termination', 'output_limit', 'workspace_error',
  ],
  capture: ['artifact', 'truncated'],
} as const;

const MAX_EXIT_CODE = 4_294_967_295;

// Thrown only inside this module and turned into an Outcome at its boundary.
class SchemaFailure {
  constructor(
    readonly code: AipErrorCode,
    readonly message: string,
  ) {}
}

function fail(code: AipErrorCode, at: string, problem: string): never {
  throw new SchemaFailure(code, `${at}: ${problem}`);
}

function show(value: CborValue): string {
  if (value === NOT_BUILT) return 'a map or array past the most a valid object of this size holds (not decoded)';
  if (typeof value === 'string') return quoted(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return `bytes(${value.length})`;
  if (Array.isArray(value)) return 'array';
  if (value instanceof Map) return 'map';
  return String(value);
}

/** Checks a map's shape: unknown fields first, then missing ones (spec 2.5 step 5). */
function fields(value: CborValue, at: string, names: readonly string[]): CborMap {
  if (!isCborMap(value)) fail('schema.type', at, `expected a map, got ${show(value)}`);
  for (const key of value.keys()) {
    if (!names.includes(key)) fail('schema.unknown_field', at, `unknown field ${show(key)}`);
  }
  for (const name of names) {
    if (!value.has(name)) fail('schema.missing_field', at, `missing field ${JSON.stringify(name)}`);
  }
  return value;
}

function get(map: CborMap, name: string): CborValue {
  return map.get(name) as CborValue;
}

function text(value: CborValue, at: string): string {
  if (typeof value !== 'string') fail('schema.type', at, `expected text, got ${show(value)}`);
  if (!value.isWellFormed()) fail('cbor.utf8', at, 'text contains a lone surrogate');
  return value;
}

function nonempty(value: CborValue, at: string): string {
  const t = text(value, at);
  if (!isNonemptyText(t)) fail('schema.nonempty', at, `${show(t)} has no character outside White_Space`);
  return t;
}

function id(value: CborValue, at: string): Id {
  const t = text(value, at);
  if (!isId(t)) fail('schema.id', at, `${show(t)} is not a 64-character lowercase hex ID`);
  return t;
}

function ids(value: CborValue, at: string): Id[] {
  if (!isCborArray(value)) fail('schema.type', at, `expected an array of IDs, got ${show(value)}`);
  const out: Id[] = [];
  for (let i = 0; i < value.length; i++) {
    const item = id(value[i] as CborValue, `${at}[${i}]`);
    const previous = out[i - 1];
    if (previous !== undefined && compareUtf8(previous, item) >= 0) {
      fail('schema.ids', `${at}[${i}]`, `${item} is not after ${previous} (IDs must be sorted and unique)`);
    }
    out.push(item);
  }
  return out;
}

function texts(value: CborValue, at: string): string[] {
  if (!isCborArray(value)) fail('schema.type', at, `expected an array of text, got ${show(value)}`);
  return value.map((item, i) => text(item, `${at}[${i}]`));
}

/** Evidence v2 `argv`: its field rule is "array of text, at least one element" (4.7 table); the rest is cross-field rule 1. */
function argvField(value: CborValue, at: string): string[] {
  const argv = texts(value, at);
  if (argv.length === 0) fail('schema.argv', at, 'must have at least one element');
  return argv;
}

function time(value: CborValue, at: string): string {
  const t = text(value, at);
  if (!isTime(t)) fail('schema.time', at, `${show(t)} is not a UTC time with nine fractional digits`);
  return t;
}

function path(value: CborValue, at: string): string {
  const t = text(value, at);
  const problem = pathProblem(t);
  if (problem) fail('schema.path', at, `path ${show(t)} ${PATH_PROBLEM_TEXT[problem]}`);
  return t;
}

function bool(value: CborValue, at: string): boolean {
  if (typeof value !== 'boolean') fail('schema.type', at, `expected a boolean, got ${show(value)}`);
  return value;
}

function uint(value: CborValue, at: string): Uint {
  if (!isUnsigned(value)) fail('schema.type', at, `expected an unsigned integer, got ${show(value)}`);
  // Keep the decoder's canonical form: number up to 2^53-1, bigint above.
  return typeof value === 'bigint' && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

function positive(value: CborValue, at: string): Uint {
  const n = uint(value, at);
  if (n === 0) fail('schema.range', at, 'must be at least 1');
  return n;
}

function oneOf<T extends string>(value: CborValue, at: string, allowed: readonly T[]): T {
  const t = text(value, at);
  if (!(allowed as readonly string[]).includes(t)) {
    fail('schema.enum', at, `${show(t)} is not one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`);
  }
  return t as T;
}

function fileEntry(value: CborValue, at: string): FileEntry {
  const map = fields(value, at, FIELD_ORDER.fileEntry);
  return { artifact: id(get(map, 'artifact'), `${at}.artifact`), executable: bool(get(map, 'executable'), `${at}.executable`) };
}

function optionalEntry(value: CborValue, at: string): FileEntry | null {
  return value === null ? null : fileEntry(value, at);
}

function capture(value: CborValue, at: string): Capture {
  const map = fields(value, at, FIELD_ORDER.capture);
  return { artifact: id(get(map, 'artifact'), `${at}.artifact`), truncated: bool(get(map, 'truncated'), `${at}.truncated`) };
}

export function sameEntry(a: FileEntry | null | undefined, b: FileEntry | null | undefined): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  return a.artifact === b.artifact && a.executable === b.executable;
}

// ---------------------------------------------------------------- schemas

function artifactV1(data: CborMap): AipObject {
  const kind = oneOf(get(data, 'kind'), 'data.kind', ['file'] as const);
  const content = get(data, 'content');
  if (!(content instanceof Uint8Array)) fail('schema.type', 'data.content', `expected bytes, got ${show(content)}`);
  return { type: 'artifact', version: 1, data: { kind, content } };
}

function intentV1(data: CborMap): AipObject {
  return {
    type: 'intent',
    version: 1,
    data: {
      goal: nonempty(get(data, 'goal'), 'data.goal'),
      title: nonempty(get(data, 'title'), 'data.title'),
      context: ids(get(data, 'context'), 'data.context'),
      parents: ids(get(data, 'parents'), 'data.parents'),
      created_at: time(get(data, 'created_at'), 'data.created_at'),
      constraints: texts(get(data, 'constraints'), 'data.constraints'),
    },
  };
}

function operationV1(data: CborMap): AipObject {
  const inputs = ids(get(data, 'inputs'), 'data.inputs');
  const intent = id(get(data, 'intent'), 'data.intent');
  const rawEffects = get(data, 'effects');
  if (!isCborArray(rawEffects)) fail('schema.type', 'data.effects', `expected an array of effects, got ${show(rawEffects)}`);
  const effects: Effect[] = rawEffects.map((raw, i) => {
    const at = `data.effects[${i}]`;
    const map = fields(raw, at, FIELD_ORDER.effect);
    return {
      path: path(get(map, 'path'), `${at}.path`),
      after: optionalEntry(get(map, 'after'), `${at}.after`),
      before: optionalEntry(get(map, 'before'), `${at}.before`),
    };
  });
  const base_state = id(get(data, 'base_state'), 'data.base_state');
  for (let i = 1; i < effects.length; i++) {
    const previous = (effects[i - 1] as Effect).path;
    const current = (effects[i] as Effect).path;
    if (compareUtf8(previous, current) >= 0) {
      fail('schema.effects', `data.effects[${i}].path`, `${show(current)} is not after ${show(previous)} (effects must be sorted by path and unique)`);
    }
  }
  effects.forEach((effect, i) => {
    if (effect.before === null && effect.after === null) fail('schema.effect', `data.effects[${i}]`, 'before and after are both null');
    if (sameEntry(effect.before, effect.after)) fail('schema.effect', `data.effects[${i}]`, 'before equals after: the effect changes nothing');
  });
  const expected = expectedInputs(effects);
  if (expected.length !== inputs.length || expected.some((value, i) => value !== inputs[i])) {
    fail('schema.inputs', 'data.inputs', `must be the sorted distinct artifacts of the non-null befores: [${expected.join(', ')}]`);
  }
  return { type: 'operation', version: 1, data: { inputs, intent, effects, base_state } };
}

/** The inputs an operation must declare: sorted distinct `before.artifact` values. */
export function expectedInputs(effects: readonly Effect[]): Id[] {
  const set = new Set<Id>();
  for (const effect of effects) if (effect.before !== null) set.add(effect.before.artifact);
  return [...set].sort(compareUtf8);
}

function stateV1(data: CborMap): AipObject {
  const rawFiles = get(data, 'files');
  if (!isCborMap(rawFiles)) fail('schema.type', 'data.files', `expected a map, got ${show(rawFiles)}`);
  const files = new Map<string, FileEntry>();
  for (const [key, value] of rawFiles) {
    const at = `data.files[${quotedPath(key)}]`;
    path(key, at);
    files.set(key, fileEntry(value, at));
  }
  const conflict = findPathConflict(files.keys());
  if (conflict) fail('schema.path_conflict', 'data.files', `${show(conflict[0])} is a file and an ancestor of ${show(conflict[1])}`);
  const intents = ids(get(data, 'intents'), 'data.intents');
  const parents = ids(get(data, 'parents'), 'data.parents');
  const operations = ids(get(data, 'operations'), 'data.operations');
  const root = files.size === 0 && intents.length === 0 && parents.length === 0 && operations.length === 0;
  const single = intents.length === 1 && parents.length === 1 && operations.length === 1;
  if (!root && !single) {
    fail('schema.state_shape', 'data', `a v1 state is the root or has exactly one parent, operation and intent (got ${parents.length}, ${operations.length}, ${intents.length})`);
  }
  return { type: 'state', version: 1, data: { files, intents, parents, operations } };
}

const RESULTS = ['pass', 'fail', 'unknown'] as const satisfies readonly EvidenceResult[];

function evidenceV1(data: CborMap): AipObject {
  const cwdValue = text(get(data, 'cwd'), 'data.cwd');
  if (cwdValue !== '.') path(cwdValue, 'data.cwd');
  return {
    type: 'evidence',
    version: 1,
    data: {
      cwd: cwdValue,
      kind: nonempty(get(data, 'kind'), 'data.kind'),
      notes: text(get(data, 'notes'), 'data.notes'),
      state: id(get(data, 'state'), 'data.state'),
      result: oneOf(get(data, 'result'), 'data.result', RESULTS),
      command: nonempty(get(data, 'command'), 'data.command'),
      platform: nonempty(get(data, 'platform'), 'data.platform'),
      reporter: nonempty(get(data, 'reporter'), 'data.reporter'),
      operations: ids(get(data, 'operations'), 'data.operations'),
      provenance: oneOf(get(data, 'provenance'), 'data.provenance', ['reported'] as const),
      recorded_at: time(get(data, 'recorded_at'), 'data.recorded_at'),
    },
  };
}

function decisionV1(data: CborMap): AipObject {
  return {
    type: 'decision',
    version: 1,
    data: {
      related: ids(get(data, 'related'), 'data.related'),
      decision: nonempty(get(data, 'decision'), 'data.decision'),
      question: nonempty(get(data, 'question'), 'data.question'),
      rationale: nonempty(get(data, 'rationale'), 'data.rationale'),
      created_at: time(get(data, 'created_at'), 'data.created_at'),
      alternatives: texts(get(data, 'alternatives'), 'data.alternatives'),
    },
  };
}

const TERMINATIONS = ['exited', 'signaled', 'timeout', 'cancelled', 'start_error', 'capture_error'] as const satisfies readonly Termination[];
const WORKSPACES = ['clean', 'changed', 'unknown'] as const satisfies readonly Workspace[];

/** The result an evidence v2 must carry (spec 4.7 rule 6). */
export function expectedResult(termination: Termination, workspace: Workspace, exitCode: number | null): EvidenceResult {
  if (termination !== 'exited' || workspace === 'unknown') return 'unknown';
  return exitCode === 0 ? 'pass' : 'fail';
}

function evidenceV2(data: CborMap): AipObject {
  const cwd = oneOf(get(data, 'cwd'), 'data.cwd', ['.'] as const);
  const argv = argvField(get(data, 'argv'), 'data.argv');
  const kind = nonempty(get(data, 'kind'), 'data.kind');
  const error = text(get(data, 'error'), 'data.error');
  const state = id(get(data, 'state'), 'data.state');
  const result = oneOf(get(data, 'result'), 'data.result', RESULTS);
  const runner = nonempty(get(data, 'runner'), 'data.runner');
  const stderr = capture(get(data, 'stderr'), 'data.stderr');
  const stdout = capture(get(data, 'stdout'), 'data.stdout');
  const platform = nonempty(get(data, 'platform'), 'data.platform');
  const rawExit = get(data, 'exit_code');
  const exitValue = rawExit === null ? null : uint(rawExit, 'data.exit_code');
  const workspace = oneOf(get(data, 'workspace'), 'data.workspace', WORKSPACES);
  const executable = text(get(data, 'executable'), 'data.executable');
  const operations = ids(get(data, 'operations'), 'data.operations');
  const provenance = oneOf(get(data, 'provenance'), 'data.provenance', ['executed'] as const);
  const started_at = time(get(data, 'started_at'), 'data.started_at');
  const timeout_ns = positive(get(data, 'timeout_ns'), 'data.timeout_ns');
  const duration_ns = uint(get(data, 'duration_ns'), 'data.duration_ns');
  const environment = oneOf(get(data, 'environment'), 'data.environment', ['inherited'] as const);
  const finished_at = time(get(data, 'finished_at'), 'data.finished_at');
  const termination = oneOf(get(data, 'termination'), 'data.termination', TERMINATIONS);
  const output_limit = positive(get(data, 'output_limit'), 'data.output_limit');
  const workspace_error = text(get(data, 'workspace_error'), 'data.workspace_error');

  // Cross-field rules 1 to 6, in the spec's order. (argv is not empty: that
  // is its field rule above, checked in key order before kind.)
  if (!isNonemptyText(argv[0] as string)) fail('schema.argv', 'data.argv[0]', 'the program name must be nonempty text');
  argv.forEach((arg, i) => {
    if (arg.includes('\0')) fail('schema.argv', `data.argv[${i}]`, 'contains U+0000');
  });
  if (!(isAbsoluteExecutable(executable) || (executable === '' && termination === 'start_error'))) {
    fail('schema.executable', 'data.executable', `${show(executable)} is not an absolute path (empty is allowed only for start_error)`);
  }
  if (termination === 'exited') {
    if (exitValue === null || typeof exitValue === 'bigint' || exitValue > MAX_EXIT_CODE) {
      fail('schema.exit_code', 'data.exit_code', `an exited command needs an exit code in 0..${MAX_EXIT_CODE}, got ${show(exitValue)}`);
    }
  } else if (exitValue !== null) {
    fail('schema.exit_code', 'data.exit_code', `must be null when termination is ${termination}`);
  }
  const exit_code = exitValue as number | null;
  if (termination === 'exited' ? error !== '' : !isNonemptyText(error)) {
    fail('schema.error', 'data.error', termination === 'exited' ? 'must be empty for exited' : `must be nonempty text for ${termination}`);
  }
  if (workspace === 'unknown' ? !isNonemptyText(workspace_error) : workspace_error !== '') {
    fail('schema.workspace_error', 'data.workspace_error', workspace === 'unknown' ? 'must be nonempty text when workspace is unknown' : `must be empty when workspace is ${workspace}`);
  }
  const wanted = expectedResult(termination, workspace, exit_code);
  if (result !== wanted) fail('schema.result', 'data.result', `must be ${JSON.stringify(wanted)} for termination ${termination}, workspace ${workspace}, exit code ${show(exit_code)}`);

  return {
    type: 'evidence',
    version: 2,
    data: {
      cwd, argv, kind, error, state, result, runner, stderr, stdout, platform, exit_code, workspace, executable, operations,
      provenance, started_at, timeout_ns, duration_ns, environment, finished_at, termination, output_limit, workspace_error,
    },
  };
}

const SCHEMAS: Readonly<Record<TypeVersion, (data: CborMap) => AipObject>> = {
  'artifact/1': artifactV1,
  'intent/1': intentV1,
  'operation/1': operationV1,
  'state/1': stateV1,
  'evidence/1': evidenceV1,
  'decision/1': decisionV1,
  'evidence/2': evidenceV2,
};

export interface SchemaOptions {
  /** Supported type/version pairs; default all seven. A v1-only reader passes V1_ONLY_TYPE_VERSIONS. */
  readonly accept?: readonly TypeVersion[];
}

/** Envelope, type/version and schema checks (spec 2.5 steps 3 to 5) of a decoded value. */
export function validateObjectValue(value: CborValue, options: SchemaOptions = {}): Outcome<AipObject> {
  if (!isCborMap(value) || value.size !== 3) return failure('object.envelope', 'an object is a map with exactly type, version and data');
  const type = value.get('type');
  const version = value.get('version');
  const data = value.get('data');
  // Three keys, but not those three: name the one that does not belong.
  const stranger = [...value.keys()].find((key) => key !== 'type' && key !== 'version' && key !== 'data');
  if (stranger !== undefined) return failure('object.envelope', `an object is a map with exactly type, version and data, not ${typeof stranger === 'string' ? quoted(stranger) : 'a non-text key'}`);
  if (typeof type !== 'string') return failure('object.envelope', 'type must be text');
  if (!isUnsigned(version)) return failure('object.envelope', 'version must be an unsigned integer');
  if (!isCborMap(data)) return failure('object.envelope', 'data must be a map');
  const text = `${type}/${version}`;
  const accepted: readonly string[] = options.accept ?? ALL_TYPE_VERSIONS;
  const known = (ALL_TYPE_VERSIONS as readonly string[]).includes(text);
  if (!known || !accepted.includes(text)) {
    const name = JSON.stringify(type).slice(0, 80);
    return failure(
      'object.unsupported',
      known ? `${type} version ${version} is not supported by this reader` : `unsupported type/version pair ${name} version ${version}`,
    );
  }
  const pair = text as TypeVersion;
  const schema = SCHEMAS[pair];
  try {
    fields(data, 'data', FIELD_ORDER[pair]);
    return success(schema(data));
  } catch (error) {
    if (error instanceof SchemaFailure) return failure(error.code, error.message);
    throw error;
  }
}

// ---------------------------------------------------------------- typed -> profile value

function entryValue(entry: FileEntry | null): CborValue {
  return entry === null ? null : new Map<string, CborValue>([['artifact', entry.artifact], ['executable', entry.executable]]);
}

function captureValue(c: Capture): CborValue {
  return new Map<string, CborValue>([['artifact', c.artifact], ['truncated', c.truncated]]);
}

function dataValue(object: AipObject): Map<string, CborValue> {
  switch (object.type) {
    case 'artifact':
      return new Map<string, CborValue>([['kind', object.data.kind], ['content', object.data.content]]);
    case 'intent': {
      const d = object.data;
      return new Map<string, CborValue>([
        ['goal', d.goal], ['title', d.title], ['context', [...d.context]], ['parents', [...d.parents]],
        ['created_at', d.created_at], ['constraints', [...d.constraints]],
      ]);
    }
    case 'operation': {
      const d = object.data;
      const effects = d.effects.map((e) => new Map<string, CborValue>([['path', e.path], ['after', entryValue(e.after)], ['before', entryValue(e.before)]]));
      return new Map<string, CborValue>([['inputs', [...d.inputs]], ['intent', d.intent], ['effects', effects], ['base_state', d.base_state]]);
    }
    case 'state': {
      const d = object.data;
      const files = new Map<string, CborValue>();
      for (const [p, entry] of d.files) files.set(p, entryValue(entry));
      return new Map<string, CborValue>([['files', files], ['intents', [...d.intents]], ['parents', [...d.parents]], ['operations', [...d.operations]]]);
    }
    case 'decision': {
      const d = object.data;
      return new Map<string, CborValue>([
        ['related', [...d.related]], ['decision', d.decision], ['question', d.question], ['rationale', d.rationale],
        ['created_at', d.created_at], ['alternatives', [...d.alternatives]],
      ]);
    }
    case 'evidence': {
      if (object.version === 1) {
        const d = object.data;
        return new Map<string, CborValue>([
          ['cwd', d.cwd], ['kind', d.kind], ['notes', d.notes], ['state', d.state], ['result', d.result], ['command', d.command],
          ['platform', d.platform], ['reporter', d.reporter], ['operations', [...d.operations]], ['provenance', d.provenance],
          ['recorded_at', d.recorded_at],
        ]);
      }
      const d = object.data;
      return new Map<string, CborValue>([
        ['cwd', d.cwd], ['argv', [...d.argv]], ['kind', d.kind], ['error', d.error], ['state', d.state], ['result', d.result],
        ['runner', d.runner], ['stderr', captureValue(d.stderr)], ['stdout', captureValue(d.stdout)], ['platform', d.platform],
        ['exit_code', d.exit_code], ['workspace', d.workspace], ['executable', d.executable], ['operations', [...d.operations]],
        ['provenance', d.provenance], ['started_at', d.started_at], ['timeout_ns', d.timeout_ns], ['duration_ns', d.duration_ns],
        ['environment', d.environment], ['finished_at', d.finished_at], ['termination', d.termination],
        ['output_limit', d.output_limit], ['workspace_error', d.workspace_error],
      ]);
    }
  }
}

/** The profile value of a typed object, maps in canonical key order (the encoder sorts again). */
export function objectToValue(object: AipObject): CborMap {
  return new Map<string, CborValue>([['data', dataValue(object)], ['type', object.type], ['version', object.version]]);
}
