import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/common/json.js';
import {
  coreRecordJson,
  formatCreatedAt,
  formatFloat,
  memoryRecordJson,
  parseRecordText,
  renderCompact,
  renderPretty,
} from '../../src/aigpt/core/record-format.js';
import { compareFileNames, isRecordFileName } from '../../src/aigpt/core/record-paths.js';
import { MAX_RECORD_FILE_BYTES } from '../../src/aigpt/core/limits.js';
import { GOLDEN_MEMORY, seedOrderMemory } from './support.js';

const sha256 = (text: string): string => createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

describe('record bytes (golden, spec 3.5)', () => {
  it('writes the golden memory record byte for byte', () => {
    const text = memoryRecordJson({ did: 'did:plc:xxx', tid: '3mfyouuy62222', text: 'syuiはRustを好む', createdAt: '2026-03-01T12:00:00Z' });
    expect(text).toBe(GOLDEN_MEMORY);
    expect(Buffer.byteLength(text)).toBe(290);
    expect(sha256(text)).toBe('eb1304afa1cee7080c4352ff940344c8b441cd9747e22e2e2cec131d15dda657');
  });

  it('writes the golden core record byte for byte', () => {
    const text = coreRecordJson({ did: 'did:plc:xxx', handle: 'ai.syui.ai', text: '', createdAt: '2025-01-01T00:00:00Z' });
    expect(Buffer.byteLength(text)).toBe(283);
    expect(sha256(text)).toBe('b63f1c0c020d1de7afc1f733e247bc79a28d0b76ea27db74eb3dbc6ce632db7c');
    expect(text.endsWith('}')).toBe(true);
    expect(text).toContain('"createdAt": "2025-01-01T00:00:00Z",\n    "did": "did:plc:xxx",\n    "handle": "ai.syui.ai"\n');
  });

  it('escapes exactly like serde_json: short escapes, lowercase \\u00XX, raw / U+007F U+2028 and astral', () => {
    const text = '"\\\b\f\n\r\t\u0000\u001f/\u007f\u2028\u2029😀é';
    const json = memoryRecordJson({ did: 'self', tid: '3mfyouuy62222', text, createdAt: '2026-03-01T12:00:00Z' });
    expect(json).toContain('"text": "\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f/\u007f\u2028\u2029😀é"');
  });

  it('rejects text with a lone surrogate instead of writing an escape the reference cannot read', () => {
    expect(() => memoryRecordJson({ did: 'self', tid: '3mfyouuy62222', text: 'a\ud800b', createdAt: '2026-03-01T12:00:00Z' })).toThrow(/surrogate/);
    expect(() => memoryRecordJson({ did: 'self', tid: '3mfyouuy62222', text: '\udc00', createdAt: '2026-03-01T12:00:00Z' })).toThrow();
    // The last high surrogate alone too; paired, it is U+10FFFF and written raw.
    expect(() => memoryRecordJson({ did: 'self', tid: '3mfyouuy62222', text: 'a\udbff', createdAt: '2026-03-01T12:00:00Z' })).toThrow(/surrogate/);
    expect(memoryRecordJson({ did: 'self', tid: '3mfyouuy62222', text: '\udbff\udfff', createdAt: '2026-03-01T12:00:00Z' })).toContain('"text": "\u{10ffff}"');
    // Every string that goes into the file is checked, not only the memory text.
    expect(() => memoryRecordJson({ did: 'did:plc:\ud800', tid: '3mfyouuy62222', text: 't', createdAt: '2026-03-01T12:00:00Z' })).toThrow(/surrogate/);
    expect(() => coreRecordJson({ did: 'did:plc:xxx', handle: 'ai.syui.ai', text: 'a\ud800', createdAt: '2025-01-01T00:00:00Z' })).toThrow(/surrogate/);
    expect(() => coreRecordJson({ did: 'did:plc:xxx', handle: '\udc00', text: '', createdAt: '2025-01-01T00:00:00Z' })).toThrow(/surrogate/);
  });

  it('formats createdAt to the second, truncating', () => {
    expect(formatCreatedAt(new Date('2026-03-01T12:00:00.999Z'))).toBe('2026-03-01T12:00:00Z');
    expect(formatCreatedAt(new Date(0))).toBe('1970-01-01T00:00:00Z');
  });

  it('refuses a clock outside years 0000-9999, whose ISO form has a sign and six year digits', () => {
    expect(formatCreatedAt(new Date(Date.UTC(9999, 11, 31, 23, 59, 59, 999)))).toBe('9999-12-31T23:59:59Z');
    expect(() => formatCreatedAt(new Date(Date.UTC(10000, 0, 1)))).toThrow(RangeError);
    expect(() => formatCreatedAt(new Date(Date.UTC(-1, 0, 1)))).toThrow(RangeError);
  });
});

describe('reading records written by others', () => {
  it('reads the seed key order and the reference order alike', () => {
    const seed = parseRecordText(seedOrderMemory('did:plc:xxx', '3mfyouuy62222', 'syuiはRustを好む'));
    const golden = parseRecordText(GOLDEN_MEMORY);
    expect(seed.ok && seed.text).toBe('syuiはRustを好む');
    expect(golden.ok && golden.text).toBe('syuiはRustを好む');
    // Re-serialised, both become the reference's bytes.
    if (!seed.ok) throw new Error('unreachable');
    expect(renderPretty(seed.value)).toBe(GOLDEN_MEMORY);
  });

  it('reports shape problems but keeps the parsed value', () => {
    const noText = parseRecordText('{"uri":"x","value":{"content":{"text":5}}}');
    expect(noText.ok && noText.text).toBe(undefined);
    expect(noText.ok && noText.shapeProblem).toMatch(/value\.content\.text/);
    const array = parseRecordText('[1,2]');
    expect(array.ok && array.shapeProblem).toMatch(/not a JSON object/);
  });

  it('rejects what serde_json rejects: syntax errors, BOM, lone surrogate escapes, 128 nested containers', () => {
    expect(parseRecordText('{"value":').ok).toBe(false);
    const bom = parseRecordText('\ufeff{}');
    // Named as a BOM, not as the parser's unexpected character, so the owner knows what to remove.
    expect(!bom.ok && bom.reason).toMatch(/byte order mark/);
    expect(parseRecordText('{"value":{"content":{"text":"\\ud800"}}}').ok).toBe(false);
    // In a member name too, where the record's text is fine.
    expect(parseRecordText('{"value":{"content":{"text":"t"}},"\\udc00":1}').ok).toBe(false);
    expect(parseRecordText(`${'['.repeat(128)}${']'.repeat(128)}`).ok).toBe(false);
    expect(parseRecordText(`${'['.repeat(127)}${']'.repeat(127)}`).ok).toBe(true);
    const wrapped = (depth: number): string => `{"value":{"content":{"text":"t"},"d":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;
    expect(parseRecordText(wrapped(128)).ok).toBe(false);
    expect(parseRecordText(wrapped(127)).ok).toBe(true);
  });

  it('rejects an integer too large for an f64, as serde_json does, instead of rendering it as null', () => {
    const huge = `1${'0'.repeat(400)}`;
    for (const text of [`{"x":${huge}}`, `{"x":[-${huge}]}`]) {
      const parsed = parseRecordText(text);
      expect(parsed.ok).toBe(false);
      expect(!parsed.ok && parsed.reason).toMatch(/out of range/);
    }
    // Beyond u64 but within f64 still parses (as a float, like serde_json).
    const wide = parseRecordText(`{"x":1${'0'.repeat(300)}}`);
    expect(wide.ok && renderCompact(wide.value)).toBe('{"x":1e300}');
  });

  it('reads a record with an array of 500 000 elements (a file within the 1 MiB bound)', () => {
    const text = `{"value":{"content":{"text":"x"}},"n":[${Array<string>(500_000).fill('1').join(',')}]}`;
    expect(text.length).toBeLessThan(1024 * 1024);
    const parsed = parseRecordText(text);
    expect(parsed.ok && parsed.text).toBe('x');
  });
});

describe('serde_json renderings', () => {
  it('sorts keys by code point (UTF-8 byte order), not UTF-16 order', () => {
    const value = parseJson('{"\uffff":1,"😀":2,"b":3,"a":{"z":[],"y":{}}}');
    expect(renderCompact(value)).toBe('{"a":{"y":{},"z":[]},"b":3,"\uffff":1,"😀":2}');
  });

  it('refuses a value holding a lone surrogate rather than writing an escape serde_json refuses', () => {
    expect(() => renderCompact({ text: 'a\ud800' })).toThrow(/surrogate/);
    expect(() => renderPretty({ '\udc00': 1 })).toThrow(/surrogate/);
  });

  it('renders pretty with two spaces and empty containers inline', () => {
    expect(renderPretty(parseJson('{"b":[1,{}],"a":[]}'))).toBe('{\n  "a": [],\n  "b": [\n    1,\n    {}\n  ]\n}');
  });

  it('reads the integer token -0 as the float -0.0, as serde_json does, also next to strings holding -0', () => {
    const parsed = parseRecordText('{"value":{"content":{"text":"-0 \\"-0\\" -0"}},"n":[-0,0,-0.0,-0.5,-0e1]}');
    expect(parsed.ok && renderCompact(parsed.value)).toBe('{"n":[-0.0,0,-0.0,-0.5,-0.0],"value":{"content":{"text":"-0 \\"-0\\" -0"}}}');
    expect(parseRecordText('{"n":-01}').ok).toBe(false);
  });

  it('reads an exponent of -0 as the valid JSON it is (1e-0 is 1.0 for serde_json), not as a -0 token to rewrite', () => {
    const parsed = parseRecordText('{"value":{"content":{"text":"t"}},"n":[1e-0,2.5E-0,-1e-0,1e-00,-0]}');
    expect(parsed.ok && renderCompact(parsed.value)).toBe('{"n":[1.0,2.5,-1.0,1.0,-0.0],"value":{"content":{"text":"t"}}}');
  });

  it('reads a file of exactly the size bound that holds -0 tokens, though rewriting them as -0.0 makes the text longer', () => {
    const head = `{"value":{"content":{"text":"x"}},"n":[${Array<string>(1000).fill('-0').join(',')}],"pad":"`;
    const text = `${head}${'a'.repeat(MAX_RECORD_FILE_BYTES - head.length - 2)}"}`;
    expect(Buffer.byteLength(text)).toBe(MAX_RECORD_FILE_BYTES);
    const parsed = parseRecordText(text);
    expect(parsed.ok && parsed.text).toBe('x');
  });

  it('formats floats like ryu', () => {
    const cases: [number, string][] = [
      [1, '1.0'],
      [0.1, '0.1'],
      [-2.5, '-2.5'],
      [1e16, '1e16'],
      [1234e13, '1.234e16'],
      [123456789012345680, '1.2345678901234568e17'],
      [1e15, '1000000000000000.0'],
      // 16 digits before the point and one after: still positional (ryu: 0 < kk <= 16).
      [1000000000000000.1, '1000000000000000.1'],
      [0.001234, '0.001234'],
      [0.0001, '0.0001'],
      [0.00001, '0.00001'],
      [0.000001, '1e-6'],
      [1.5e-7, '1.5e-7'],
      [0, '0.0'],
      [-0, '-0.0'],
    ];
    for (const [value, text] of cases) expect(formatFloat(value), String(value)).toBe(text);
    expect(renderCompact(parseJson('[5.0,5,18446744073709551615,18446744073709551616,-9223372036854775808,-9223372036854775809]'))).toBe(
      '[5.0,5,18446744073709551615,1.8446744073709552e19,-9223372036854775808,-9.223372036854776e18]',
    );
  });
});

describe('which files are records (spec 3.2)', () => {
  it('follows Rust Path::extension() == "json"', () => {
    for (const yes of ['a.json', 'x.tmp.json', '.x.json', '..json', 'notes.json', '3mfyouuy62222.json']) expect(isRecordFileName(yes), yes).toBe(true);
    for (const no of ['.json', 'a.JSON', 'a.json.tmp', 'json', 'a.', '.lock', '.compress-journal', '.3mfyouuy62222.json.tmp-compress', '.a.json.tmp-1-ab']) {
      expect(isRecordFileName(no), no).toBe(false);
    }
  });

  it('orders names bytewise', () => {
    const names = ['b.json', 'a.json.json', 'a.json', 'é.json', 'Z.json', '😀.json', '\uffff.json'];
    // A name that is a prefix of another sorts first.
    expect(names.sort(compareFileNames)).toEqual(['Z.json', 'a.json', 'a.json.json', 'b.json', 'é.json', '\uffff.json', '😀.json']);
    // Both ways round, so the order does not hang on which pairs the sort happens to compare.
    for (const [low, high] of [['\uffff.json', '😀.json'], ['\ue000', '\ud800\udc00'], ['a.json', 'a.json.json']]) {
      expect(compareFileNames(low!, high!), `${low} < ${high}`).toBeLessThan(0);
      expect(compareFileNames(high!, low!), `${high} > ${low}`).toBeGreaterThan(0);
    }
  });
});
