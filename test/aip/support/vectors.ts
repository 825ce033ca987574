// The spec's test vectors (section 10): the positive objects rebuilt as typed
// values from their diagnostic notation, and the transcribed bytes, IDs and
// expected error codes. Test support only; nothing here touches the disk.
import { readFileSync } from 'node:fs';
import type { AipObject } from '../../../src/aip/core/objects.js';

interface VectorFile {
  positive: { n: string; name: string; type: string; version: number; id: string; hex: string }[];
  negative: { n: string; name: string; from: string; defect: string; code: string; hex: string }[];
}

export const VECTORS: VectorFile = JSON.parse(readFileSync(new URL('../fixtures/vectors.json', import.meta.url), 'utf8')) as VectorFile;

export const ID = {
  V1: 'd3892a5bf1fef7589daf0d297b76d3a0630d2c516352ce43f758fd34ad632ef6',
  V2: '1d371b085e3dbd73baea6baa4003cc6604d486a876776550def84a980cbf5d59',
  V3: '33b2018ba92e3f0150bf4d1b56567abefefac00de4f3eb66f005de8bf359eb9b',
  V4: '51ad518288bb5fcec01f0808c79f298db4cc11881e70ffb9b5f7fa0e813ebdcd',
  V5: 'c481e81ee113e0903f537c7edc3fc7b3dc9fdc4e452d3bc3ddd3ef73c3c9a769',
  V6: '37230c5057fb18dd35b884d6011280b46932a208fe518527a1ffb33fb9927f94',
  V7: '4a9d79a6607651ead02a5fe557e862a484fbf8f2e58f3f2a7a257bf17503884d',
  V8: '44d00cf817bc2b3a70543542609aa4dbdb6e6068826ccdae8bc93e4b76cc5a8e',
  V9: '9cb0fabdb87994ea951e7fc2d6e8a003ff48e412b96b1074159f0283ea3f8adb',
  V10: '3270a89ec70d2656e6489c5dc4431d47a3c1eca3fd4e9fe351355410c58c6c61',
  V11: '5a39aa7f3b54ebaef21f18fe159dee63246f38012746090b1cc4cf566d34860e',
  V12: '6c9c31239794d79f9e6cc6f432feab7015f45f7768a65ece171ef73f9286524a',
  V13: '26dac182aabc7445510b84ef863b305679bd872b7bc77d83e50694b7a086af23',
} as const;

export type VectorName = keyof typeof ID;

const entry = (artifact: string, executable: boolean) => ({ artifact, executable });

export const OBJECTS: Readonly<Record<VectorName, AipObject>> = {
  V1: { type: 'state', version: 1, data: { files: new Map(), intents: [], parents: [], operations: [] } },
  V2: { type: 'artifact', version: 1, data: { kind: 'file', content: new TextEncoder().encode('hello\n') } },
  V3: { type: 'artifact', version: 1, data: { kind: 'file', content: new Uint8Array(0) } },
  V4: {
    type: 'intent',
    version: 1,
    data: {
      goal: 'Create hello.txt containing one line of greeting',
      title: 'Add a greeting',
      context: [],
      parents: [],
      created_at: '2026-01-01T00:00:00.000000000Z',
      constraints: ['Keep it to one line', 'Use a trailing newline'],
    },
  },
  V5: {
    type: 'operation',
    version: 1,
    data: { inputs: [], intent: ID.V4, effects: [{ path: 'hello.txt', after: entry(ID.V2, false), before: null }], base_state: ID.V1 },
  },
  V6: {
    type: 'state',
    version: 1,
    data: { files: new Map([['hello.txt', entry(ID.V2, false)]]), intents: [ID.V4], parents: [ID.V1], operations: [ID.V5] },
  },
  V7: {
    type: 'evidence',
    version: 1,
    data: {
      cwd: '.',
      kind: 'test',
      notes: '',
      state: ID.V6,
      result: 'pass',
      command: 'test "$(cat hello.txt)" = hello',
      platform: 'linux/amd64',
      reporter: 'example-agent',
      operations: [ID.V5],
      provenance: 'reported',
      recorded_at: '2026-01-01T00:01:00.000000000Z',
    },
  },
  V8: {
    type: 'decision',
    version: 1,
    data: {
      related: [ID.V6, ID.V7],
      decision: 'Keep it',
      question: 'Keep hello.txt as the greeting file?',
      rationale: 'The reported check passed',
      created_at: '2026-01-01T00:02:00.000000000Z',
      alternatives: ['Rename it to greeting.txt', 'Remove it'],
    },
  },
  V9: {
    type: 'evidence',
    version: 2,
    data: {
      cwd: '.',
      argv: ['cat', 'hello.txt'],
      kind: 'test',
      error: '',
      state: ID.V6,
      result: 'pass',
      runner: 'aip-vectors/1',
      stderr: { artifact: ID.V3, truncated: false },
      stdout: { artifact: ID.V2, truncated: false },
      platform: 'linux/amd64',
      exit_code: 0,
      workspace: 'clean',
      executable: '/usr/bin/cat',
      operations: [ID.V5],
      provenance: 'executed',
      started_at: '2026-01-01T00:03:00.000000000Z',
      timeout_ns: 60_000_000_000,
      duration_ns: 1_500_000,
      environment: 'inherited',
      finished_at: '2026-01-01T00:03:00.001500000Z',
      termination: 'exited',
      output_limit: 1_048_576,
      workspace_error: '',
    },
  },
  V10: {
    type: 'intent',
    version: 1,
    data: {
      goal: 'Exercise path ordering and inputs',
      title: 'Make hello.txt executable and add z',
      context: [ID.V8],
      parents: [ID.V4],
      created_at: '2026-01-01T00:04:00.000000000Z',
      constraints: ['', '\ufeffa leading byte order mark is kept', 'e\u0301 stays decomposed'],
    },
  },
  V11: {
    type: 'operation',
    version: 1,
    data: {
      inputs: [ID.V2],
      intent: ID.V10,
      effects: [
        { path: 'hello.txt', after: entry(ID.V2, true), before: entry(ID.V2, false) },
        { path: 'z', after: entry(ID.V3, false), before: null },
      ],
      base_state: ID.V6,
    },
  },
  V12: {
    type: 'state',
    version: 1,
    data: {
      files: new Map([['z', entry(ID.V3, false)], ['hello.txt', entry(ID.V2, true)]]),
      intents: [ID.V10],
      parents: [ID.V6],
      operations: [ID.V11],
    },
  },
  V13: {
    type: 'evidence',
    version: 2,
    data: {
      cwd: '.',
      argv: ['sh', '-c', 'yes hello'],
      kind: 'build',
      error: 'command exceeded its 5s timeout',
      state: ID.V12,
      result: 'unknown',
      runner: 'aip-vectors/1',
      stderr: { artifact: ID.V3, truncated: false },
      stdout: { artifact: ID.V2, truncated: true },
      platform: 'linux/amd64',
      exit_code: null,
      workspace: 'unknown',
      executable: '/bin/sh',
      operations: [],
      provenance: 'executed',
      started_at: '2026-01-01T00:05:00.000000000Z',
      timeout_ns: 5_000_000_000,
      duration_ns: 5_000_123_456,
      environment: 'inherited',
      finished_at: '2026-01-01T00:05:05.000000000Z',
      termination: 'timeout',
      output_limit: 6,
      workspace_error: 'process group still had members after the deadline',
    },
  },
};

export const VECTOR_ORDER: readonly VectorName[] = ['V1', 'V2', 'V3', 'V4', 'V5', 'V6', 'V7', 'V8', 'V9', 'V10', 'V11', 'V12', 'V13'];

export function hexToBytes(hex: string): Uint8Array {
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}
