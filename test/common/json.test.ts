import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  canonicalJson,
  compareCodePoints,
  FloatValue,
  holdsNumberStandIn,
  JsonError,
  jsonStringStopsAt,
  textPosition,
  losslessJson,
  markFloats,
  parseJson,
  parseJsonNotingForm,
  pythonFloat,
  renderJson,
  restoreExactNumbers,
  stringifyExact,
  toPlainJson,
  utf8ByteLength,
  withBigIntStandIns,
  withExactNumberStandIns,
  type JsonValue,
} from '../../src/common/json.js';

const limits = { maxBytes: 1024, maxDepth: 4 };

/** Where parseJson places the error it throws for `bad`, if it throws. */
function offsetOf(bad: string): number | undefined {
  try {
    parseJson(bad, limits);
  } catch (error) {
    return (error as JsonError).offset;
  }
  return undefined;
}

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

  it('places a syntax error at the character that breaks the text, or at its end', () => {
    expect(offsetOf('{"a":1 "b":2}')).toBe(7);
    expect(offsetOf('[1 2]')).toBe(3);
    expect(offsetOf('[1}')).toBe(2);
    expect(offsetOf('{"a":1]')).toBe(6);
    expect(offsetOf('{"a":1')).toBe(6);
    expect(offsetOf('[1')).toBe(2);
    expect(offsetOf('{"a" 1}')).toBe(5);
    expect(offsetOf('[1] 2')).toBe(4);
    // Inside a string: the escape's letter, the first bad hex digit, the control character, the end.
    expect(offsetOf('["ab\\qc"]')).toBe(5);
    expect(offsetOf('["ab\\u12x4"]')).toBe(8);
    expect(offsetOf('["ab\\u12"]')).toBe(8);
    expect(offsetOf('["a\\n\tb"]')).toBe(5);
    expect(offsetOf('["abc')).toBe(5);
    expect(offsetOf('["abc\\')).toBe(6);
    expect(offsetOf('["abc\\u1')).toBe(8);
    expect(offsetOf('["\\u123x"]')).toBe(7);
    expect(jsonStringStopsAt('"a\\u0041b"', 0)).toBeUndefined();
    expect(jsonStringStopsAt('x', 0)).toBe(0);
    // Columns count characters: an astral one before the error is one column.
    expect(textPosition('{"\u{1F600}": tru}', offsetOf('{"\u{1F600}": tru}') ?? 0)).toEqual({ line: 1, column: 7 });
    expect(textPosition('[1,\n "\u{1F600}" 2]', offsetOf('[1,\n "\u{1F600}" 2]') ?? 0)).toEqual({ line: 2, column: 6 });
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string(), (value, after) => {
        expect(jsonStringStopsAt(`${JSON.stringify(value)}${after}`, 0)).toBeUndefined();
      }),
    );
  });

  it('checks size before parsing and depth while parsing', () => {
    expect(() => parseJson(`"${'x'.repeat(2000)}"`, limits)).toThrow(expect.objectContaining({ code: 'json_too_large' }));
    expect(() => parseJson('"é"', { maxBytes: 3, maxDepth: 4 })).toThrow(expect.objectContaining({ code: 'json_too_large' }));
    // The size is UTF-8 bytes, for the reader that notes canonical form too (4 UTF-16 units, 6 bytes).
    expect(() => parseJsonNotingForm('"éé"', { maxBytes: 5, maxDepth: 4 })).toThrow(expect.objectContaining({ code: 'json_too_large' }));
    expect(parseJsonNotingForm('"éé"', { maxBytes: 6, maxDepth: 4 }).value).toBe('éé');
    // Containers are counted exactly: two are allowed, the third is one too many.
    expect(parseJson('[[]]', { maxBytes: 100, maxDepth: 4, maxContainers: 2 })).toEqual([[]]);
    expect(() => parseJson('[[],[]]', { maxBytes: 100, maxDepth: 4, maxContainers: 2 })).toThrow(expect.objectContaining({ code: 'json_too_many_containers' }));
    expect(parseJson('[[[[1]]]]', limits)).toEqual([[[[1n]]]]);
    expect(() => parseJson('[[[[[1]]]]]', limits)).toThrow(expect.objectContaining({ code: 'json_too_deep' }));
    expect(() => parseJson('['.repeat(100000), { maxBytes: 1 << 20, maxDepth: 64 })).toThrow(expect.objectContaining({ code: 'json_too_deep' }));
  });

  it('reads integers up to 4300 digits (Python\'s default bound) and refuses longer ones', () => {
    const roomy = { maxBytes: 1 << 20, maxDepth: 4 };
    expect(parseJson(`[-${'9'.repeat(4300)}]`, roomy)).toEqual([-(10n ** 4300n - 1n)]);
    expect(() => parseJson(`[${'9'.repeat(4301)}]`, roomy)).toThrow(expect.objectContaining({ code: 'json_unrepresentable' }));
    // The digit bound is on the integer part only: a long fraction is a float.
    expect(parseJson(`0.${'1'.repeat(5000)}`, roomy)).toBe(0.1111111111111111);
  });

  it('refuses floats beyond binary64 unless asked to keep them as Infinity', () => {
    expect(() => parseJson('[1e400]', limits)).toThrow(expect.objectContaining({ code: 'json_unrepresentable' }));
    expect(parseJson('[1e400, -1.8e308, 1e-400]', { ...limits, keepNonFiniteFloats: true })).toEqual([Infinity, -Infinity, 0]);
  });

  it("reads Python's NaN, Infinity and -Infinity tokens only when asked to keep non-finite floats", () => {
    for (const text of ['[NaN]', '[Infinity]', '[-Infinity]']) expect(() => parseJson(text, limits), text).toThrow(expect.objectContaining({ code: 'json_syntax' }));
    expect(parseJson('{"a":NaN,"b":[Infinity, -Infinity],"c":-1}', { ...limits, keepNonFiniteFloats: true })).toEqual({ a: NaN, b: [Infinity, -Infinity], c: -1n });
    expect(parseJsonNotingForm('[NaN]', { ...limits, keepNonFiniteFloats: true }).canonical).toBe(false);
    for (const text of ['[nan]', '[NaNa]', '[Inf]', '[-Infinityy]', '[+Infinity]']) expect(() => parseJson(text, { ...limits, keepNonFiniteFloats: true }), text).toThrow(expect.objectContaining({ code: 'json_syntax' }));
  });

  it('can reject duplicate member names', () => {
    expect(parseJson('{"a":1,"a":2}', limits)).toEqual({ a: 2n });
    expect(() => parseJson('{"a":1,"a":2}', { ...limits, rejectDuplicateKeys: true })).toThrow(expect.objectContaining({ code: 'json_duplicate_key' }));
    // Keys that ascend cannot repeat, so only keys after a descent are looked up: a repeat
    // above the last key, once the order broke, and repeats in nested objects are still found.
    for (const text of ['{"b":1,"a":2,"b":3}', '{"a":1,"c":2,"b":3,"c":4}', '{"x":{"b":1,"a":2,"b":3}}', '[{"a":1},{"b":1,"a":2,"a":3}]', '{"a":1,"b":2,"a":3}']) {
      expect(() => parseJson(text, { ...limits, rejectDuplicateKeys: true }), text).toThrow(expect.objectContaining({ code: 'json_duplicate_key' }));
    }
    expect(parseJsonNotingForm('{"a":{"c":1,"b":2},"b":{"a":1,"b":2}}', { ...limits, rejectDuplicateKeys: true })).toMatchObject({ canonical: false });
    expect(parseJsonNotingForm('{"a":{"b":1,"c":2},"b":{"a":1,"b":2}}', { ...limits, rejectDuplicateKeys: true })).toMatchObject({ canonical: true });
  });

  it('can bound the items of one array and the members of one object, each container on its own', () => {
    const bounded = { ...limits, maxArrayItems: 3, maxObjectMembers: 2 };
    expect(parseJson('[[1,2,3],[1,2,3],{"a":1,"b":2}]', bounded)).toEqual([[1n, 2n, 3n], [1n, 2n, 3n], { a: 1n, b: 2n }]);
    expect(() => parseJson('[[1,2,3,4]]', bounded)).toThrow(expect.objectContaining({ code: 'json_too_many_items', message: 'The JSON document has an array of more than 3 items.' }));
    expect(() => parseJson('[{"a":1,"b":2,"c":3}]', bounded)).toThrow(expect.objectContaining({ code: 'json_too_many_items', message: 'The JSON document has an object of more than 2 members.' }));
    expect(parseJson('[1,2,3,4]', limits)).toEqual([1n, 2n, 3n, 4n]);
  });

  it('keeps a __proto__ member as data', () => {
    const value = parseJson('{"__proto__":{"polluted":true}}', limits) as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('accepts a text of exactly maxBytes UTF-8 bytes, in both readers', () => {
    // "é" is three UTF-16 units and four bytes; "ab" is four of each.
    expect(parseJson('"é"', { maxBytes: 4, maxDepth: 4 })).toBe('é');
    expect(parseJson('"ab"', { maxBytes: 4, maxDepth: 4 })).toBe('ab');
    expect(parseJsonNotingForm('"ab"', { maxBytes: 4, maxDepth: 4 }).value).toBe('ab');
  });

  it("reads JSON's four whitespace characters between any tokens and no other", () => {
    const all = ' \t\n\r';
    expect(parseJson(`${all}[${all}1${all},${all}{${all}"a"${all}:${all}2${all},${all}"b"${all}:${all}[]${all}}${all}]${all}`, limits)).toEqual([1n, { a: 2n, b: [] }]);
    // A BOM, form feed, vertical tab, no-break space and line separator are not JSON whitespace.
    for (const other of ['\ufeff', '\f', '\v', '\u00a0', '\u2028']) {
      for (const text of [`${other}[1]`, `[1,${other}2]`, `{"a":1,${other}"b":2}`, `{"a"${other}:1}`]) {
        expect(() => parseJson(text, limits), JSON.stringify(text)).toThrow(expect.objectContaining({ code: 'json_syntax' }));
      }
    }
  });

  it('refuses number spellings JSON does not have', () => {
    for (const bad of ['+1', '-', '-01', '00', '1e', '1e+', '1.e1', '0x1', '- 1', '1.5.2', '[+0.5]', '{"a":+1}']) {
      expect(() => parseJson(bad, limits), bad).toThrow(expect.objectContaining({ code: 'json_syntax' }));
    }
  });

  it('refuses an object member whose name is not a string', () => {
    for (const bad of ['{a":1}', '{1:2}', '{"a":1,b":2}', '{,"a":1}']) {
      expect(() => parseJson(bad, limits), bad).toThrow(expect.objectContaining({ code: 'json_syntax' }));
    }
  });

  it('refuses every raw control character in a string, with or without an escape before it, at the character', () => {
    for (let code = 0; code < 0x20; code++) {
      const control = String.fromCharCode(code);
      for (const [text, at] of [[`["ab${control}c"]`, 4], [`["\\n${control}c"]`, 4], [`["\\/${control}"]`, 4]] as const) {
        let offset: number | undefined;
        expect(() => {
          try {
            parseJson(text, limits);
          } catch (error) {
            offset = (error as JsonError).offset;
            throw error;
          }
        }, `${code} in ${JSON.stringify(text)}`).toThrow(expect.objectContaining({ code: 'json_syntax' }));
        expect(offset, `${code} in ${JSON.stringify(text)}`).toBe(at);
      }
    }
  });

  it('places an error past a valid escape, and at the first character that is no hex digit', () => {
    expect(offsetOf('["\\/\\q"]')).toBe(5);
    // The characters on either side of each range of hex digits.
    for (const notHex of ['/', ':', '@', 'G', '`', 'g']) expect(offsetOf(`["\\u00${notHex}0"]`), notHex).toBe(6);
    expect(parseJson('"\\u09AF\\uaf09"', limits)).toBe('\u09af\uaf09');
  });

  it('decodes each escape to its character', () => {
    expect(parseJson('"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\ud83d\\ude00"', limits)).toBe('"\\/\b\f\n\r\tAé\u{1F600}');
  });

  it('counts objects as well as arrays towards depth', () => {
    expect(parseJson('{"a":[{"b":[]}]}', limits)).toEqual({ a: [{ b: [] }] });
    expect(() => parseJson('{"a":{"a":{"a":{"a":{}}}}}', limits)).toThrow(expect.objectContaining({ code: 'json_too_deep' }));
    expect(() => parseJson('[{"a":[{"b":{}}]}]', limits)).toThrow(expect.objectContaining({ code: 'json_too_deep' }));
  });

  it('nests at most 64 levels by default, as the contract bounds', () => {
    expect(parseJson(`${'['.repeat(64)}${']'.repeat(64)}`)).toBeDefined();
    expect(() => parseJson(`${'['.repeat(65)}${']'.repeat(65)}`)).toThrow(expect.objectContaining({ code: 'json_too_deep' }));
  });

  it('finds duplicate names only among the object\'s own members, not its prototype\'s', () => {
    const text = '{"b":1,"a":2,"toString":3,"constructor":4,"valueOf":5}';
    expect(parseJson(text, { ...limits, rejectDuplicateKeys: true })).toEqual({ b: 1n, a: 2n, toString: 3n, constructor: 4n, valueOf: 5n });
  });
});

describe('bigint stand-ins for a foreign serialiser', () => {
  it('survive JSON.stringify and come back as exact integers, other text untouched', () => {
    const value = { max: 9223372036854775807n, list: [-1n, 'x'], text: 'a\u0000b' };
    const text = JSON.stringify(withBigIntStandIns(value));
    expect(holdsNumberStandIn(Buffer.from(text))).toBe(true);
    expect(restoreExactNumbers(text)).toBe('{"max":9223372036854775807,"list":[-1,"x"],"text":"a\\u0000b"}');
    expect(restoreExactNumbers('{"n":"\\u0000deadbeef:1"}')).toBe('{"n":"\\u0000deadbeef:1"}');
    expect(holdsNumberStandIn(Buffer.from('{"a":1}'))).toBe(false);
  });

  it('carry the floats and integers of a lossless value as its lossless text has them', () => {
    const value = parseJson('{"a":1.0,"b":9223372036854775807,"c":[0.5,-0.0,1e16,1e-5,-3],"d":"1.0","e":null}');
    const text = restoreExactNumbers(JSON.stringify(withExactNumberStandIns(value)));
    expect(text).toBe('{"a":1.0,"b":9223372036854775807,"c":[0.5,-0.0,1e+16,1e-05,-3],"d":"1.0","e":null}');
    expect(text).toBe(losslessJson(value));
    expect(parseJson(text)).toStrictEqual(value);
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

  it('refuses a lone surrogate of either kind in canonical text, and escapes it elsewhere', () => {
    // A high surrogate before a character above the low range, a low one before another low one.
    for (const lone of ['\ud800', '\udc00', '\ud800\ue000', '\udc00\udc00', 'a\udbffb', '\ud83d\ude00\ude00']) expect(() => canonicalJson(lone), JSON.stringify(lone)).toThrow(JsonError);
    const escaping = { keyOrder: 'insertion', asciiOnly: false, floatStyle: 'ecmascript' } as const;
    expect(renderJson('\ud800\ue000', escaping)).toBe('"\\ud800\ue000"');
    expect(renderJson('\udc00\udc00', escaping)).toBe('"\\udc00\\udc00"');
    expect(renderJson('\ud83d\ude00', escaping)).toBe('"\ud83d\ude00"');
  });

  it('ASCII-only text escapes every non-ASCII character, DEL included, even alone', () => {
    const ascii = { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' } as const;
    expect(renderJson('é', ascii)).toBe('"\\u00e9"');
    expect(renderJson('a\u007fb', ascii)).toBe('"a\\u007fb"');
    expect(renderJson('~', ascii)).toBe('"~"');
  });

  it('leaves out undefined members and writes undefined items as null, as JSON.stringify does', () => {
    const value = { a: undefined, b: 1, c: [undefined, 2], d: undefined };
    expect(canonicalJson(value)).toBe(JSON.stringify(value));
    expect(canonicalJson(value)).toBe('{"b":1,"c":[null,2]}');
  });

  it('writes a FloatValue as a float in lossless style and as a plain number in ECMAScript style', () => {
    expect(renderJson([new FloatValue(1), 2], { keyOrder: 'insertion', asciiOnly: false, floatStyle: 'lossless' })).toBe('[1.0,2.0]');
    expect(canonicalJson([new FloatValue(1), new FloatValue(-0)])).toBe('[1,0]');
  });

  it('code-point key order puts astral characters after the whole BMP, and a prefix first', () => {
    expect(renderJson({ '\u{1F600}': 1, '\uffff': 2, ab: 3, a: 4 }, { keyOrder: 'codepoint', asciiOnly: false, floatStyle: 'ecmascript' })).toBe('{"a":4,"ab":3,"\uffff":2,"\u{1F600}":1}');
    expect(compareCodePoints('\u{1F600}x', '\u{1F600}y')).toBeLessThan(0);
    expect(compareCodePoints('x\u{1F600}y', 'x\u{1F600}x')).toBeGreaterThan(0);
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('ab', 'a')).toBeGreaterThan(0);
    expect(compareCodePoints('\u{1F600}', '\u{1F600}')).toBe(0);
  });

  it('toPlainJson gives what JSON.parse would, a __proto__ member as data and a FloatValue as its number', () => {
    const plain = toPlainJson(parseJson('{"__proto__":{"n":1},"m":[2.5,3]}', limits)) as Record<string, unknown>;
    expect(Object.keys(plain)).toEqual(['__proto__', 'm']);
    expect(plain).toEqual(JSON.parse('{"__proto__":{"n":1},"m":[2.5,3]}'));
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(toPlainJson({ f: new FloatValue(1) } as unknown as JsonValue)).toEqual({ f: 1 });
    expect(toPlainJson(markFloats(parseJson('[1.0,2]', limits)) as JsonValue)).toEqual([1, 2]);
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

describe('parseJsonNotingForm', () => {
  const roomy = { maxBytes: 1 << 20, maxDepth: 64 };

  /** The slow definition it must agree with: re-rendering the parse gives back the very text. */
  function rendersBack(text: string): boolean {
    try {
      return canonicalJson(parseJson(text, roomy)) === text;
    } catch {
      return false;
    }
  }

  // Texts with randomly chosen spellings: each character literal or escaped
  // (short or \u, either case), numbers in canonical or other forms, keys
  // sorted or not, optional whitespace. About half of them are canonical.
  const spelledChar = (code: number): fc.Arbitrary<string> => {
    const char = String.fromCharCode(code);
    const hex = code.toString(16).padStart(4, '0');
    const options: fc.Arbitrary<string>[] = [fc.constant(`\\u${hex}`), fc.constant(`\\u${hex.toUpperCase()}`)];
    const short: Record<number, string> = { 0x22: '\\"', 0x5c: '\\\\', 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r', 0x2f: '\\/' };
    if (short[code] !== undefined) options.push(fc.constant(short[code] as string));
    if (code >= 0x20 && code !== 0x22 && code !== 0x5c) options.push(fc.constant(char), fc.constant(char), fc.constant(char));
    return fc.oneof(...options);
  };
  const codes = fc.oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0x80, max: 0xffff }).filter((code) => code < 0xd800 || code > 0xdfff), fc.constantFrom(0x2028, 0x7f, 0x2f));
  const stringText = fc.array(codes, { maxLength: 6 }).chain((list) => (list.length === 0 ? fc.constant('""') : fc.tuple(...list.map(spelledChar)).map((parts) => `"${parts.join('')}"`)));
  const numberText = fc.oneof(
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).chain((n) => fc.constantFrom(n.toString(), `${n}.0`, `${n}e0`, n === 0n ? '-0' : n.toString())),
    fc.double({ noNaN: true, noDefaultInfinity: true }).chain((x) => fc.constantFrom(String(x), x.toExponential(), x.toPrecision(17), String(x).toUpperCase())),
  );
  const ws = fc.constantFrom('', '', '', ' ', '\n');
  const { value: valueText } = fc.letrec<{ value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.constantFrom('null', 'true', 'false'),
      stringText,
      numberText,
      fc.array(tie('value'), { maxLength: 4 }).chain((items) => ws.map((space) => `[${items.join(`,${space}`)}]`)),
      fc
        .uniqueArray(fc.tuple(fc.string({ maxLength: 4 }), tie('value')), { maxLength: 4, selector: ([key]) => key })
        .chain((members) => fc.tuple(fc.boolean(), ws).map(([sorted, space]) => {
          const ordered = sorted ? [...members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : members;
          return `{${ordered.map(([key, value]) => `${canonicalJson(key)}:${space}${value}`).join(',')}}`;
        })),
    ),
  }));

  it('calls a text canonical exactly when re-rendering its parse gives it back', () => {
    let canonicalSeen = 0;
    fc.assert(
      fc.property(fc.tuple(ws, valueText, ws), ([before, body, after]) => {
        const text = `${before}${body}${after}`;
        let expected: JsonValue;
        try {
          expected = parseJson(text, roomy);
        } catch {
          return; // out of range numbers and the like: both parsers refuse them alike (checked below)
        }
        const noted = parseJsonNotingForm(text, roomy);
        expect(noted.value).toEqual(expected);
        expect(noted.canonical).toBe(rendersBack(text));
        if (noted.canonical) canonicalSeen++;
      }),
      { numRuns: 3000 },
    );
    expect(canonicalSeen).toBeGreaterThan(200);
  });

  it('refuses what parseJson refuses, with the same code', () => {
    for (const text of ['{"a":1,"a":2}', '[1,]', '1e999', `[${'['.repeat(70)}${']'.repeat(70)}]`, '"\\x"', '{"a" 1}']) {
      const code = (run: () => unknown) => {
        try {
          run();
          return 'accepted';
        } catch (error) {
          return (error as JsonError).code;
        }
      };
      const limits = { ...roomy, rejectDuplicateKeys: true };
      expect(code(() => parseJsonNotingForm(text, limits))).toBe(code(() => parseJson(text, limits)));
      expect(code(() => parseJsonNotingForm(text, limits))).not.toBe('accepted');
    }
  });

  it('notes each non-canonical spelling', () => {
    const form = (text: string) => parseJsonNotingForm(text, roomy).canonical;
    expect(form('{"a":[1,"x",null,true,1.5,"\\u001f","\\n"],"b":{}}')).toBe(true);
    // \u0020 is the first character canonical text writes as it is (a second spelling of a space).
    for (const text of [' {}', '{"b":1,"a":2}', '{"a": 1}', '["\\/"]', '["\\u001F"]', '["\\u0041"]', '["\\u000a"]', '["\\u0020"]', '["\\u007f"]', '[1.0]', '[1e2]', '[-0]', '[0.10]', '[1E+21]']) {
      expect(form(text), text).toBe(false);
    }
  });
});

describe('stringifyExact', () => {
  it('is JSON.stringify with bigints written as exact integers', () => {
    const value = { big: 9223372036854775807n, small: [-9223372036854775808n, 0n], text: 'a\u0000b', float: 1.5, nested: { date: new Date(0) } };
    const text = stringifyExact(value);
    expect(text).toBe('{"big":9223372036854775807,"small":[-9223372036854775808,0],"text":"a\\u0000b","float":1.5,"nested":{"date":"1970-01-01T00:00:00.000Z"}}');
    expect(stringifyExact({ plain: 'x' })).toBe(JSON.stringify({ plain: 'x' }));
  });

  it('leaves strings that look like its stand-ins alone', () => {
    const lookalike = '\u000000000000000000000000:12';
    expect(stringifyExact({ lookalike, n: 1n })).toBe(`{"lookalike":${JSON.stringify(lookalike)},"n":1}`);
  });
});
