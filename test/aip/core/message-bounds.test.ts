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

describe('objects with more maps and arrays than any valid object of their size', () => {
  it('are checked whole but built only up to the bound, and fail their schema where the first unbuilt one sits', async () => {
    const { decodeCanonical, NOT_BUILT } = await import('../../../src/aip/core/cbor-profile.js');
    // {"data": {"zzz": [{} x N]}, "type": "intent", "version": 1}: a one-byte map costs ~200 bytes built.
    const n = 2_000_000;
    const head = [0xa3, 0x64, ...Buffer.from('data'), 0xa1, 0x63, ...Buffer.from('zzz'), 0x9a, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
    const tail = [0x64, ...Buffer.from('type'), 0x66, ...Buffer.from('intent'), 0x67, ...Buffer.from('version'), 0x01];
    const bytes = new Uint8Array(head.length + n + tail.length);
    bytes.set(head);
    bytes.fill(0xa0, head.length, head.length + n);
    bytes.set(tail, head.length + n);
    const value = decodeCanonical(bytes);
    if (!value.ok) throw new Error(value.error.message);
    const items = ((value.value as Map<string, unknown>).get('data') as Map<string, unknown>).get('zzz') as unknown[];
    expect(items).toHaveLength(n);
    const built = items.filter((item) => item !== NOT_BUILT).length;
    expect(built).toBeLessThan(n / 30);
    expect(decodeObject(bytes)).toMatchObject({ ok: false, error: { code: 'schema.unknown_field' } });
    // A CBOR defect after the bound is still found.
    bytes[head.length + n - 1] = 0xff;
    expect(decodeCanonical(bytes)).toMatchObject({ ok: false, error: { code: 'cbor.indefinite' } });
  });
});

describe('JSON presentations with more objects and arrays than any valid object of their size', () => {
  it('are refused while parsing (object.envelope) instead of building every one', () => {
    const text = `{"type":"intent","version":1,"data":{"zzz":[${new Array(300_000).fill('{}').join(',')}]}}`;
    const parsed = objectFromJson(text, 1 << 26);
    expect(parsed).toMatchObject({ ok: false, error: { code: 'object.envelope' } });
    expect(!parsed.ok && parsed.error.message).toContain('too many arrays and objects');
  });
});
