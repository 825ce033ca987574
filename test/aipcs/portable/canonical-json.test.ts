// aipcs-json-c14n-1 (operations spec §5.3) as the line parser applies it:
// only the exact canonical text of a value in the profile's domains passes.

import { describe, expect, it } from 'vitest';
import { BundleInvalidError, type BundleDefect } from '../../../src/aipcs/portable/index.js';
import { checkEncodedFrame, encodeCanonical, parseAcceptedLine, parseCanonicalLine } from '../../../src/aipcs/portable/canonical-json.js';
import { MAX_LINE_BYTES } from '../../../src/aipcs/portable/format.js';

function defectOf(run: () => unknown): BundleDefect | null {
  try {
    run();
    return null;
  } catch (error) {
    if (error instanceof BundleInvalidError) return error.reason;
    throw error;
  }
}

const defect = (text: string): BundleDefect | null => defectOf(() => parseCanonicalLine(text));

describe('canonical JSON lines', () => {
  it.each([
    '{"a":1}',
    '{"a":-9223372036854775808,"b":9223372036854775807}',
    '{"a":1.5,"b":1e+21,"c":1e-7,"d":123.456,"e":0.000001,"f":-2.5e-8}',
    '{"a":"\\b\\t\\n\\f\\r\\u0000\\u001f\\"\\\\"}',
    '{"a":"\u007f \u2028 \u2029 é 😀 /"}',
    '{"":0,"A":1,"a":2,"aa":3,"b":[],"é":{},"😀":null,"ｆ":true}',
    '{"__proto__":{"x":false}}',
  ])('accepts %s', (text) => {
    expect(defect(text)).toBeNull();
  });

  it.each<[string, BundleDefect]>([
    ['{"a":1.0}', 'not_canonical'],
    ['{"a":-0}', 'not_canonical'],
    ['{"a":-0.0}', 'not_canonical'],
    ['{"a":1E5}', 'not_canonical'],
    ['{"a":1e5}', 'not_canonical'],
    ['{"a":1e21}', 'not_canonical'],
    ['{"a":0.0000001}', 'not_canonical'],
    ['{"a":"\\u0041"}', 'not_canonical'],
    ['{"a":"\\/"}', 'not_canonical'],
    ['{"a":"\\u001F"}', 'not_canonical'],
    ['{"a":"\\u007f"}', 'not_canonical'],
    ['{"a":"\\u2028"}', 'not_canonical'],
    ['{"a":"\\ud800"}', 'not_canonical'],
    ['{"b":1,"a":2}', 'not_canonical'],
    ['{"a": 1}', 'not_canonical'],
    [' {"a":1}', 'not_canonical'],
    ['{"a":1} ', 'not_canonical'],
    ['{"a":1,"a":1}', 'json_duplicate_key'],
    ['{"a":9223372036854775808}', 'integer_out_of_range'],
    ['{"a":-9223372036854775809}', 'integer_out_of_range'],
    ['{"a":100000000000000000000}', 'integer_out_of_range'],
    // The range is named before the form, as a parse comes before a re-encoding.
    ['{"b":1,"a":9223372036854775808}', 'integer_out_of_range'],
    ['{"a": -9223372036854775809}', 'integer_out_of_range'],
    ['{"a":1e400}', 'number_out_of_range'],
    ['{"a":NaN}', 'json_malformed'],
    ['{"a":"\t"}', 'json_malformed'],
    ['{"a":1', 'json_malformed'],
    ['[1]', 'frame_shape'],
    ['"text"', 'frame_shape'],
  ])('rejects %s (%s)', (text, reason) => {
    expect(defect(text)).toBe(reason);
  });

  it('allows 64 levels with the line object as level 1, not 65', () => {
    const nested = (depth: number): string => `{"a":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
    expect(defect(nested(64))).toBeNull();
    expect(defect(nested(65))).toBe('json_too_deep');
  });

  it('bounds a line at 1 MiB of UTF-8 without its LF', () => {
    const line = (bytes: number): string => `{"a":"${'x'.repeat(bytes - 8)}"}`;
    expect(defect(line(MAX_LINE_BYTES))).toBeNull();
    expect(defect(line(MAX_LINE_BYTES + 1))).toBe('line_too_long');
  });

  it('renders the profile exactly', () => {
    expect(encodeCanonical({ b: 1, a: '\b\t\n\f\r\u0000\u001f\u007f\u2028"\\/' })).toBe('{"a":"\\b\\t\\n\\f\\r\\u0000\\u001f\u007f\u2028\\"\\\\/","b":1}');
    expect(encodeCanonical({ x: [1.0, -0, 1e21, 1e-7, 1e20, 0.1, 2n ** 63n - 1n] })).toBe('{"x":[1,0,1e+21,1e-7,100000000000000000000,0.1,9223372036854775807]}');
    // UTF-16 code-unit order: the pair of U+1F600 starts 0xD83D, below U+FF46 (code-point order would differ).
    expect(encodeCanonical({ '\uff46': 1, '😀': 2, é: 3 })).toBe('{"é":3,"😀":2,"ｆ":1}');
  });

  it('refuses values without a canonical form', () => {
    for (const value of [{ a: Number.NaN }, { a: Number.POSITIVE_INFINITY }, { a: '\ud800' }]) {
      expect(() => encodeCanonical(value)).toThrow(BundleInvalidError);
    }
  });
});

describe('the domain check of a frame the writer encoded', () => {
  it('refuses exactly the integers a read of its rendering refuses, at any depth', () => {
    // Integral numbers below 1e21 render as integer tokens; 1e21 renders as 1e+21.
    // -2 ** 63 is in range, but its text -9223372036854776000 is not.
    const refused = [2 ** 63, -(2 ** 63), 1e20, -1e19, 2n ** 63n];
    const accepted = [2 ** 63 - 1024, -(2 ** 63 - 1024), 1e21, -1e21, 0.5, 2n ** 63n - 1n, -(2n ** 63n)];
    for (const value of [...refused, ...accepted]) {
      for (const frame of [{ a: value }, { a: [0, value] }, { a: { b: [{ c: value }] } }]) {
        const read = defect(encodeCanonical(frame));
        expect(read, String(value)).toBe(refused.includes(value) ? 'integer_out_of_range' : null);
        expect(defectOf(() => checkEncodedFrame(frame)), String(value)).toBe(read);
      }
    }
  });
});

describe('the second read of an accepted line', () => {
  it.each([
    '{"a":1,"b":-7,"c":0.5,"d":1e+21,"e":1e-7,"f":[1,[2,{"g":null}],"x"],"h":true,"i":"\\u0000"}',
    '{"a":9007199254740991,"b":-9007199254740991}',
    // Beyond 2^53 JSON.parse rounds: the careful parser keeps the exact integers.
    '{"a":9007199254740993,"b":9223372036854775807,"c":-9223372036854775808}',
    '{"__proto__":{"a":1},"b":2}',
    `{"a":${'['.repeat(63)}${']'.repeat(63)}}`,
  ])('gives exactly what the first read gave: %s', (text) => {
    const value = parseAcceptedLine(text);
    expect(value).toStrictEqual(parseCanonicalLine(text));
    expect(encodeCanonical(value)).toBe(text);
  });

  it('refuses, as the first read does, a line nested too deep or not an object', () => {
    for (const text of [`{"a":${'['.repeat(64)}${']'.repeat(64)}}`, '[1]', '"text"', 'null']) {
      const first = defect(text);
      expect(first, text).not.toBeNull();
      expect(defectOf(() => parseAcceptedLine(text)), text).toBe(first);
    }
  });

  it('keeps a __proto__ member as data', () => {
    const value = parseAcceptedLine('{"__proto__":{"polluted":1}}');
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__']);
  });
});
