// Graph verification (spec 5.2 to 5.6): one failing case per rule, the
// spec's graph scenarios (10.4), cycles through a fake source, memoisation.
import { describe, expect, it } from 'vitest';
import { mustEncode } from '../../../src/aip/core/codec.js';
import type { AipObject, DecisionV1, EvidenceV1, EvidenceV2, Id, IntentV1, OperationV1, StateV1 } from '../../../src/aip/core/objects.js';
import { GraphVerifier, verifyGraph, type LoadResult, type ObjectSource } from '../../../src/aip/core/verify-graph.js';
import { AipError } from '../../../src/aip/core/errors.js';
import { MemorySource } from '../support/memory-source.js';
import { ID, OBJECTS, VECTOR_ORDER } from '../support/vectors.js';

function repository(): MemorySource {
  const source = new MemorySource();
  for (const name of VECTOR_ORDER) source.add(OBJECTS[name]);
  return source;
}

async function codeOf(object: AipObject, source = repository()): Promise<string | undefined> {
  const id = source.add(object);
  const verdict = await verifyGraph(id, source);
  return verdict.ok ? undefined : verdict.error.code;
}

/** `source` behind a count of the loads of each ID. */
function countingLoads(source: ObjectSource): { counting: ObjectSource; loads: Map<Id, number> } {
  const loads = new Map<Id, number>();
  const counting: ObjectSource = {
    load: (id) => {
      loads.set(id, (loads.get(id) ?? 0) + 1);
      return source.load(id);
    },
  };
  return { counting, loads };
}

const entry = (artifact: Id, executable = false) => ({ artifact, executable });
const v4 = OBJECTS.V4 as IntentV1;
const v5 = OBJECTS.V5 as OperationV1;
const v6 = OBJECTS.V6 as StateV1;
const v7 = OBJECTS.V7 as EvidenceV1;
const v8 = OBJECTS.V8 as DecisionV1;
const v9 = OBJECTS.V9 as EvidenceV2;

describe('the spec vectors', () => {
  it('are all valid as one repository', async () => {
    const source = repository();
    const verifier = new GraphVerifier(source);
    for (const name of VECTOR_ORDER) expect((await verifier.verify(ID[name])).ok, name).toBe(true);
  });
});

describe('references (5.2)', () => {
  it('graph.missing for an ID with no object', async () => {
    expect(await codeOf({ ...v8, data: { ...v8.data, related: ['0'.repeat(64)] } })).toBe('graph.missing');
    expect(await codeOf({ ...v5, data: { ...v5.data, intent: 'f'.repeat(64) } })).toBe('graph.missing');
  });

  it('graph.type for each typed reference', async () => {
    const wrong: [string, AipObject][] = [
      ['intent parent', { ...v4, data: { ...v4.data, parents: [ID.V1] } }],
      ['operation intent', { ...v5, data: { ...v5.data, intent: ID.V6 } }],
      ['operation base_state', { ...v5, data: { ...v5.data, base_state: ID.V4 } }],
      ['operation after artifact', { ...v5, data: { ...v5.data, effects: [{ path: 'hello.txt', before: null, after: entry(ID.V4) }] } }],
      ['state parent', { ...v6, data: { ...v6.data, parents: [ID.V4] } }],
      ['state operation', { ...v6, data: { ...v6.data, operations: [ID.V4] } }],
      ['state intent', { ...v6, data: { ...v6.data, intents: [ID.V1] } }],
      ['state file', { ...v6, data: { ...v6.data, files: new Map([['hello.txt', entry(ID.V1)]]) } }],
      ['evidence state', { ...v7, data: { ...v7.data, state: ID.V5 } }],
      ['evidence operation', { ...v7, data: { ...v7.data, operations: [ID.V6] } }],
      ['evidence v2 stdout', { ...v9, data: { ...v9.data, stdout: { artifact: ID.V6, truncated: false } } }],
      ['evidence v2 stderr', { ...v9, data: { ...v9.data, stderr: { artifact: ID.V1, truncated: false } } }],
    ];
    for (const [what, object] of wrong) expect(await codeOf(object), what).toBe('graph.type');
  });

  it('lets context and related reference any type and version', async () => {
    expect(await codeOf({ ...v4, data: { ...v4.data, context: [ID.V2, ID.V13, ID.V9].sort() } })).toBeUndefined();
    expect(await codeOf({ ...v8, data: { ...v8.data, related: [ID.V13, ID.V9, ID.V3].sort() } })).toBeUndefined();
  });

  it('propagates an invalid referenced object', async () => {
    const source = repository();
    const broken: StateV1 = { ...v6, data: { ...v6.data, files: new Map([['hello.txt', entry(ID.V2, true)]]) } };
    const brokenId = source.add(broken);
    const decision: DecisionV1 = { ...v8, data: { ...v8.data, related: [brokenId] } };
    expect(await codeOf(decision, source)).toBe('graph.state_files');
  });

  it('reports a referenced object that could not be read', async () => {
    const source = repository();
    const bad: ObjectSource = {
      load: async (id: Id): Promise<LoadResult> =>
        id === ID.V3 ? { kind: 'invalid', error: new AipError('store.hash', 'corrupt') } : source.load(id),
    };
    const verdict = await verifyGraph(ID.V9, bad);
    expect(!verdict.ok && verdict.error.code).toBe('store.hash');
  });

  it('settles an ID asked for directly that is missing or unreadable with graph.missing or its own error', async () => {
    const source = repository();
    const bad: ObjectSource = {
      load: async (id: Id): Promise<LoadResult> =>
        id === ID.V3 ? { kind: 'invalid', error: new AipError('store.hash', 'corrupt') } : source.load(id),
    };
    const verifier = new GraphVerifier(bad);
    const absent = '0'.repeat(64);
    expect(await verifier.findingOf(absent)).toMatchObject({ ok: false, error: { code: 'graph.missing' } });
    expect(await verifier.findingOf(ID.V3)).toMatchObject({ ok: false, error: { code: 'store.hash' } });
    expect(await verifier.verify(absent)).toMatchObject({ ok: false, error: { code: 'graph.missing' } });
    expect(await verifier.verify(ID.V3)).toMatchObject({ ok: false, error: { code: 'store.hash' } });
  });
});

describe('operations (5.3)', () => {
  it('graph.before: re-adding a path that the base already holds', async () => {
    const op: OperationV1 = { ...v5, data: { ...v5.data, base_state: ID.V6 } };
    expect(await codeOf(op)).toBe('graph.before');
  });

  it('graph.before: removing a path the base lacks, or a before that differs', async () => {
    const removal: OperationV1 = { ...v5, data: { inputs: [ID.V2], intent: ID.V4, base_state: ID.V1, effects: [{ path: 'x', before: entry(ID.V2), after: null }] } };
    expect(await codeOf(removal)).toBe('graph.before');
    const mismatch: OperationV1 = { ...v5, data: { inputs: [ID.V2], intent: ID.V4, base_state: ID.V6, effects: [{ path: 'hello.txt', before: entry(ID.V2, true), after: null }] } };
    expect(await codeOf(mismatch)).toBe('graph.before');
  });

  it('graph.apply: adding a and a/b to the root', async () => {
    const op: OperationV1 = {
      ...v5,
      data: { ...v5.data, effects: [{ path: 'a', before: null, after: entry(ID.V2) }, { path: 'a/b', before: null, after: entry(ID.V3) }] },
    };
    expect(await codeOf(op)).toBe('graph.apply');
  });

  it('allows replacing a file by a folder of the same name', async () => {
    const source = repository();
    const op: OperationV1 = {
      ...v5,
      data: { inputs: [ID.V2], intent: ID.V4, base_state: ID.V6, effects: [{ path: 'hello.txt', before: entry(ID.V2), after: null }, { path: 'hello.txt/x', before: null, after: entry(ID.V3) }] },
    };
    expect(await codeOf(op, source)).toBeUndefined();
  });
});

describe('states (5.4)', () => {
  it('graph.state_parent: parent differs from the operation base', async () => {
    expect(await codeOf({ ...v6, data: { ...v6.data, parents: [ID.V6] } })).toBe('graph.state_parent');
  });

  it('graph.state_intents: intent differs from the operation intent', async () => {
    expect(await codeOf({ ...v6, data: { ...v6.data, intents: [ID.V10] } })).toBe('graph.state_intents');
  });

  it('graph.state_files: files differ from applying the operation', async () => {
    expect(await codeOf({ ...v6, data: { ...v6.data, files: new Map() } })).toBe('graph.state_files');
    expect(await codeOf({ ...v6, data: { ...v6.data, files: new Map([['hello.txt', entry(ID.V2)], ['extra', entry(ID.V3)]]) } })).toBe('graph.state_files');
  });
});

describe('evidence (5.5)', () => {
  it('graph.operations_subset for v1 and v2', async () => {
    expect(await codeOf({ ...v7, data: { ...v7.data, operations: [ID.V11] } })).toBe('graph.operations_subset');
    expect(await codeOf({ ...v9, data: { ...v9.data, operations: [ID.V11] } })).toBe('graph.operations_subset');
    expect(await codeOf({ ...v7, data: { ...v7.data, operations: [] } })).toBeUndefined();
  });

  it('graph.capture_length for too long and for truncated but short', async () => {
    expect(await codeOf({ ...v9, data: { ...v9.data, output_limit: 5 } })).toBe('graph.capture_length');
    expect(await codeOf({ ...v9, data: { ...v9.data, output_limit: 6, stdout: { artifact: ID.V2, truncated: true } } })).toBeUndefined();
    expect(await codeOf({ ...v9, data: { ...v9.data, output_limit: 7, stdout: { artifact: ID.V2, truncated: true } } })).toBe('graph.capture_length');
    expect(await codeOf({ ...v9, data: { ...v9.data, stderr: { artifact: ID.V3, truncated: true } } })).toBe('graph.capture_length');
  });
});

describe('cycles and memoisation (5.6)', () => {
  it('graph.cycle instead of looping', async () => {
    const source = new MemorySource();
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    source.addAs(a, { ...v4, data: { ...v4.data, parents: [b] } });
    source.addAs(b, { ...v4, data: { ...v4.data, parents: [a] } });
    const verdict = await verifyGraph(a, source);
    expect(!verdict.ok && verdict.error.code).toBe('graph.cycle');
    const self = 'c'.repeat(64);
    source.addAs(self, { ...v8, data: { ...v8.data, related: [self] } });
    const selfVerdict = await verifyGraph(self, source);
    expect(!selfVerdict.ok && selfVerdict.error.code).toBe('graph.cycle');
    // A state naming itself as a file's artifact: a cycle, found without reading the state again as an artifact.
    const selfFile = 'd'.repeat(64);
    source.addAs(selfFile, { ...v6, data: { ...v6.data, files: new Map([['hello.txt', entry(selfFile)]]) } });
    const { counting, loads } = countingLoads(source);
    const fileVerdict = await verifyGraph(selfFile, counting);
    expect(!fileVerdict.ok && fileVerdict.error.code).toBe('graph.cycle');
    expect(loads.get(selfFile)).toBe(1);
  });

  it('loads each object once per run', async () => {
    const source = repository();
    const { counting, loads } = countingLoads(source);
    const verifier = new GraphVerifier(counting);
    for (const name of VECTOR_ORDER) await verifier.verify(ID[name]);
    expect(Math.max(...loads.values())).toBe(1);
    expect(loads.size).toBe(13);
  });

  it("loads an object once when an earlier sibling's walk settled it", async () => {
    // Whatever the sorted order, some related object is reached first through another (the state through the evidence, and so on).
    const source = repository();
    const decision: DecisionV1 = { ...v8, data: { ...v8.data, related: [ID.V7, ID.V6, ID.V5, ID.V4, ID.V2, ID.V1].sort() } };
    const id = source.add(decision);
    const { counting, loads } = countingLoads(source);
    expect((await verifyGraph(id, counting)).ok).toBe(true);
    expect(Math.max(...loads.values())).toBe(1);
  });

  it('walks a non-artifact met where an artifact is expected: graph.type for the referrer, its own verdict for it', async () => {
    const source = repository();
    const broken = source.add({ ...v6, data: { ...v6.data, files: new Map() } });
    const op = source.add({ ...v5, data: { ...v5.data, effects: [{ path: 'hello.txt', before: null, after: entry(broken) }] } });
    const verifier = new GraphVerifier(source);
    expect(await verifier.verify(op)).toMatchObject({ ok: false, error: { code: 'graph.type' } });
    expect(await verifier.verify(broken)).toMatchObject({ ok: false, error: { code: 'graph.state_files' } });
  });

  it('reads a state or an operation again when the run keeps none whole, with the same verdicts', async () => {
    const source = repository();
    const { counting, loads } = countingLoads(source);
    const verifier = new GraphVerifier(counting, { keptBounds: { objects: 0, items: 0 } });
    for (const name of VECTOR_ORDER) expect((await verifier.verify(ID[name])).ok, name).toBe(true);
    expect(loads.get(ID.V1)).toBeGreaterThan(1);
    expect(loads.get(ID.V5)).toBeGreaterThan(1);
    const unkept = { keptBounds: { objects: 0, items: 0 } };
    const broken = source.add({ ...v6, data: { ...v6.data, files: new Map() } });
    expect(await verifyGraph(broken, source, unkept)).toMatchObject({ ok: false, error: { code: 'graph.state_files' } });
    const before = source.add({ ...v5, data: { ...v5.data, base_state: ID.V6 } });
    expect(await verifyGraph(before, source, unkept)).toMatchObject({ ok: false, error: { code: 'graph.before' } });
  });

  it('walks a long history of big trees within its bounds: each object read at most twice, the same verdicts', async () => {
    const source = new MemorySource();
    const artifact = (text: string): Id => source.add({ type: 'artifact', version: 1, data: { kind: 'file', content: new TextEncoder().encode(text) } });
    const intent = source.add(v4);
    const files = new Map<string, { artifact: Id; executable: boolean }>();
    let state = source.add(OBJECTS.V1);
    const states: Id[] = [];
    for (let i = 0; i < 200; i++) {
      const path = `f${String(i % 20).padStart(2, '0')}`;
      const before = files.get(path) ?? null;
      const after = entry(artifact(`${path} ${i}`));
      const operation = source.add({
        type: 'operation',
        version: 1,
        data: { inputs: before === null ? [] : [before.artifact], intent, effects: [{ path, before, after }], base_state: state },
      });
      files.set(path, after);
      state = source.add({ type: 'state', version: 1, data: { files: new Map([...files].sort()), intents: [intent], parents: [state], operations: [operation] } });
      states.push(state);
    }
    // Frames and cache together may hold about five of these states of 20 files.
    const bounds = { keptBounds: { objects: 4, items: 60 } };
    const { counting, loads } = countingLoads(source);
    expect((await new GraphVerifier(counting, bounds).verify(state)).ok).toBe(true);
    expect(loads.size).toBe(source.objects.size);
    expect(Math.max(...loads.values())).toBe(2);
    // A state deep in the history whose files do not follow from its operation is still found.
    const deep = source.objects.get(states[10] as Id) as StateV1;
    source.addAs(states[10] as Id, { ...deep, data: { ...deep.data, files: new Map() } });
    const verdict = await verifyGraph(state, source, bounds);
    expect(verdict).toMatchObject({ ok: false, error: { code: 'graph.state_files' } });
  });

  it("hands back what inspect found in each object with the object's finding", async () => {
    const source = repository();
    const seen: Id[] = [];
    const verifier = new GraphVerifier(source, { inspect: (id, object) => (seen.push(id), object.type === 'intent' ? `an intent: ${object.data.title}` : undefined) });
    expect(await verifier.findingOf(ID.V6)).toEqual({ ok: true, type: 'state', version: 1, problem: undefined });
    expect(await verifier.findingOf(ID.V4)).toEqual({ ok: true, type: 'intent', version: 1, problem: `an intent: ${v4.data.title}` });
    expect(new Set(seen)).toEqual(new Set([ID.V6, ID.V5, ID.V4, ID.V2, ID.V1]));
  });

  it('does not re-verify trusted objects', async () => {
    const source = new MemorySource();
    // A broken state nobody re-checks when it is trusted.
    const broken = source.add({ ...v6, data: { ...v6.data, files: new Map() } });
    for (const name of VECTOR_ORDER) source.add(OBJECTS[name]);
    const evidence: EvidenceV1 = { ...v7, data: { ...v7.data, state: broken } };
    const id = mustEncode(evidence).id;
    source.addAs(id, evidence);
    expect((await verifyGraph(id, source, { trusted: (x) => x !== id })).ok).toBe(true);
    expect((await verifyGraph(id, source)).ok).toBe(false);
  });
});
