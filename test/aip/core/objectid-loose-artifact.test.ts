// docs/aip.md: expected failures are values, exceptions mean bugs. objectId
// sends an artifact that is not exactly a file artifact through encodeObject
// for the reader's code; an artifact whose data (or an envelope that) is not
// an object at all must get that code too, not a TypeError from the check
// that picks the streaming path.
import { describe, expect, it } from 'vitest';
import { encodeObject, objectId } from '../../../src/aip/core/codec.js';
import type { AipObject } from '../../../src/aip/core/objects.js';

// Deliberately ill-typed objects, built the way a JavaScript caller could.
const loose = (object: unknown): AipObject => object as AipObject;

describe('objectId of a loose artifact', () => {
  it.each([
    ['null data', { type: 'artifact', version: 1, data: null }],
    ['absent data', { type: 'artifact', version: 1 }],
    ['undefined data', { type: 'artifact', version: 1, data: undefined }],
    ['text data', { type: 'artifact', version: 1, data: 'file' }],
  ])('answers %s with the code encodeObject gives', (_name, object) => {
    const encoded = encodeObject(loose(object));
    expect(encoded.ok).toBe(false);
    const id = objectId(loose(object));
    expect(id).toMatchObject({ ok: false, error: { code: encoded.ok ? 'ok' : encoded.error.code } });
  });

  it('answers a null object with object.envelope as encodeObject does', () => {
    expect(encodeObject(loose(null))).toMatchObject({ ok: false, error: { code: 'object.envelope' } });
    expect(objectId(loose(null))).toMatchObject({ ok: false, error: { code: 'object.envelope' } });
  });
});
