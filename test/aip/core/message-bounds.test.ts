// Error messages quote what they refuse by a bounded part (D39): a key by
// its first 77 characters, a file path by its first 1021. Keys and paths
// are bounded only by the object's size (64 MiB), and these sites put
// them whole into a message, a location or a verify report.
import { describe, expect, it } from 'vitest';
import { decodeObject } from '../../../src/aip/core/codec.js';
import { objectFromJson } from '../../../src/aip/core/json-presentation.js';
import { ROOT_STATE_ID } from '../../../src/aip/core/objects.js';

const LONG = 100_000;

function textHeader(length: number): number[] {
  return [0x7a, (length >>> 24) & 0xff, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff];
}

describe('error messages about long keys and paths', () => {
  it('a map key out of order is quoted by its first 77 characters', () => {
    const key = (char: string): number[] => [...textHeader(LONG), ...Buffer.from(char.repeat(LONG))];
    const decoded = decodeObject(Uint8Array.from([0xa2, ...key('b'), 0x00, ...key('a'), 0x00]));
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.error.code).toBe('cbor.key_order');
    expect(decoded.error.message).toContain(`"${'a'.repeat(77)}..."`);
    expect(decoded.error.message.length).toBeLessThan(200);
  });

  it('an unknown member of a JSON presentation and a bad file path are cut', () => {
    const unknown = objectFromJson(JSON.stringify({ type: 'intent', version: 1, data: {}, ['m'.repeat(LONG)]: 1 }));
    expect(!unknown.ok && unknown.error.message.length).toBeLessThan(200);
    const artifact = 'a'.repeat(64);
    const state = { type: 'state', version: 1, data: { files: { [`x\\${'p'.repeat(LONG)}`]: { artifact, executable: false } }, intents: [ROOT_STATE_ID], parents: [ROOT_STATE_ID], operations: [ROOT_STATE_ID] } };
    const badPath = objectFromJson(JSON.stringify(state));
    expect(badPath.ok).toBe(false);
    if (badPath.ok) return;
    expect(badPath.error.code).toBe('schema.path');
    expect(badPath.error.message.length).toBeLessThan(2500);
  });
});
