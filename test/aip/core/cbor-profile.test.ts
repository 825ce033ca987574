// The strict reader and the writer of the CBOR profile (spec 2): one failing
// input per error code, the number and text edge cases, and the orders.
import { describe, expect, it } from 'vitest';
import {
  compareMapKeys,
  compareUtf8,
  decodeCanonical,
  encodeCanonical,
  isCborArray,
  isCborMap,
  MAX_ARRAY_ITEMS,
  MAX_MAP_ENTRIES,
  NOT_BUILT,
  scanItem,
  type CborValue,
} from '../../../src/aip/core/cbor-profile.js';
import { hexToBytes } from '../support/vectors.js';

function codeOf(hex: string, maxBytes?: number): string | undefined {
  const result = decodeCanonical(hexToBytes(hex), maxBytes);
  return result.ok ? undefined : result.error.code;
}

describe('decodeCanonical rejects', () => {
  const cases: [string, string, string][] = [
    ['cbor.too_large', 'a0a0', 'more bytes than the bound'],
    ['cbor.truncated', '83 01 02', 'array missing an item'],
    ['cbor.truncated', '5a ffffffff 00', 'byte string longer than the input'],
    ['cbor.truncated', '9a 00010000', 'array count larger than the bytes left'],
    ['cbor.truncated', 'b9 0100 6161', 'map count needing more than the bytes left'],
    ['cbor.truncated', 'a2 01 02', 'two map entries in two bytes (a map needs two per entry), before the key type'],
    ['cbor.truncated', '19 01', 'argument cut short'],
    ['cbor.truncated', 'a2 62 61 61 00', 'input ending where the second map key should start, not a key that is not text'],
    ['cbor.truncated', '', 'empty input'],
    ['cbor.trailing', '00 00', 'a second item'],
    ['cbor.indefinite', '9f 01 ff', 'indefinite array'],
    ['cbor.indefinite', '5f 41 00 ff', 'indefinite byte string'],
    ['cbor.indefinite', 'ff', 'a lone break'],
    ['cbor.reserved', '1c', 'additional information 28'],
    ['cbor.reserved', '5e', 'additional information 30'],
    ['cbor.not_shortest', '18 17', 'one-byte argument below 24'],
    ['cbor.not_shortest', '19 00ff', 'two-byte argument below 256'],
    ['cbor.not_shortest', '1a 0000ffff', 'four-byte argument below 65536'],
    ['cbor.not_shortest', '1b 00000000ffffffff', 'eight-byte argument below 2^32'],
    ['cbor.not_shortest', '78 01 61', 'text length not shortest'],
    ['cbor.type', '20', 'negative integer'],
    ['cbor.type', 'c1 00', 'tag'],
    ['cbor.type', 'f9 3c00', 'half float'],
    ['cbor.type', 'fb 3ff0000000000000', 'double'],
    ['cbor.type', 'f7', 'undefined'],
    ['cbor.type', 'f8 20', 'one-byte simple value'],
    ['cbor.type', 'e0', 'simple value 0'],
    ['cbor.utf8', '62 c0 80', 'overlong NUL'],
    ['cbor.utf8', '63 ed a0 80', 'encoded surrogate'],
    ['cbor.utf8', '64 f4 90 80 80', 'code point above U+10FFFF'],
    ['cbor.utf8', '62 e2 82', 'truncated sequence'],
    ['cbor.utf8', '61 80', 'a lone continuation byte 0x80 (the least byte that is not ASCII)'],
    ['cbor.key_type', 'a1 01 01', 'integer key'],
    ['cbor.key_type', 'a1 41 61 01', 'byte string key'],
    ['cbor.key_order', 'a2 61 62 00 61 61 00', 'keys out of order'],
    ['cbor.key_order', 'a2 62 61 61 00 61 7a 00', 'longer key first'],
    ['cbor.key_order', 'a2 61 61 00 61 61 00', 'duplicate key'],
  ];
  for (const [code, hex, what] of cases) {
    it(`${what} with ${code}`, () => {
      expect(codeOf(hex.replace(/ /g, ''), code === 'cbor.too_large' ? 1 : undefined)).toBe(code);
    });
  }

  it('nesting deeper than 16 with cbor.too_deep', () => {
    expect(codeOf('81'.repeat(16) + '00')).toBeUndefined();
    expect(codeOf('81'.repeat(17) + '00')).toBe('cbor.too_deep');
    expect(codeOf('a1 61 61'.replace(/ /g, '').repeat(17) + '00')).toBe('cbor.too_deep');
  });

  it('names what it refuses and the byte where the refused item, argument or key starts', () => {
    const messages = [
      ['82001817', 'cbor.not_shortest', 'argument not in its shortest form at byte 2'],
      ['82001901', 'cbor.truncated', 'input ends inside an argument at byte 2'],
      ['a2616200616100', 'cbor.key_order', 'map key "a" is not after the previous key at byte 4'],
      ['81f93c00', 'cbor.type', 'floating-point number at byte 1'],
      ['81fa00000000', 'cbor.type', 'floating-point number at byte 1'],
      ['81f7', 'cbor.type', 'undefined at byte 1'],
      ['81f820', 'cbor.type', 'simple value at byte 1'],
    ];
    for (const [hex, code, message] of messages) {
      expect(decodeCanonical(hexToBytes(hex as string))).toMatchObject({ ok: false, error: { code, message } });
    }
  });

  it('an array or a map longer than the process can hold with cbor.too_large (V8 would end the process)', () => {
    const overLong = (head: number[], units: number): Uint8Array => {
      const bytes = new Uint8Array(head.length + units);
      bytes.set(head);
      return bytes;
    };
    const arrayOf = (n: number) => overLong([0x9a, n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255], n);
    const mapOf = (n: number) => overLong([0xba, n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255], 2 * n);
    const code = (bytes: Uint8Array) => {
      const result = decodeCanonical(bytes, 1 << 30);
      return result.ok ? undefined : result.error;
    };
    expect(code(arrayOf(MAX_ARRAY_ITEMS + 1))).toMatchObject({ code: 'cbor.too_large', message: `an array of ${MAX_ARRAY_ITEMS + 1} items is more than this implementation holds (at most ${MAX_ARRAY_ITEMS}) at byte 5` });
    // At the bound the check moves on: a break as the first item is cbor.indefinite.
    const atBound = arrayOf(MAX_ARRAY_ITEMS);
    atBound[5] = 0xff;
    expect(code(atBound)?.code).toBe('cbor.indefinite');
    expect(code(mapOf(MAX_MAP_ENTRIES + 1))?.code).toBe('cbor.too_large');
    // At the bound the check moves on: the map's zero bytes make a first key that is not text.
    expect(code(mapOf(MAX_MAP_ENTRIES))?.code).toBe('cbor.key_type');
  });

  it('a text longer than a JavaScript string holds with cbor.too_large, not as bad UTF-8 (max_object_bytes may be 1 GiB)', () => {
    // One character past V8's string limit (0x1fffffe8): an é (two bytes) then ASCII.
    const n = 0x1fffffe8 + 2;
    const bytes = new Uint8Array(5 + n).fill(0x61);
    bytes.set([0x7a, n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255, 0xc3, 0xa9]);
    const result = decodeCanonical(bytes, 1 << 30);
    expect(result.ok ? undefined : result.error).toMatchObject({ code: 'cbor.too_large', message: `a text string of ${n} bytes is more than this implementation holds at byte 5` });
  });

  it('huge declared lengths without allocating them', () => {
    expect(codeOf('9b ffffffffffffffff'.replace(/ /g, ''))).toBe('cbor.truncated');
    expect(codeOf('7b 7fffffffffffffff'.replace(/ /g, ''))).toBe('cbor.truncated');
  });
});

describe('decodeCanonical accepts', () => {
  it('keeps a leading U+FEFF and decomposed characters', () => {
    const result = decodeCanonical(hexToBytes('66efbbbf61cc81'));
    expect(result).toEqual({ ok: true, value: '\ufeffa\u0301' });
  });

  it('returns numbers up to 2^53-1 and bigints above', () => {
    expect(decodeCanonical(hexToBytes('1b001fffffffffffff'))).toEqual({ ok: true, value: Number.MAX_SAFE_INTEGER });
    expect(decodeCanonical(hexToBytes('1b0020000000000000'))).toEqual({ ok: true, value: 2n ** 53n });
    expect(decodeCanonical(hexToBytes('1bffffffffffffffff'))).toEqual({ ok: true, value: 2n ** 64n - 1n });
  });

  it('reads false, true, null, bytes and text-keyed maps', () => {
    const map = decodeCanonical(hexToBytes('a3617af4626161420102626262f6'));
    expect(map).toEqual({ ok: true, value: new Map<string, CborValue>([['z', false], ['aa', new Uint8Array([1, 2])], ['bb', null]]) });
  });

  it('an item of exactly max_object_bytes (the bound is inclusive)', () => {
    expect(codeOf('a0', 1)).toBeUndefined();
    expect(codeOf('4100', 2)).toBeUndefined();
    expect(codeOf('4100', 1)).toBe('cbor.too_large');
  });

  it('builds one map or array per 32 bytes plus 16, counting from where the reader starts, and stands for the rest with NOT_BUILT', () => {
    // 102 bytes: an array (built first) of 100 empty arrays or maps; floor(102 / 32) + 16 = 19 are built.
    const builtOf = (value: CborValue) => (value as CborValue[]).filter((item) => item !== NOT_BUILT).length;
    for (const empty of [0x80, 0xa0]) {
      const bytes = new Uint8Array([0x98, 100, ...new Array<number>(100).fill(empty)]);
      const decoded = decodeCanonical(bytes);
      expect(decoded.ok && builtOf(decoded.value)).toBe(18);
      // Bytes before the start are not the item's: 64 more would allow two more containers.
      const later = new Uint8Array([...new Array<number>(64).fill(0), ...bytes]);
      const scanned = scanItem(later, 64);
      expect(scanned.ok && [builtOf(scanned.value.value), scanned.value.end]).toEqual([18, 166]);
    }
  });

  it('scanItem reports where the first item ends', () => {
    expect(scanItem(hexToBytes('820102ff'))).toEqual({ ok: true, value: { value: [1, 2], end: 3 } });
  });
});

describe('encodeCanonical', () => {
  it('sorts keys by encoded form and uses shortest arguments', () => {
    const bytes = encodeCanonical(new Map<string, CborValue>([['hello.txt', 1], ['z', 24], ['aa', 256]]));
    expect(bytes.ok && Buffer.from(bytes.value).toString('hex')).toBe('a3617a1818626161190100696865' + '6c6c6f2e74787401');
  });

  it('refuses a lone surrogate instead of writing U+FFFD', () => {
    const result = encodeCanonical('a\ud800');
    expect(result.ok || result.error.code).toBe('cbor.utf8');
    const key = encodeCanonical(new Map([['a\udc00', 1]]));
    expect(key.ok || key.error.code).toBe('cbor.utf8');
  });

  it('refuses fractions, negative and unsafe numbers instead of writing floats', () => {
    for (const value of [1.5, -1, 2 ** 53, Number.NaN]) {
      const result = encodeCanonical(value);
      expect(result.ok || result.error.code).toBe('cbor.type');
    }
    const big = encodeCanonical(2n ** 64n);
    expect(big.ok || big.error.code).toBe('cbor.type');
  });

  it('writes nesting down to depth 16, a scalar inside it too, and refuses a container at depth 17 with cbor.too_deep, like the reader', () => {
    const nested = (depth: number): CborValue => (depth === 1 ? [] : [nested(depth - 1)]);
    const ok = encodeCanonical(nested(16));
    expect(ok.ok && Buffer.from(ok.value).toString('hex')).toBe('81'.repeat(15) + '80');
    const deep = encodeCanonical(nested(17));
    expect(deep.ok || deep.error.code).toBe('cbor.too_deep');
    const deepMap = encodeCanonical(new Map([['a', nested(16)]]));
    expect(deepMap.ok || deepMap.error.code).toBe('cbor.too_deep');
    // A map counts as an array does: fine at depth 16, refused at 17.
    const mapAt = (depth: number): CborValue => (depth === 1 ? new Map() : [mapAt(depth - 1)]);
    const mapOk = encodeCanonical(mapAt(16));
    expect(mapOk.ok && Buffer.from(mapOk.value).toString('hex')).toBe('81'.repeat(15) + 'a0');
    const mapDeep = encodeCanonical(mapAt(17));
    expect(mapDeep.ok || mapDeep.error.code).toBe('cbor.too_deep');
    // Only containers count (spec 2.5): a scalar inside depth 16 is written, and read back.
    let withScalar: CborValue = 0;
    for (let i = 0; i < 16; i++) withScalar = [withScalar];
    const scalar = encodeCanonical(withScalar);
    expect(scalar.ok && Buffer.from(scalar.value).toString('hex')).toBe(`${'81'.repeat(16)}00`);
    expect(codeOf(`${'81'.repeat(16)}00`)).toBeUndefined();
  });

  it('writes 2^64-1 as an eight-byte integer', () => {
    const result = encodeCanonical(2n ** 64n - 1n);
    expect(result.ok && Buffer.from(result.value).toString('hex')).toBe('1bffffffffffffffff');
  });
});

describe('NOT_BUILT', () => {
  it('is neither a map nor an array, so a schema check that reaches one fails there', () => {
    expect(isCborMap(NOT_BUILT)).toBe(false);
    expect(isCborArray(NOT_BUILT)).toBe(false);
    expect(isCborMap(new Map())).toBe(true);
  });
});

describe('orders', () => {
  it('compares UTF-8 bytes, not UTF-16 code units', () => {
    // U+FFFD (ef bf bd) sorts before U+1F600 (f0 9f 98 80) in UTF-8, after it in UTF-16.
    expect(compareUtf8('\ufffd', '\u{1f600}')).toBeLessThan(0);
    expect(Buffer.compare(Buffer.from('\ufffd'), Buffer.from('\u{1f600}'))).toBeLessThan(0);
    expect(compareUtf8('a', 'ab')).toBeLessThan(0);
    expect(compareUtf8('b', 'ab')).toBeGreaterThan(0);
    expect(compareUtf8('same', 'same')).toBe(0);
  });

  it('orders map keys shorter-first, then bytewise', () => {
    expect(['hello.txt', 'z', 'é', 'ab'].sort(compareMapKeys)).toEqual(['z', 'ab', 'é', 'hello.txt']);
  });

  it('counts UTF-8 bytes for the length at each encoding width edge, a surrogate pair as four', () => {
    // U+0080 is two bytes like "ab", then bytewise after it; U+0800 is three like "abc".
    expect(['\u0080', 'ab'].sort(compareMapKeys)).toEqual(['ab', '\u0080']);
    expect(['\u0800', 'abc'].sort(compareMapKeys)).toEqual(['abc', '\u0800']);
    // Four-byte characters (the last code point, an emoji) are shorter than five ASCII bytes.
    expect(compareMapKeys('\u{10ffff}', 'abcde')).toBeLessThan(0);
    expect(compareMapKeys('\u{1f600}', 'abcde')).toBeLessThan(0);
    expect(compareMapKeys('\u{1f600}', 'abcd')).toBeGreaterThan(0);
  });

  it('compares two supplementary characters by their low surrogates, up to U+DFFF', () => {
    // U+1F7FF is d83d dfff and U+1F400 is d83d dc00: the last low surrogate is still one.
    expect(compareUtf8('\u{1f7ff}', '\u{1f400}')).toBeGreaterThan(0);
    expect(compareUtf8('\u{1f400}', '\u{1f7ff}')).toBeLessThan(0);
  });
});
