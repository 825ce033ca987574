// Spec 2.2 (writers never emit a field the schema does not list, and never
// omit one) for the library's typed-object encoder: a typed object with an
// extra or absent field is refused with the code a reader gives the same
// defect, instead of being encoded without the extra field (an ID for bytes
// that do not hold what the caller passed) or reported as a type error.
import { describe, expect, it } from 'vitest';
import { encodeObject, objectId } from '../../src/aip/core/codec.js';
import type { AipObject } from '../../src/aip/core/objects.js';
import { ID, OBJECTS } from './support/vectors.js';

// Deliberately ill-typed objects, built the way a JavaScript caller could.
const loose = (object: unknown): AipObject => object as AipObject;

function codeOf(object: AipObject): string {
  const encoded = encodeObject(object);
  return encoded.ok ? 'ok' : encoded.error.code;
}

describe('typed objects carry exactly their schema fields', () => {
  it('still encodes every positive vector', () => {
    for (const [name, object] of Object.entries(OBJECTS)) {
      const encoded = encodeObject(object);
      expect(encoded.ok, name).toBe(true);
      if (encoded.ok) expect(encoded.value.id).toBe(ID[name as keyof typeof ID]);
    }
  });

  it('refuses an unknown data field instead of dropping it', () => {
    const intent = OBJECTS.V4;
    expect(codeOf(loose({ ...intent, data: { ...intent.data, note: 'x' } }))).toBe('schema.unknown_field');
    expect(objectId(loose({ ...intent, data: { ...intent.data, note: 'x' } }))).toMatchObject({ ok: false, error: { code: 'schema.unknown_field' } });
  });

  it('reports an absent field as missing, also when it holds undefined', () => {
    const { title: _title, ...rest } = (OBJECTS.V4 as Extract<AipObject, { type: 'intent' }>).data;
    expect(codeOf(loose({ ...OBJECTS.V4, data: rest }))).toBe('schema.missing_field');
    expect(codeOf(loose({ ...OBJECTS.V4, data: { ...rest, title: undefined } }))).toBe('schema.missing_field');
  });

  it('refuses extra members of the envelope', () => {
    expect(codeOf(loose({ ...OBJECTS.V1, id: ID.V1 }))).toBe('object.envelope');
  });

  it('checks nested maps too: effects, file entries, captures', () => {
    const operation = OBJECTS.V5 as Extract<AipObject, { type: 'operation' }>;
    const effect = operation.data.effects[0]!;
    expect(codeOf(loose({ ...operation, data: { ...operation.data, effects: [{ ...effect, mode: 1 }] } }))).toBe('schema.unknown_field');
    expect(codeOf(loose({ ...operation, data: { ...operation.data, effects: [{ ...effect, after: { ...effect.after, size: 6 } }] } }))).toBe(
      'schema.unknown_field',
    );
    const { before: _before, ...noBefore } = effect;
    expect(codeOf(loose({ ...operation, data: { ...operation.data, effects: [noBefore] } }))).toBe('schema.missing_field');

    const state = OBJECTS.V6 as Extract<AipObject, { type: 'state' }>;
    const files = new Map([...state.data.files].map(([path, entry]) => [path, { ...entry, mode: 0o644 }]));
    expect(codeOf(loose({ ...state, data: { ...state.data, files } }))).toBe('schema.unknown_field');

    const evidence = OBJECTS.V9 as Extract<AipObject, { type: 'evidence'; version: 2 }>;
    expect(codeOf(loose({ ...evidence, data: { ...evidence.data, stdout: { ...evidence.data.stdout, bytes: 6 } } }))).toBe('schema.unknown_field');
    const { truncated: _truncated, ...noTruncated } = evidence.data.stderr;
    expect(codeOf(loose({ ...evidence, data: { ...evidence.data, stderr: noTruncated } }))).toBe('schema.missing_field');
  });
});

describe('objectId of an artifact', () => {
  const artifact = OBJECTS.V2 as Extract<AipObject, { type: 'artifact' }>;

  it('streams a plain artifact to the vector ID', () => {
    expect(objectId(artifact)).toEqual({ ok: true, value: ID.V2 });
  });

  it('gives a defective artifact the reader codes instead of an ID', () => {
    const idCode = (object: unknown): string => {
      const id = objectId(object as AipObject);
      return id.ok ? 'ok' : id.error.code;
    };
    expect(idCode({ ...artifact, data: { ...artifact.data, name: 'hello.txt' } })).toBe('schema.unknown_field');
    expect(idCode({ ...artifact, data: { ...artifact.data, kind: 'blob' } })).toBe('schema.enum');
    expect(idCode({ ...artifact, data: { ...artifact.data, content: 'hello\n' } })).toBe('schema.type');
    expect(idCode({ ...artifact, id: ID.V2 })).toBe('object.envelope');
    expect(idCode({ ...artifact, version: 2 })).toBe('object.unsupported');
  });
});
