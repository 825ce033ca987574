// The JSON presentation reader (spec 9.4), `.aipignore` matching (7.7) and
// the bundle dependency order (7.8): pure parts of the repository formats.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dependencyOrder, decodeBundleHeader, decodeItemHeader, encodeBundleHeader } from '../../../src/aip/core/bundle-format.js';
import { decodeCanonical, encodeCanonical, type CborValue } from '../../../src/aip/core/cbor-profile.js';
import { isIgnored, parseIgnoreRules } from '../../../src/aip/core/ignore-rules.js';
import { objectFromJson, objectToJson, objectToJsonChunks, parseJson } from '../../../src/aip/core/json-presentation.js';
import type { AipObject, EvidenceV2, IntentV1 } from '../../../src/aip/core/objects.js';
import { artifactId, encodeObject } from '../../../src/aip/core/codec.js';
import { ID, OBJECTS } from '../support/vectors.js';

function jsonCode(text: string): string | undefined {
  const result = objectFromJson(text);
  return result.ok ? undefined : result.error.code;
}

describe('JSON presentation', () => {
  const root = '{"type":"state","version":1,"data":{"files":{},"intents":[],"parents":[],"operations":[]}}';

  it('computes the ID from CBOR and checks a given id', () => {
    const result = objectFromJson(root);
    expect(result.ok && result.value.id).toBe(ID.V1);
    expect(jsonCode(`{"id":"${ID.V1}",${root.slice(1)}`)).toBeUndefined();
    expect(jsonCode(`{"id":"${ID.V2}",${root.slice(1)}`)).toBe('object.id');
    expect(objectFromJson(`{"id":5,${root.slice(1)}`)).toMatchObject({ ok: false, error: { code: 'object.envelope', message: 'id must be a string' } });
  });

  it('says what a presentation that is not a JSON object must be', () => {
    expect(objectFromJson('[1]')).toMatchObject({ ok: false, error: { code: 'object.envelope', message: 'the JSON presentation must be an object' } });
  });

  it('says where a text stops being JSON, by line and column', () => {
    expect(objectFromJson('{\n  "type": "intent",\n}')).toMatchObject({
      ok: false,
      error: { code: 'object.envelope', message: 'invalid JSON at line 3, column 1: The JSON document is malformed.' },
    });
    expect(parseJson('{"é": tru}')).toMatchObject({ ok: false, error: { message: 'invalid JSON at line 1, column 7: The JSON document is malformed.' } });
  });

  it('is strict about JSON itself', () => {
    expect(parseJson('{"a":1,"a":2}').ok).toBe(false);
    expect(parseJson('1.0').ok).toBe(false);
    expect(parseJson('1e3').ok).toBe(false);
    expect(parseJson('-1').ok).toBe(false);
    // Refused numbers are invalid JSON for the presentation, with the envelope's code.
    expect(parseJson('-1')).toMatchObject({ ok: false, error: { code: 'object.envelope', message: 'invalid JSON: negative numbers are not allowed' } });
    expect(parseJson('[1.5]')).toMatchObject({ ok: false, error: { code: 'object.envelope', message: 'invalid JSON: only integers are allowed (no fractions or exponents)' } });
    expect(parseJson('-0').ok).toBe(false);
    expect(parseJson('{"a":[1, -0]}').ok).toBe(false);
    expect(parseJson('{"a-b":"-0\\"-1","c":0}')).toEqual({ ok: true, value: new Map<string, unknown>([['a-b', '-0"-1'], ['c', 0]]) });
    expect(parseJson('01').ok).toBe(false);
    expect(parseJson('[1,]').ok).toBe(false);
    expect(parseJson('18446744073709551616').ok).toBe(false);
    expect(parseJson('"\\ud800"')).toEqual({ ok: true, value: '\ud800' });
    expect(parseJson('['.repeat(40) + ']'.repeat(40)).ok).toBe(false);
  });

  it("refuses an array or map beyond the CBOR reader's item bounds as cbor.too_large, before building it", () => {
    const intent = (constraints: number): string =>
      `{"type":"intent","version":1,"data":{"title":"t","goal":"g","constraints":[${Array(constraints).fill('"c"').join(',')}],"context":[],"parents":[],"created_at":"2026-01-01T00:00:00.000000000Z"}}`;
    const bounds = { arrayItems: 3, mapEntries: 8 };
    expect(objectFromJson(intent(3), undefined, bounds).ok).toBe(true);
    expect(objectFromJson(intent(4), undefined, bounds)).toMatchObject({
      ok: false,
      error: { code: 'cbor.too_large', message: 'the JSON presentation has an array of more than 3 items, more than this implementation holds' },
    });
    expect(objectFromJson(intent(1), undefined, { arrayItems: 3, mapEntries: 3 })).toMatchObject({
      ok: false,
      error: { code: 'cbor.too_large', message: 'the JSON presentation has an object of more than 3 members, more than this implementation holds' },
    });
  });

  it('keeps integers above 2^53 exact', () => {
    const v9 = OBJECTS.V9 as EvidenceV2;
    const big: EvidenceV2 = { ...v9, data: { ...v9.data, timeout_ns: 2n ** 64n - 1n, duration_ns: 2n ** 53n + 1n } };
    const json = objectToJson('x', big);
    expect(json).toContain('"timeout_ns":18446744073709551615');
    expect(json).toContain('"duration_ns":9007199254740993');
    // Numbers up to 2^53-1, bigints above: the decoder's form (spec 2.5).
    expect(parseJson('[9007199254740991,9007199254740992]')).toEqual({ ok: true, value: [2 ** 53 - 1, 2n ** 53n] });
    const back = objectFromJson(json.replace('"id":"x",', ''));
    expect(back.ok && back.value.object).toEqual(big);
  });

  it('writes a presentation of any size in pieces of about 64 KiB (held whole, a large one ran out of memory)', () => {
    const intent: IntentV1 = { type: 'intent', version: 1, data: { goal: 'g', title: 't', context: [], parents: [], created_at: '2026-01-01T00:00:00.000000000Z', constraints: Array<string>(200_000).fill('') } };
    const pieces = [...objectToJsonChunks('x', intent, '  ')];
    expect(pieces.length).toBeGreaterThan(20);
    for (const piece of pieces) expect(piece.length).toBeLessThan(64 * 1024 + 64);
    const whole = pieces.join('');
    expect(whole).toBe(objectToJson('x', intent, '  '));
    expect(JSON.parse(whole)).toEqual({ id: 'x', type: 'intent', version: 1, data: { ...intent.data, constraints: intent.data.constraints } });
    expect(whole.startsWith('{\n  "id": "x",\n  "type": "intent",\n  "version": 1,\n  "data": {\n    "goal": "g",')).toBe(true);
  });

  it("writes an artifact's content as base64 in pieces that join into the one padded text", () => {
    for (const length of [0, 1, 2, 49_151, 49_152, 49_153, 200_001]) {
      const content = Buffer.alloc(length);
      for (let i = 0; i < length; i++) content[i] = (i * 7919) & 255;
      const artifact: AipObject = { type: 'artifact', version: 1, data: { kind: 'file', content } };
      const pieces = [...objectToJsonChunks('x', artifact)];
      // A piece ends once it holds 64 Ki characters: at most one base64 piece of as many more.
      for (const piece of pieces) expect(piece.length).toBeLessThan(2 * 64 * 1024 + 64);
      expect(JSON.parse(pieces.join(''))).toEqual({ id: 'x', type: 'artifact', version: 1, data: { kind: 'file', content: content.toString('base64') } });
    }
  });

  it('reads artifact content as canonical padded base64 only', () => {
    const art = (content: string) => `{"type":"artifact","version":1,"data":{"kind":"file","content":"${content}"}}`;
    const ok = objectFromJson(art('aGVsbG8K'));
    expect(ok.ok && ok.value.id).toBe(ID.V2);
    expect(jsonCode(art('aGk='))).toBeUndefined();
    expect(jsonCode(art('aGk'))).toBe('schema.type');
    expect(jsonCode(art('aGl='))).toBe('schema.type');
    expect(jsonCode(art('aGk-'))).toBe('schema.type');
    expect(jsonCode(art('aGVs bG8K'))).toBe('schema.type');
    expect(jsonCode('{"type":"artifact","version":1,"data":{"kind":"file","content":[104]}}')).toBe('schema.type');
    expect(jsonCode(art('aGk=\\n'))).toBe('schema.type');
    expect(jsonCode(art('aG_r'))).toBe('schema.type');
    // Megabytes of it: a pattern test first overflowed the stack (internal error) from about 4.5 MB.
    const content = Buffer.alloc(6_000_000, 7);
    const big = objectFromJson(art(content.toString('base64')), 1 << 26);
    expect(big.ok && big.value.id).toBe(artifactId(content));
  });

  it('checks bad content only where spec 2.5 orders the content field', () => {
    const bad = '"content":"!!"';
    expect(jsonCode(`{"type":"artifact","data":{"kind":"file",${bad}}}`)).toBe('object.envelope');
    expect(jsonCode(`{"type":"artifact","version":2,"data":{"kind":"file",${bad}}}`)).toBe('object.unsupported');
    expect(jsonCode(`{"type":"artifact","version":1,"data":{"kind":"file",${bad},"x":1}}`)).toBe('schema.unknown_field');
    expect(jsonCode(`{"type":"artifact","version":1,"data":{${bad}}}`)).toBe('schema.missing_field');
    const kind = objectFromJson(`{"type":"artifact","version":1,"data":{"kind":5,${bad}}}`);
    expect(kind.ok ? undefined : kind.error.message).toMatch(/^data\.kind:/);
    const content = objectFromJson(`{"type":"artifact","version":1,"data":{"kind":"file",${bad}}}`);
    expect(content.ok ? undefined : content.error).toMatchObject({ code: 'schema.type', message: expect.stringMatching(/^data\.content: not canonical base64/) });
    const array = objectFromJson('{"type":"artifact","version":1,"data":{"kind":"file","content":[104]}}');
    expect(array.ok ? undefined : array.error.message).toBe('data.content: expected a base64 string');
  });

  it('rejects unknown members and lone surrogates', () => {
    expect(jsonCode(`{"x":1,${root.slice(1)}`)).toBe('object.envelope');
    expect(jsonCode('{"type":"intent","version":1,"data":{"goal":"g","title":"\\udc00","context":[],"parents":[],"created_at":"2026-01-01T00:00:00.000000000Z","constraints":[]}}')).toBe('cbor.utf8');
  });

  it('shows the spec example exactly, on one line or indented', () => {
    const v1 = OBJECTS.V1;
    expect(objectToJson(ID.V1, v1)).toBe(`{"id":"${ID.V1}","type":"state","version":1,"data":{"files":{},"intents":[],"parents":[],"operations":[]}}`);
    expect(objectToJson(ID.V1, v1, '  ')).toBe(
      `{\n  "id": "${ID.V1}",\n  "type": "state",\n  "version": 1,\n  "data": {\n    "files": {},\n    "intents": [],\n    "parents": [],\n    "operations": []\n  }\n}`,
    );
  });

  it('shows every map of every vector in canonical key order (spec 2.2)', () => {
    const order = (value: unknown): unknown =>
      value instanceof Map ? [...value].map(([k, v]) => [k, order(v)]) : Array.isArray(value) ? value.map(order) : null;
    for (const [name, object] of Object.entries(OBJECTS)) {
      const id = ID[name as keyof typeof ID];
      const shown = parseJson(objectToJson(id, object));
      // The CBOR encoder sorts keys itself; the presentation must follow the same order.
      const encoded = encodeObject(object);
      const decoded = encoded.ok ? decodeCanonical(encoded.value.bytes) : encoded;
      if (!decoded.ok) throw new Error(decoded.error.message);
      expect(shown.ok && [...(shown.value as Map<string, unknown>).keys()], name).toEqual(['id', 'type', 'version', 'data']);
      expect(shown.ok && order((shown.value as Map<string, unknown>).get('data')), name).toEqual(order((decoded.value as Map<string, unknown>).get('data')));
    }
  });

  it('orders file paths as their CBOR keys: shorter UTF-8 first, then bytewise', () => {
    const entry = { artifact: ID.V2, executable: false };
    // Built in another order; é is one UTF-16 unit but two UTF-8 bytes.
    const files = new Map(['hello.txt', 'é', 'ab', 'b'].map((path) => [path, entry]));
    const state: AipObject = { type: 'state', version: 1, data: { files, intents: [ID.V10], parents: [ID.V6], operations: [ID.V11] } };
    const shown = parseJson(objectToJson('x', state));
    const data = shown.ok ? (shown.value as Map<string, Map<string, unknown>>).get('data') : undefined;
    expect([...(data?.get('files') as Map<string, unknown>).keys()]).toEqual(['b', 'ab', 'é', 'hello.txt']);
  });

  it('applies the schema', () => {
    expect(jsonCode('{"type":"state","version":1,"data":{"files":{},"intents":[],"parents":[]}}')).toBe('schema.missing_field');
    expect(jsonCode('{"type":"state","version":2,"data":{}}')).toBe('object.unsupported');
  });
});

describe('.aipignore', () => {
  const rules = (text: string) => {
    const parsed = parseIgnoreRules(text);
    if (!parsed.ok) throw parsed.error;
    return parsed.value;
  };

  it('matches names at any depth unless anchored', () => {
    const r = rules('# comment\n\n*.log\r\nbuild/\n/dist\ndocs/*.tmp\n?.o\n');
    expect(isIgnored(r, 'a.log', false)).toBe(true);
    expect(isIgnored(r, 'x/y/a.log', false)).toBe(true);
    expect(isIgnored(r, 'build', true)).toBe(true);
    expect(isIgnored(r, 'src/build', true)).toBe(true);
    expect(isIgnored(r, 'build', false)).toBe(false);
    expect(isIgnored(r, 'dist', true)).toBe(true);
    expect(isIgnored(r, 'dist', false)).toBe(true);
    expect(isIgnored(r, 'src/dist', true)).toBe(false);
    expect(isIgnored(r, 'docs/a.tmp', false)).toBe(true);
    expect(isIgnored(r, 'docs/x/a.tmp', false)).toBe(false);
    expect(isIgnored(r, 'a.o', false)).toBe(true);
    expect(isIgnored(r, 'ab.o', false)).toBe(false);
    expect(isIgnored(r, '# comment', false)).toBe(false);
  });

  it('treats regex characters literally', () => {
    const r = rules('a+b(1).[x]\n');
    expect(isIgnored(r, 'a+b(1).[x]', false)).toBe(true);
    expect(isIgnored(r, 'aab(1)x[x]', false)).toBe(false);
  });

  it('matches as the gitignore-style regular expression would, * and ? never crossing /', () => {
    // The reference: the regular expression the matcher replaced (too slow on
    // many stars, fine on these short inputs).
    const reference = (pattern: string, path: string, isDirectory: boolean): boolean => {
      let glob = pattern;
      const directoryOnly = glob.endsWith('/');
      if (directoryOnly) glob = glob.slice(0, -1);
      const anchored = glob.includes('/');
      if (glob.startsWith('/')) glob = glob.slice(1);
      if (directoryOnly && !isDirectory) return false;
      const source = Array.from(glob, (c) => (c === '*' ? '[^/]*' : c === '?' ? '[^/]' : c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))).join('');
      return new RegExp(`^${source}$`, 'u').test(anchored ? path : path.slice(path.lastIndexOf('/') + 1));
    };
    const char = fc.constantFrom('a', 'b', 'é', '😀', '.', '/');
    const patternChar = fc.constantFrom('a', 'b', 'é', '😀', '.', '/', '*', '?');
    const path = fc.array(fc.array(char.filter((c) => c !== '/'), { minLength: 1, maxLength: 4 }).map((cs) => cs.join('')), { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
    const pattern = fc.array(patternChar, { minLength: 1, maxLength: 8 }).map((cs) => cs.join('')).filter((p) => {
      const glob = (p.endsWith('/') ? p.slice(0, -1) : p).replace(/^\//, '');
      return glob !== '' && !p.startsWith('!') && !p.startsWith('#') && p.trim() !== '';
    });
    fc.assert(
      fc.property(pattern, path, fc.boolean(), (p, target, isDirectory) => {
        expect(isIgnored(rules(p), target, isDirectory)).toBe(reference(p, target, isDirectory));
      }),
      { seed: 14, numRuns: 3000 },
    );
  });

  it('answers many stars against a long name at once (no backtracking)', () => {
    const r = rules(`${'*a'.repeat(30)}*b\n`);
    expect(isIgnored(r, 'a'.repeat(200), false)).toBe(false);
    expect(isIgnored(r, `${'a'.repeat(200)}b`, false)).toBe(true);
  });

  it('refuses negation', () => {
    const parsed = parseIgnoreRules('!keep.log\n');
    expect(parsed.ok || parsed.error.code).toBe('snapshot.invalid');
  });
});

describe('bundle format', () => {
  it('orders by dependency with ties by ascending ID', () => {
    const refs = new Map<string, string[]>([
      ['c', ['a']],
      ['b', []],
      ['a', []],
      ['d', ['c', 'b', 'outside']],
    ]);
    expect(dependencyOrder(refs)).toEqual(['a', 'b', 'c', 'd']);
    expect(dependencyOrder(new Map([['z', []], ['y', ['z']], ['x', []]]))).toEqual(['x', 'z', 'y']);
  });

  it('writes and reads the header', () => {
    const header = encodeBundleHeader(13);
    expect(Buffer.from(header).toString('hex')).toBe('a366666f726d61746a6169702d62756e646c65676f626a656374730d6776657273696f6e01');
    expect(decodeBundleHeader(Uint8Array.from([...header, 0x40]))).toEqual({ ok: true, value: { objects: 13, length: header.length } });
    const huge = Buffer.from('a366666f726d61746a6169702d62756e646c65676f626a656374731bffffffffffffffff6776657273696f6e01', 'hex');
    const refused = decodeBundleHeader(huge);
    expect(refused.ok ? undefined : refused.error).toEqual(expect.objectContaining({ code: 'bundle.format', message: 'bundle header: 18446744073709551615 objects is more than a bundle can hold' }));
    // Exactly the three members of spec 7.8 item 1: an extra one is not a header of this version.
    const extra = encodeCanonical(new Map<string, CborValue>([['format', 'aip-bundle'], ['objects', 1], ['version', 1], ['compress', 'none']]));
    if (!extra.ok) throw extra.error;
    const withExtra = decodeBundleHeader(extra.value);
    expect(withExtra.ok || withExtra.error.code).toBe('bundle.format');
    // A header past the 256-byte bound is too long; one the input cuts short is truncated.
    const long = encodeCanonical(new Map<string, CborValue>([['format', 'aip-bundle'], ['objects', 1], ['version', 1], ['padding', 'x'.repeat(300)]]));
    if (!long.ok) throw long.error;
    const tooLong = decodeBundleHeader(long.value);
    expect(tooLong.ok ? undefined : tooLong.error).toEqual(expect.objectContaining({ code: 'bundle.format', message: 'bundle header: longer than 256 bytes' }));
    const cut = decodeBundleHeader(header.subarray(0, header.length - 1));
    expect(cut.ok ? undefined : cut.error.message).toMatch(/^bundle header: cbor\.truncated: /);
  });

  it('reads an item header with the reader\'s codes: reserved 28..30, indefinite 31, shortest lengths only', () => {
    const codeOf = (hex: string): string | undefined => {
      const result = decodeItemHeader(Buffer.from(hex, 'hex'));
      return result.ok ? undefined : result.error.code;
    };
    expect(decodeItemHeader(Buffer.from('5818', 'hex'))).toEqual({ ok: true, value: { length: 24, headerLength: 2 } });
    expect(decodeItemHeader(Buffer.from('57', 'hex'))).toEqual({ ok: true, value: { length: 23, headerLength: 1 } });
    // An item exactly max_object_bytes long is allowed; one byte more is not.
    expect(decodeItemHeader(Buffer.from('5818', 'hex'), 24)).toEqual({ ok: true, value: { length: 24, headerLength: 2 } });
    expect(decodeItemHeader(Buffer.from('5818', 'hex'), 23)).toMatchObject({ ok: false, error: { code: 'cbor.too_large' } });
    for (const hex of ['5c', '5d', '5e']) expect(codeOf(`${hex}${'00'.repeat(16)}`), hex).toBe('cbor.reserved');
    expect(codeOf('5f')).toBe('cbor.indefinite');
    expect(codeOf('5817')).toBe('cbor.not_shortest');
    expect(codeOf('5900ff')).toBe('cbor.not_shortest');
    expect(codeOf('5a0000ffff')).toBe('cbor.not_shortest');
    expect(codeOf('5b00000000ffffffff')).toBe('cbor.not_shortest');
    expect(codeOf('59ff')).toBe('cbor.truncated');
    expect(codeOf('a0')).toBe('bundle.format');
  });
});
