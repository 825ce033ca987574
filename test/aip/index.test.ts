// The library entry point re-exports a working core: the documented example
// of docs/aip.md ("Using the library") behaves as written.
import { describe, expect, it } from 'vitest';
import { ROOT_STATE, ROOT_STATE_ID, V1_ONLY_TYPE_VERSIONS, decodeWithId, encodeObject } from '../../src/aip/index.js';
import { VECTORS, hexToBytes } from './support/vectors.js';

describe('src/aip/index.ts', () => {
  it('encodes the root state to its constant ID and decodes it back', () => {
    const encoded = encodeObject(ROOT_STATE);
    expect(encoded.ok && encoded.value.id).toBe(ROOT_STATE_ID);
    const decoded = decodeWithId(encoded.ok ? encoded.value.bytes : new Uint8Array(), { accept: V1_ONLY_TYPE_VERSIONS });
    expect(decoded.ok && decoded.value.id).toBe(ROOT_STATE_ID);
  });

  it('lets a v1-only reader refuse evidence v2', () => {
    const v9 = VECTORS.positive.find((v) => v.n === 'V9');
    const decoded = decodeWithId(hexToBytes(v9?.hex ?? ''), { accept: V1_ONLY_TYPE_VERSIONS });
    expect(decoded.ok || decoded.error.code).toBe('object.unsupported');
  });
});
