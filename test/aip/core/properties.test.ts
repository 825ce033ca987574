// Property tests of the codec (fast-check, bounded runs): round trips of
// valid objects, canonical re-encoding, and robustness of the reader against
// mutated and random bytes (no crash, no hang, valid object or codec error).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeObject, encodeObject, objectId } from '../../../src/aip/core/codec.js';
import { PROTOCOL_CODES } from '../../../src/aip/core/errors.js';
import { objectFromJson, objectToJson } from '../../../src/aip/core/json-presentation.js';
import { anyObject } from '../support/arbitraries.js';

const RUNS = { numRuns: 300 };
const CODEC_CODES: ReadonlySet<string> = new Set(PROTOCOL_CODES.filter((c) => /^(cbor|object|schema)\./.test(c)));

function mustBytes(object: Parameters<typeof encodeObject>[0]): Uint8Array {
  const encoded = encodeObject(object);
  if (!encoded.ok) throw new Error(`${encoded.error.code}: ${encoded.error.message}`);
  return encoded.value.bytes;
}

/** Decoding either gives a valid object whose encoding is the input, or a codec error. */
function checkDecode(bytes: Uint8Array): void {
  const decoded = decodeObject(bytes);
  if (decoded.ok) {
    expect(Buffer.from(mustBytes(decoded.value)).equals(Buffer.from(bytes))).toBe(true);
  } else {
    expect(CODEC_CODES.has(decoded.error.code), decoded.error.code).toBe(true);
    expect(decoded.error.message.length).toBeGreaterThan(0);
  }
}

type Mutation = { kind: 'flip'; at: number; bit: number } | { kind: 'set'; at: number; byte: number } | { kind: 'insert'; at: number; byte: number } | { kind: 'delete'; at: number } | { kind: 'truncate'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
);

function mutate(bytes: Uint8Array, m: Mutation): Uint8Array {
  const at = bytes.length === 0 ? 0 : m.at % bytes.length;
  const copy = Uint8Array.from(bytes);
  switch (m.kind) {
    case 'flip':
      copy[at] = (copy[at] ?? 0) ^ (1 << m.bit);
      return copy;
    case 'set':
      copy[at] = m.byte;
      return copy;
    case 'insert':
      return Uint8Array.from([...bytes.subarray(0, at), m.byte, ...bytes.subarray(at)]);
    case 'delete':
      return Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1)]);
    case 'truncate':
      return bytes.subarray(0, at);
  }
}

describe('valid objects', () => {
  it('decode(encode(x)) equals x', () => {
    fc.assert(
      fc.property(anyObject, (object) => {
        const decoded = decodeObject(mustBytes(object));
        expect(decoded.ok && decoded.value).toEqual(object);
      }),
      RUNS,
    );
  });

  it('re-encoding canonical bytes gives the same bytes, and the streamed ID agrees', () => {
    fc.assert(
      fc.property(anyObject, (object) => {
        const bytes = mustBytes(object);
        const decoded = decodeObject(bytes);
        if (!decoded.ok) throw decoded.error;
        const again = encodeObject(decoded.value);
        expect(again.ok && Buffer.from(again.value.bytes).equals(Buffer.from(bytes))).toBe(true);
        expect(objectId(object)).toEqual({ ok: true, value: again.ok ? again.value.id : '' });
      }),
      RUNS,
    );
  });

  it('the JSON presentation gives back the same bytes', () => {
    fc.assert(
      fc.property(anyObject, (object) => {
        const encoded = encodeObject(object);
        if (!encoded.ok) throw encoded.error;
        const back = objectFromJson(objectToJson(encoded.value.id, object));
        expect(back.ok && Buffer.from(back.value.bytes).equals(Buffer.from(encoded.value.bytes))).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});

describe('untrusted bytes', () => {
  it('mutations of valid encodings never crash the reader', () => {
    fc.assert(
      fc.property(anyObject, fc.array(mutation, { minLength: 1, maxLength: 3 }), (object, mutations) => {
        checkDecode(mutations.reduce(mutate, mustBytes(object)));
      }),
      { numRuns: 1000 },
    );
  });

  it('random byte strings never crash the reader', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => checkDecode(bytes)), { numRuns: 1000 });
  });

  it('random bytes behind a valid envelope prefix never crash the reader', () => {
    const prefix = Buffer.from('a36464617461', 'hex');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 128 }), (tail) => checkDecode(Uint8Array.from([...prefix, ...tail]))),
      { numRuns: 500 },
    );
  });
});
