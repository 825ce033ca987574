import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson, FloatValue, JsonError, parseJson, pythonFloat, renderJson, toPlainJson, utf8ByteLength } from '../../src/common/json.js';

const limits = { maxBytes: 1024, maxDepth: 4 };

describe('parseJson', () => {
  it('keeps integers exact and distinguishes 1 from 1.0', () => {
    expect(parseJson('[1, 1.0, -9223372036854775808, 9223372036854775807, 1e2]', limits)).toEqual([1n, 1, -9223372036854775808n, 9223372036854775807n, 100]);
  });

  it('parses what JSON.parse parses, with integers lifted', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        expect(toPlainJson(parseJson(text, { maxBytes: 1 << 20, maxDepth: 1000 }))).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it('rejects what JSON.parse rejects', () => {
    for (const bad of ['', '{', '[1,]', '{"a":1,}', '01', '1.', '.5', '"\\x"', 'tru', '"a\nb"', '[1] 2', 'NaN', '{"a" 1}']) {
      expect(() => parseJson(bad, limits), bad).toThrow(JsonError);
    }
  });

  it('checks size before parsing and depth while parsing', () => {
    expect(() => parseJson(`"${'x'.repeat(2000)}"`, limits)).toThrow(expect.objectContaining({ code: 'json_too_large' }));
    expect(() => parseJson('"é"', { maxBytes: 3, maxDepth: 4 })).toThrow(expect.objectContaining({ code: 'json_too_large' }));
    expect(parseJson('[[[[1]]]]', limits)).toEqual([[[[1n]]]]);
    expect(() => parseJson('[[[[[1]]]]]', limits)).toThrow(expect.objectContaining({ code: 'json_too_deep' }));
    expect(() => parseJson('['.repeat(100000), { maxBytes: 1 << 20, maxDepth: 64 })).toThrow(expect.objectContaining({ code: 'json_too_deep' }));
  });

  it('can reject duplicate member names', () => {
    expect(parseJson('{"a":1,"a":2}', limits)).toEqual({ a: 2n });
    expect(() => parseJson('{"a":1,"a":2}', { ...limits, rejectDuplicateKeys: true })).toThrow(expect.objectContaining({ code: 'json_duplicate_key' }));
  });

  it('keeps a __proto__ member as data', () => {
    const value = parseJson('{"__proto__":{"polluted":true}}', limits) as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('renderings', () => {
  it('canonical JSON sorts keys by UTF-16 units and uses ECMAScript numbers', () => {
    expect(canonicalJson({ b: 1, a: [1.5, 1e21, 1e-7, -0, 10n], '\u{1F600}': 'x', '\uFFFF': 'y' })).toBe('{"a":[1.5,1e+21,1e-7,0,10],"b":1,"\u{1F600}":"x","\uFFFF":"y"}');
    expect(canonicalJson('\u0000\u001f"\\\u007f\u2028é')).toBe('"\\u0000\\u001f\\"\\\\\u007f\u2028é"');
    expect(() => canonicalJson('\ud800')).toThrow(JsonError);
  });

  it('Python-style text escapes non-ASCII and renders floats like repr()', () => {
    const text = renderJson({ t: 'é\u{1F600}\u007f', f: new FloatValue(1), g: 0.5, n: 3 }, { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' });
    expect(text).toBe('{"t":"\\u00e9\\ud83d\\ude00\\u007f","f":1.0,"g":0.5,"n":3}');
  });

  it('pythonFloat matches repr() on the boundaries', () => {
    const cases: [number, string][] = [
      [1, '1.0'], [1e16, '1e+16'], [1e15, '1000000000000000.0'], [123456789012345680, '1.2345678901234568e+17'],
      [0.0001, '0.0001'], [0.00001, '1e-05'], [1.5e-7, '1.5e-07'], [-2.5, '-2.5'], [0, '0.0'], [1.7976931348623157e308, '1.7976931348623157e+308'],
    ];
    for (const [value, text] of cases) expect(pythonFloat(value)).toBe(text);
  });

  it('measures UTF-8 bytes exactly', () => {
    expect(utf8ByteLength('aé\u{1F600}')).toBe(1 + 2 + 4);
  });
});

describe('lossless storage rendering', () => {
  it('round-trips integers and floats exactly', async () => {
    const { losslessJson, markFloats } = await import('../../src/common/json.js');
    const value = parseJson('{"a":[1,1.0,1e16,-0.5,9223372036854775807],"b":{"c":null}}', limits);
    const text = losslessJson(value);
    expect(text).toBe('{"a":[1,1.0,1e+16,-0.5,9223372036854775807],"b":{"c":null}}');
    expect(parseJson(text, limits)).toEqual(value);
    expect(renderJson(markFloats(value), { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' })).toBe(text);
  });
});
