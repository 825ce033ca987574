// Schema rules (spec 2.3, 4) beyond the spec's negative vectors: envelope and
// version handling, the order of checks, and every evidence v2 cross-field rule.
import { describe, expect, it } from 'vitest';
import type { CborValue } from '../../../src/aip/core/cbor-profile.js';
import { decodeObject, encodeObject } from '../../../src/aip/core/codec.js';
import type { AipObject, EvidenceV2, EvidenceV2Data, IntentV1, OperationV1, StateV1 } from '../../../src/aip/core/objects.js';
import { objectToValue, sameEntry, validateObjectValue } from '../../../src/aip/core/schemas.js';
import { ID, OBJECTS } from '../support/vectors.js';

function codeOf(object: AipObject): string | undefined {
  const result = encodeObject(object);
  return result.ok ? undefined : result.error.code;
}

function valueCode(value: CborValue): string | undefined {
  const result = validateObjectValue(value);
  return result.ok ? undefined : result.error.code;
}

function withData(name: keyof typeof OBJECTS, change: (data: Map<string, CborValue>) => void): CborValue {
  const value = objectToValue(OBJECTS[name]) as Map<string, CborValue>;
  const data = new Map(value.get('data') as Map<string, CborValue>);
  change(data);
  return new Map([...value, ['data', data]]);
}

const v9 = OBJECTS.V9 as EvidenceV2;
function evidence(change: Partial<EvidenceV2Data>): EvidenceV2 {
  return { ...v9, data: { ...v9.data, ...change } };
}

describe('envelope and versions', () => {
  it('requires exactly type, version and data', () => {
    const root = objectToValue(OBJECTS.V1) as Map<string, CborValue>;
    expect(valueCode(new Map([...root, ['extra', 1]]))).toBe('object.envelope');
    expect(valueCode(new Map([...root].filter(([k]) => k !== 'version')))).toBe('object.envelope');
    expect(valueCode(new Map([...root, ['version', '1']]))).toBe('object.envelope');
    // A bigint version past 2^64-1 is not an unsigned integer of the profile (only code builds one).
    expect(valueCode(new Map([...root, ['version', 2n ** 64n]]))).toBe('object.envelope');
    expect(valueCode(new Map([...root, ['type', 1]]))).toBe('object.envelope');
    expect(valueCode(new Map([...root, ['data', []]]))).toBe('object.envelope');
    expect(valueCode([1, 2, 3])).toBe('object.envelope');
  });

  it('names the key that is not type, version or data', () => {
    const value = objectToValue(OBJECTS.V4) as Map<string, CborValue>;
    const misspelt = new Map([...value].map(([key, v]) => [key === 'data' ? 'date' : key, v]));
    const result = validateObjectValue(misspelt);
    expect(result.ok ? undefined : [result.error.code, result.error.message]).toEqual(['object.envelope', 'an object is a map with exactly type, version and data, not "date"']);
  });

  it('rejects unknown pairs and never reads them as another version', () => {
    const root = objectToValue(OBJECTS.V1) as Map<string, CborValue>;
    expect(valueCode(new Map([...root, ['version', 0]]))).toBe('object.unsupported');
    expect(valueCode(new Map([...root, ['version', 2n ** 64n - 1n]]))).toBe('object.unsupported');
    expect(valueCode(new Map([...root, ['type', 'State']]))).toBe('object.unsupported');
    const v7 = objectToValue(OBJECTS.V7) as Map<string, CborValue>;
    expect(valueCode(new Map([...v7, ['version', 3]]))).toBe('object.unsupported');
    // Evidence v1 bytes relabelled as version 2 are not v2: they fail v2's schema.
    expect(valueCode(new Map([...v7, ['version', 2]]))).toBe('schema.unknown_field');
  });
});

describe('order of checks', () => {
  it('reports unknown fields before missing ones', () => {
    expect(valueCode(withData('V4', (d) => { d.delete('goal'); d.set('zzz', 1); }))).toBe('schema.unknown_field');
    expect(valueCode(withData('V4', (d) => d.delete('goal')))).toBe('schema.missing_field');
  });

  it('quotes an unknown field name like any other refused text: at most 80 characters', () => {
    const result = validateObjectValue(withData('V4', (d) => d.set('x'.repeat(5_000_000), 1)));
    expect(!result.ok && result.error.message).toBe(`data: unknown field "${'x'.repeat(77)}..."`);
    const short = validateObjectValue(withData('V4', (d) => d.set('zzz', 1)));
    expect(!short.ok && short.error.message).toBe('data: unknown field "zzz"');
  });

  it('checks fields in canonical key order', () => {
    // goal (first) has a type error, constraints (last) too: goal is reported.
    const value = withData('V4', (d) => { d.set('goal', 1); d.set('constraints', 1); });
    const result = validateObjectValue(value);
    expect(!result.ok && result.error.message).toContain('data.goal');
  });

  it('checks nested maps the same way', () => {
    expect(valueCode(withData('V9', (d) => d.set('stdout', new Map<string, CborValue>([['artifact', ID.V2]]))))).toBe('schema.missing_field');
    expect(valueCode(withData('V9', (d) => d.set('stdout', new Map<string, CborValue>([['artifact', ID.V2], ['truncated', false], ['x', 1]]))))).toBe('schema.unknown_field');
    expect(valueCode(withData('V9', (d) => d.set('stdout', new Map<string, CborValue>([['artifact', ID.V2], ['truncated', 0]]))))).toBe('schema.type');
  });
});

// One defect per field that its own field rule (spec 4, the field tables)
// rejects, never a cross-field rule. Spec 2.5 step 5: field rules run in
// canonical key order, so with two such defects the earlier key is reported.
const BAD_FIELD: Readonly<Record<string, readonly (readonly [string, CborValue, string])[]>> = {
  V2: [['kind', 'dir', 'schema.enum'], ['content', 'x', 'schema.type']],
  V4: [
    ['goal', ' ', 'schema.nonempty'], ['title', '\u3000', 'schema.nonempty'], ['context', ['A'.repeat(64)], 'schema.id'],
    ['parents', [ID.V4, ID.V4], 'schema.ids'], ['created_at', '2026-02-30T00:00:00.000000000Z', 'schema.time'], ['constraints', [1], 'schema.type'],
  ],
  V5: [
    ['inputs', ['x'], 'schema.id'], ['intent', ID.V4.toUpperCase(), 'schema.id'],
    ['effects', [new Map<string, CborValue>([['path', 'a/../b'], ['after', null], ['before', null]])], 'schema.path'], ['base_state', 1, 'schema.type'],
  ],
  V6: [
    ['files', new Map<string, CborValue>([['a', new Map<string, CborValue>([['artifact', ID.V2], ['executable', false]])], ['a/b', new Map<string, CborValue>([['artifact', ID.V2], ['executable', false]])]]), 'schema.path_conflict'],
    ['intents', ['x'], 'schema.id'], ['parents', [ID.V1, ID.V6], 'schema.ids'], ['operations', null, 'schema.type'],
  ],
  V7: [
    ['cwd', '/abs', 'schema.path'], ['kind', ' ', 'schema.nonempty'], ['notes', 1, 'schema.type'], ['state', 'x', 'schema.id'],
    ['result', 'ok', 'schema.enum'], ['command', '\t', 'schema.nonempty'], ['platform', '', 'schema.nonempty'], ['reporter', ' ', 'schema.nonempty'],
    ['operations', ['x'], 'schema.id'], ['provenance', 'executed', 'schema.enum'], ['recorded_at', 'now', 'schema.time'],
  ],
  V8: [
    ['related', [ID.V1, ID.V2], 'schema.ids'], ['decision', ' ', 'schema.nonempty'], ['question', ' ', 'schema.nonempty'],
    ['rationale', ' ', 'schema.nonempty'], ['created_at', 'x', 'schema.time'], ['alternatives', 'x', 'schema.type'],
  ],
  V9: [
    ['cwd', 'src', 'schema.enum'], ['argv', [], 'schema.argv'], ['kind', ' ', 'schema.nonempty'], ['error', 1, 'schema.type'],
    ['state', 'x', 'schema.id'], ['result', 'ok', 'schema.enum'], ['runner', ' ', 'schema.nonempty'],
    ['stderr', new Map<string, CborValue>([['artifact', ID.V2]]), 'schema.missing_field'], ['stdout', new Map<string, CborValue>([['artifact', 'x'], ['truncated', false]]), 'schema.id'],
    ['platform', ' ', 'schema.nonempty'], ['exit_code', 'x', 'schema.type'], ['workspace', 'dirty', 'schema.enum'], ['executable', 1, 'schema.type'],
    ['operations', ['x'], 'schema.id'], ['provenance', 'reported', 'schema.enum'], ['started_at', 'x', 'schema.time'],
    ['timeout_ns', 0, 'schema.range'], ['duration_ns', 'x', 'schema.type'], ['environment', 'x', 'schema.enum'], ['finished_at', 'x', 'schema.time'],
    ['termination', 'x', 'schema.enum'], ['output_limit', 0, 'schema.range'], ['workspace_error', 1, 'schema.type'],
  ],
};

describe('field rules in canonical key order (spec 2.5 step 5)', () => {
  for (const [name, bad] of Object.entries(BAD_FIELD)) {
    const vector = name as keyof typeof OBJECTS;
    it(`${OBJECTS[vector].type}/${OBJECTS[vector].version}: the first broken field wins`, () => {
      const order = [...(objectToValue(OBJECTS[vector]).get('data') as Map<string, CborValue>).keys()];
      expect(bad.map(([field]) => field)).toEqual(order);
      for (let i = 0; i < bad.length; i++) {
        const [first, firstValue, firstCode] = bad[i]!;
        const alone = validateObjectValue(withData(vector, (d) => d.set(first, firstValue)));
        expect(alone.ok || [alone.error.code, alone.error.message.startsWith(`data.${first}`)], first).toEqual([firstCode, true]);
        for (const [later, laterValue] of bad.slice(i + 1)) {
          const both = validateObjectValue(withData(vector, (d) => { d.set(first, firstValue); d.set(later, laterValue); }));
          expect(both.ok || [both.error.code, both.error.message.startsWith(`data.${first}`)], `${first} before ${later}`).toEqual([firstCode, true]);
        }
      }
    });
  }

  it('evidence v2: an empty argv is a field rule, reported before a whitespace kind', () => {
    expect(codeOf(evidence({ argv: [], kind: ' ' }))).toBe('schema.argv');
    // argv[0] being nonempty text is cross-field rule 1: it comes after every field rule.
    expect(codeOf(evidence({ argv: [' '], kind: ' ' }))).toBe('schema.nonempty');
    expect(codeOf(evidence({ argv: ['a\0'], workspace_error: 1 as unknown as string }))).toBe('schema.type');
  });
});

describe('field rules', () => {
  it('types every field', () => {
    expect(valueCode(withData('V4', (d) => d.set('constraints', ['a', 1])))).toBe('schema.type');
    expect(valueCode(withData('V4', (d) => d.set('context', 'x')))).toBe('schema.type');
    expect(valueCode(withData('V1', (d) => d.set('files', [])))).toBe('schema.type');
    expect(valueCode(withData('V9', (d) => d.set('exit_code', 'zero')))).toBe('schema.type');
    expect(valueCode(withData('V9', (d) => d.set('duration_ns', true)))).toBe('schema.type');
  });

  it('keeps empty collections as empty, never null', () => {
    expect(valueCode(withData('V1', (d) => d.set('parents', null)))).toBe('schema.type');
  });

  it('requires timeout_ns and output_limit of at least 1', () => {
    expect(codeOf(evidence({ timeout_ns: 0 }))).toBe('schema.range');
    expect(codeOf(evidence({ output_limit: 0 }))).toBe('schema.range');
    expect(codeOf(evidence({ timeout_ns: 2n ** 64n - 1n, duration_ns: 2n ** 64n - 1n }))).toBeUndefined();
  });

  it('checks fixed texts and enumerations exactly', () => {
    expect(codeOf(evidence({ cwd: './' as '.' }))).toBe('schema.enum');
    expect(codeOf(evidence({ environment: 'Inherited' as 'inherited' }))).toBe('schema.enum');
    expect(codeOf(evidence({ provenance: 'reported' as 'executed' }))).toBe('schema.enum');
    expect(codeOf(evidence({ termination: 'killed' as 'exited' }))).toBe('schema.enum');
    expect(codeOf(evidence({ workspace: 'dirty' as 'clean' }))).toBe('schema.enum');
    for (const environment of ['cleared', 'inherited ', '']) expect(codeOf(evidence({ environment: environment as 'inherited' })), environment).toBe('schema.enum');
  });

  it('takes exactly pass, fail and unknown as an evidence v1 result', () => {
    const v7 = OBJECTS.V7 as AipObject & { type: 'evidence'; version: 1 };
    for (const result of ['pass', 'fail', 'unknown'] as const) expect(codeOf({ ...v7, data: { ...v7.data, result } }), result).toBeUndefined();
    for (const result of ['skipped', 'error', 'Pass', '']) {
      expect(codeOf({ ...v7, data: { ...v7.data, result: result as 'pass' } }), result).toBe('schema.enum');
    }
  });

  it('applies the path rules to evidence v1 cwd', () => {
    const v7 = OBJECTS.V7 as AipObject & { type: 'evidence'; version: 1 };
    expect(codeOf({ ...v7, data: { ...v7.data, cwd: 'src/lib' } })).toBeUndefined();
    expect(codeOf({ ...v7, data: { ...v7.data, cwd: '' } })).toBe('schema.path');
    expect(codeOf({ ...v7, data: { ...v7.data, cwd: '/abs' } })).toBe('schema.path');
  });

  it('refuses a lone surrogate rather than encoding U+FFFD', () => {
    const v4 = OBJECTS.V4 as IntentV1;
    expect(codeOf({ ...v4, data: { ...v4.data, constraints: ['\udc00'] } })).toBe('cbor.utf8');
    // The schema refuses it itself, for a value that is never encoded.
    const value = withData('V4', (data) => data.set('title', 'a\ud800'));
    expect(validateObjectValue(value)).toMatchObject({ ok: false, error: { code: 'cbor.utf8', message: 'data.title: text contains a lone surrogate' } });
  });

  it('gives an unsigned integer in the decoder\'s form: a number up to 2^53-1, a bigint above', () => {
    const small = validateObjectValue(withData('V9', (data) => data.set('output_limit', 6n)));
    expect(small.ok && small.value.type === 'evidence' && small.value.version === 2 && small.value.data.output_limit).toBe(6);
    const large = validateObjectValue(withData('V9', (data) => data.set('output_limit', 2n ** 53n)));
    expect(large.ok && large.value.type === 'evidence' && large.value.version === 2 && large.value.data.output_limit).toBe(2n ** 53n);
    const largest = validateObjectValue(withData('V9', (data) => data.set('output_limit', 2n ** 53n - 1n)));
    expect(largest.ok && largest.value.type === 'evidence' && largest.value.version === 2 && largest.value.data.output_limit).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses numbers that are not unsigned integers', () => {
    expect(codeOf(evidence({ duration_ns: 1.5 }))).toBe('schema.type');
    expect(codeOf(evidence({ duration_ns: -1 }))).toBe('schema.type');
  });
});

describe('state shape', () => {
  const v6 = OBJECTS.V6 as StateV1;
  const shape = (files: number, intents: string[], parents: string[], operations: string[]): StateV1 => ({
    type: 'state',
    version: 1,
    data: { files: files === 0 ? new Map() : v6.data.files, intents, parents, operations },
  });
  it('is the root or exactly one parent, operation and intent', () => {
    expect(codeOf(shape(0, [], [], []))).toBeUndefined();
    expect(codeOf(shape(0, [ID.V4], [ID.V1], [ID.V5]))).toBeUndefined();
    expect(codeOf(shape(1, [], [], []))).toBe('schema.state_shape');
    expect(codeOf(shape(0, [], [ID.V1], []))).toBe('schema.state_shape');
    expect(codeOf(shape(0, [ID.V4], [ID.V6, ID.V1], [ID.V5]))).toBe('schema.state_shape');
    expect(codeOf(shape(0, [ID.V4], [ID.V1], [ID.V11, ID.V5]))).toBe('schema.state_shape');
  });

  it('names the state itself in a shape error and the file in an entry error', () => {
    const shapeError = encodeObject(shape(1, [], [], []));
    expect(shapeError.ok || shapeError.error.message).toBe('data: a v1 state is the root or has exactly one parent, operation and intent (got 0, 0, 0)');
    const files = new Map<string, CborValue>([['src/a b', new Map<string, CborValue>([['artifact', ID.V2]])]]);
    const entryError = validateObjectValue(withData('V6', (d) => d.set('files', files)));
    expect(entryError.ok || [entryError.error.code, entryError.error.message]).toEqual(['schema.missing_field', 'data.files["src/a b"]: missing field "executable"']);
  });

  it('keeps paths such as __proto__ and numbers as plain file names', () => {
    const entry = { artifact: ID.V2, executable: false };
    const state: StateV1 = { ...v6, data: { ...v6.data, files: new Map([['__proto__', entry], ['1', entry], ['constructor', entry]]) } };
    const encoded = encodeObject(state);
    if (!encoded.ok) throw encoded.error;
    const decoded = decodeObject(encoded.value.bytes);
    expect(decoded.ok && decoded.value).toEqual(state);
  });
});

describe('operation rules', () => {
  const v11 = OBJECTS.V11 as OperationV1;
  it('allows an explicitly empty operation', () => {
    expect(codeOf({ ...v11, data: { ...v11.data, effects: [], inputs: [] } })).toBeUndefined();
  });

  it('sorts effects bytewise, not by UTF-16 code units', () => {
    const entry = { artifact: ID.V3, executable: false };
    const effects = [
      { path: '\ufffd', before: null, after: entry },
      { path: '\u{1f600}', before: null, after: entry },
    ];
    expect(codeOf({ ...v11, data: { ...v11.data, inputs: [], effects } })).toBeUndefined();
    expect(codeOf({ ...v11, data: { ...v11.data, inputs: [], effects: [...effects].reverse() } })).toBe('schema.effects');
    expect(codeOf({ ...v11, data: { ...v11.data, inputs: [], effects: [effects[0]!, effects[0]!] } })).toBe('schema.effects');
  });

  it('names an effect with both sides null as such', () => {
    const effects = [{ path: 'a', before: null, after: null }];
    const result = encodeObject({ ...v11, data: { ...v11.data, inputs: [], effects } });
    expect(result).toMatchObject({ ok: false, error: { code: 'schema.effect', message: 'data.effects[0]: before and after are both null' } });
  });

  it('counts an executability change as a change', () => {
    expect(codeOf(v11)).toBeUndefined();
  });

  it('requires inputs sorted and distinct even when befores repeat an artifact', () => {
    const before = { artifact: ID.V2, executable: false };
    const effects = [
      { path: 'a', before, after: null },
      { path: 'b', before, after: null },
    ];
    expect(codeOf({ ...v11, data: { ...v11.data, inputs: [ID.V2], effects } })).toBeUndefined();
    expect(codeOf({ ...v11, data: { ...v11.data, inputs: [], effects } })).toBe('schema.inputs');
    expect(codeOf({ ...v11, data: { ...v11.data, inputs: [ID.V2, ID.V3], effects } })).toBe('schema.inputs');
    expect(encodeObject({ ...v11, data: { ...v11.data, inputs: [], effects } })).toMatchObject({
      ok: false,
      error: { message: `data.inputs: must be the sorted distinct artifacts of the non-null befores: [${ID.V2}]` },
    });
  });

  // Messages name the exact place: the effect, its field, the out-of-order index.
  it('names the broken effect, its field and the index out of order', () => {
    const entry = { artifact: ID.V3, executable: false };
    const errorOf = (change: Partial<OperationV1['data']>) => {
      const result = encodeObject({ ...v11, data: { ...v11.data, inputs: [], ...change } });
      return result.ok ? undefined : [result.error.code, result.error.message];
    };
    expect(errorOf({ effects: [{ path: 'a/../b', before: null, after: entry }] })).toEqual(['schema.path', 'data.effects[0].path: path "a/../b" has a . or .. component']);
    expect(errorOf({ effects: [{ path: 'a', before: null, after: entry }, { path: 'c', before: null, after: entry }, { path: 'b', before: null, after: entry }] }))
      .toEqual(['schema.effects', 'data.effects[2].path: "b" is not after "c" (effects must be sorted by path and unique)']);
    // IDs lists are checked against the previous element, not the first: the third is out of order.
    const ids = validateObjectValue(withData('V11', (d) => d.set('inputs', [ID.V2, ID.V4, ID.V3])));
    expect(ids.ok || [ids.error.code, ids.error.message]).toEqual(['schema.ids', `data.inputs[2]: ${ID.V3} is not after ${ID.V4} (IDs must be sorted and unique)`]);
  });

  it('takes an effect side as null or a file entry, never false', () => {
    const effects = [new Map<string, CborValue>([['path', 'a'], ['after', false], ['before', new Map<string, CborValue>([['artifact', ID.V2], ['executable', false]])]])];
    expect(valueCode(withData('V11', (d) => { d.set('effects', effects); d.set('inputs', [ID.V2]); }))).toBe('schema.type');
  });

  it('compares entries with an absent one (undefined, a map miss) as null', () => {
    const entry = { artifact: ID.V2, executable: false };
    expect(sameEntry(null, undefined)).toBe(true);
    expect(sameEntry(undefined, null)).toBe(true);
    expect(sameEntry(entry, undefined)).toBe(false);
    expect(sameEntry(null, entry)).toBe(false);
    expect(sameEntry(entry, { ...entry })).toBe(true);
    expect(sameEntry(entry, { ...entry, executable: true })).toBe(false);
  });

  it('checks base_state (a field rule) before the order of effects (a cross-field rule)', () => {
    const entry = { artifact: ID.V3, executable: false };
    const effects = [{ path: 'b', before: null, after: entry }, { path: 'a', before: null, after: entry }];
    expect(codeOf({ ...v11, data: { ...v11.data, inputs: [], effects, base_state: 'x' } })).toBe('schema.id');
  });
});

describe('evidence v2 cross-field rules', () => {
  const failed = { termination: 'start_error' as const, exit_code: null, error: 'executable not found: x', result: 'unknown' as const };
  it('rule 1: argv', () => {
    expect(codeOf(evidence({ argv: [] }))).toBe('schema.argv');
    expect(codeOf(evidence({ argv: [''] }))).toBe('schema.argv');
    expect(codeOf(evidence({ argv: [' \u3000'] }))).toBe('schema.argv');
    expect(codeOf(evidence({ argv: ['cat', 'a\0b'] }))).toBe('schema.argv');
    expect(codeOf(evidence({ argv: ['c\0at'] }))).toBe('schema.argv');
    expect(codeOf(evidence({ argv: ['cat', '', ' ', '$(rm -rf /)', ';|&'] }))).toBeUndefined();
  });

  it('rule 2: executable', () => {
    expect(codeOf(evidence({ executable: '' }))).toBe('schema.executable');
    expect(codeOf(evidence({ ...failed, executable: '' }))).toBeUndefined();
    expect(codeOf(evidence({ ...failed, executable: '/usr/bin/x' }))).toBeUndefined();
    // Only start_error may lack a path: a command that was started had one.
    for (const termination of ['signaled', 'timeout', 'cancelled', 'capture_error'] as const) {
      expect(codeOf(evidence({ ...failed, termination, executable: '' })), termination).toBe('schema.executable');
    }
    expect(codeOf(evidence({ executable: 'C:\\tools\\cat.exe' }))).toBeUndefined();
    expect(codeOf(evidence({ executable: '\\\\host\\cat' }))).toBeUndefined();
    expect(codeOf(evidence({ executable: '/' }))).toBe('schema.executable');
  });

  it('rule 3: exit_code only for exited, within 32 bits', () => {
    expect(codeOf(evidence({ exit_code: 4294967295, result: 'fail' }))).toBeUndefined();
    expect(codeOf(evidence({ exit_code: 4294967296, result: 'fail' }))).toBe('schema.exit_code');
    expect(codeOf(evidence({ exit_code: null }))).toBe('schema.exit_code');
    expect(codeOf(evidence({ ...failed, exit_code: 1 }))).toBe('schema.exit_code');
    expect(codeOf(evidence({ ...failed, termination: 'signaled', exit_code: 0 }))).toBe('schema.exit_code');
    // Only null stands for "no exit code": false is a type error, even where null is required.
    expect(valueCode(withData('V9', (d) => { d.set('termination', 'start_error'); d.set('exit_code', false); d.set('error', 'e'); d.set('result', 'unknown'); }))).toBe('schema.type');
  });

  it('rule 4: error empty exactly for exited', () => {
    expect(codeOf(evidence({ error: 'x' }))).toBe('schema.error');
    expect(codeOf(evidence({ error: ' ' }))).toBe('schema.error');
    expect(codeOf(evidence({ ...failed, error: '' }))).toBe('schema.error');
    expect(codeOf(evidence({ ...failed, error: ' \n' }))).toBe('schema.error');
  });

  it('rule 5: workspace_error nonempty exactly for unknown', () => {
    expect(codeOf(evidence({ workspace: 'unknown', result: 'unknown', workspace_error: '' }))).toBe('schema.workspace_error');
    expect(codeOf(evidence({ workspace: 'unknown', result: 'unknown', workspace_error: 'lost' }))).toBeUndefined();
    // Nonempty text: something besides White_Space.
    for (const blank of ['\u3000', ' \n']) expect(codeOf(evidence({ workspace: 'unknown', result: 'unknown', workspace_error: blank }))).toBe('schema.workspace_error');
    expect(codeOf(evidence({ workspace_error: 'x' }))).toBe('schema.workspace_error');
    // Otherwise exactly "": whitespace is not empty.
    for (const workspace of ['clean', 'changed'] as const) expect(codeOf(evidence({ workspace, workspace_error: ' ' })), workspace).toBe('schema.workspace_error');
  });

  it('checks rules 1 to 6 in order: with every rule broken, each fix reveals the next', () => {
    const broken: Partial<EvidenceV2Data> = { argv: [''], executable: '', exit_code: null, error: 'x', workspace_error: 'x', result: 'pass', termination: 'exited' };
    const fixes: [string, Partial<EvidenceV2Data>][] = [
      ['schema.argv', { argv: ['cat'] }], ['schema.executable', { executable: '/bin/cat' }], ['schema.exit_code', { exit_code: 1 }],
      ['schema.error', { error: '' }], ['schema.workspace_error', { workspace_error: '' }], ['schema.result', { result: 'fail' }],
    ];
    let change = broken;
    for (const [code, fix] of fixes) {
      expect(codeOf(evidence(change))).toBe(code);
      change = { ...change, ...fix };
    }
    expect(codeOf(evidence(change))).toBeUndefined();
  });

  it('rule 6: result follows termination, workspace and exit code', () => {
    expect(codeOf(evidence({ workspace: 'changed' }))).toBeUndefined();
    expect(codeOf(evidence({ workspace: 'changed', result: 'fail' }))).toBe('schema.result');
    expect(codeOf(evidence({ exit_code: 2, result: 'fail' }))).toBeUndefined();
    expect(codeOf(evidence({ exit_code: 2, result: 'pass' }))).toBe('schema.result');
    expect(codeOf(evidence({ workspace: 'unknown', workspace_error: 'x', result: 'pass' }))).toBe('schema.result');
    for (const termination of ['signaled', 'timeout', 'cancelled', 'capture_error'] as const) {
      expect(codeOf(evidence({ termination, exit_code: null, error: 'e', result: 'unknown' }))).toBeUndefined();
      expect(codeOf(evidence({ termination, exit_code: null, error: 'e', result: 'fail' }))).toBe('schema.result');
    }
  });
});
