// fast-check generators of valid AIP objects of every type/version, in the
// canonical JavaScript form a decoder returns (numbers up to 2^53-1, bigints
// above). Test support only.
import fc from 'fast-check';
import { expectedInputs, expectedResult } from '../../../src/aip/core/schemas.js';
import { compareUtf8 } from '../../../src/aip/core/cbor-profile.js';
import type {
  AipObject, Effect, EvidenceV2, FileEntry, Termination, Uint, Workspace,
} from '../../../src/aip/core/objects.js';
import { findPathConflict, isNonemptyText, isPath } from '../../../src/aip/core/value-rules.js';

const WHITE = [' ', '\t', '\n', '\u0085', '\u00a0', '\u2028', '\u3000', '\u200a'];

export const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: fc.constantFrom(...WHITE, 'a', '\ufeff', '\u200b', '\0', 'é', '\u{1f600}'), maxLength: 6 }),
);
export const nonemptyText = anyText.filter(isNonemptyText);
export const id = fc.stringMatching(/^[0-9a-f]{64}$/);
export const ids = fc.uniqueArray(id, { maxLength: 4 }).map((list) => [...list].sort());

export const time = fc
  .record({
    y: fc.integer({ min: 0, max: 9999 }),
    mo: fc.integer({ min: 1, max: 12 }),
    d: fc.integer({ min: 1, max: 28 }),
    h: fc.integer({ min: 0, max: 23 }),
    mi: fc.integer({ min: 0, max: 59 }),
    s: fc.integer({ min: 0, max: 59 }),
    ns: fc.integer({ min: 0, max: 999_999_999 }),
  })
  .map(({ y, mo, d, h, mi, s, ns }) => {
    const p = (n: number, w: number): string => String(n).padStart(w, '0');
    return `${p(y, 4)}-${p(mo, 2)}-${p(d, 2)}T${p(h, 2)}:${p(mi, 2)}:${p(s, 2)}.${p(ns, 9)}Z`;
  });

export const uint: fc.Arbitrary<Uint> = fc.oneof(fc.maxSafeNat(), fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n }));
const positive: fc.Arbitrary<Uint> = fc.oneof(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n }));

const component = fc.oneof(
  fc.constantFrom('a', 'b', 'hello.txt', 'z', '.aipx', 'é', '\u{1f600}', ' ', '__proto__', '1'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 5 }),
);
export const path = fc.array(component, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/')).filter(isPath);
export const fileEntry: fc.Arbitrary<FileEntry> = fc.record({ artifact: id, executable: fc.boolean() });

export const artifact: fc.Arbitrary<AipObject> = fc.uint8Array({ maxLength: 64 }).map((content) => ({
  type: 'artifact', version: 1, data: { kind: 'file', content },
}));

export const intent: fc.Arbitrary<AipObject> = fc
  .record({ goal: nonemptyText, title: nonemptyText, context: ids, parents: ids, created_at: time, constraints: fc.array(anyText, { maxLength: 3 }) })
  .map((data) => ({ type: 'intent', version: 1, data }));

const effect: fc.Arbitrary<Omit<Effect, 'path'>> = fc
  .record({ before: fc.option(fileEntry, { nil: null }), after: fc.option(fileEntry, { nil: null }) })
  .filter(({ before, after }) =>
    (before !== null || after !== null) &&
    !(before !== null && after !== null && before.artifact === after.artifact && before.executable === after.executable));

export const operation: fc.Arbitrary<AipObject> = fc
  .record({ paths: fc.uniqueArray(path, { maxLength: 4 }), sides: fc.array(effect, { minLength: 4, maxLength: 4 }), intent: id, base_state: id })
  .map(({ paths, sides, intent: intentId, base_state }) => {
    const effects = [...paths].sort(compareUtf8).map((p, i) => ({ path: p, ...(sides[i] as Omit<Effect, 'path'>) }));
    return { type: 'operation', version: 1, data: { inputs: expectedInputs(effects), intent: intentId, effects, base_state } };
  });

export const state: fc.Arbitrary<AipObject> = fc.oneof(
  fc.constant<AipObject>({ type: 'state', version: 1, data: { files: new Map(), intents: [], parents: [], operations: [] } }),
  fc
    .record({ files: fc.uniqueArray(fc.tuple(path, fileEntry), { maxLength: 4, selector: ([p]) => p }), intent: id, parent: id, op: id })
    .filter(({ files }) => findPathConflict(files.map(([p]) => p)) === undefined)
    .map(({ files, intent: i, parent, op }): AipObject => ({
      type: 'state', version: 1, data: { files: new Map(files), intents: [i], parents: [parent], operations: [op] },
    })),
);

const cwd = fc.oneof(fc.constant('.'), path);
export const evidenceV1: fc.Arbitrary<AipObject> = fc
  .record({
    cwd, kind: nonemptyText, notes: anyText, state: id, result: fc.constantFrom('pass', 'fail', 'unknown'), command: nonemptyText,
    platform: nonemptyText, reporter: nonemptyText, operations: ids, recorded_at: time,
  })
  .map((d) => ({ type: 'evidence', version: 1, data: { ...d, provenance: 'reported' } }));

export const decision: fc.Arbitrary<AipObject> = fc
  .record({ related: ids, decision: nonemptyText, question: nonemptyText, rationale: nonemptyText, created_at: time, alternatives: fc.array(anyText, { maxLength: 3 }) })
  .map((data) => ({ type: 'decision', version: 1, data }));

const TERMINATIONS: Termination[] = ['exited', 'signaled', 'timeout', 'cancelled', 'start_error', 'capture_error'];
const WORKSPACES: Workspace[] = ['clean', 'changed', 'unknown'];

export const evidenceV2: fc.Arbitrary<AipObject> = fc
  .record({
    argv: fc.tuple(nonemptyText, fc.array(anyText, { maxLength: 3 })).map(([a, rest]) => [a, ...rest]).filter((a) => a.every((x) => !x.includes('\0'))),
    kind: nonemptyText, state: id, runner: nonemptyText, platform: nonemptyText, operations: ids,
    termination: fc.constantFrom(...TERMINATIONS), workspace: fc.constantFrom(...WORKSPACES),
    exit: fc.integer({ min: 0, max: 4294967295 }), error: nonemptyText, workspaceError: nonemptyText,
    executable: fc.constantFrom('/bin/sh', 'C:\\x.exe', '\\\\h\\s', ''),
    started_at: time, finished_at: time, timeout_ns: positive, duration_ns: uint, output_limit: positive,
    stdout: fc.record({ artifact: id, truncated: fc.boolean() }), stderr: fc.record({ artifact: id, truncated: fc.boolean() }),
  })
  .map((r): EvidenceV2 => {
    const exited = r.termination === 'exited';
    const exit_code = exited ? r.exit : null;
    return {
      type: 'evidence',
      version: 2,
      data: {
        cwd: '.', argv: r.argv, kind: r.kind, error: exited ? '' : r.error, state: r.state,
        result: expectedResult(r.termination, r.workspace, exit_code), runner: r.runner, stderr: r.stderr, stdout: r.stdout,
        platform: r.platform, exit_code, workspace: r.workspace,
        executable: r.executable === '' && r.termination !== 'start_error' ? '/bin/sh' : r.executable,
        operations: r.operations, provenance: 'executed', started_at: r.started_at, timeout_ns: r.timeout_ns, duration_ns: r.duration_ns,
        environment: 'inherited', finished_at: r.finished_at, termination: r.termination, output_limit: r.output_limit,
        workspace_error: r.workspace === 'unknown' ? r.workspaceError : '',
      },
    };
  });

export const anyObject: fc.Arbitrary<AipObject> = fc.oneof(artifact, intent, operation, state, evidenceV1, decision, evidenceV2);
