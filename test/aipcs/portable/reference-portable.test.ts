// The reference implementation's pure codec assertions
// (tests/application/test_portable_codec.py of randallcmark/aipcs-mcp),
// replayed against our canonical JSON and frame encoder: facts only (the
// vectors' values and digests), our own code.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BundleInvalidError } from '../../../src/aipcs/portable/index.js';
import { encodeFrame } from '../../../src/aipcs/portable/bundle-writer.js';
import { encodeCanonical, parseCanonicalLine } from '../../../src/aipcs/portable/canonical-json.js';
import type { JsonObject } from '../../../src/common/json.js';

const sha = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

function refHeader(): JsonObject {
  return {
    export_format_version: 1n,
    canonicalization: 'aipcs-json-c14n-1',
    limit_profile: 'aipcs-bundle-limits-1',
    producer_package: 'aipcs',
    producer_package_version: '0.0.0.dev0',
    producer_mcp_contract: '1.2.0',
    created_at: '2026-07-23T20:00:00.000000Z',
    source_backend: 'sqlite',
  };
}

describe('reference codec vectors', () => {
  it('orders keys by UTF-16 code units and escapes strings as RFC 8785', () => {
    expect(Buffer.from(encodeCanonical({ '\ue000': 1n, '\u{1f600}': 2n }), 'utf8').toString('hex')).toBe('7b22f09f9880223a322c22ee8080223a317d');
    expect(encodeCanonical({ value: '\u0000\b\t\n\f\r"\\/😀\u2028' })).toBe('{"value":"\\u0000\\b\\t\\n\\f\\r\\"\\\\/😀\u2028"}');
  });

  it.each<[number, string]>([
    [0, '0'],
    [-0, '0'],
    [5e-324, '5e-324'],
    [1e-6, '0.000001'],
    [1e-7, '1e-7'],
    [1e23, '1e+23'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [333333333.33333329, '333333333.3333333'],
  ])('spells binary64 %s as %s', (value, text) => {
    expect(encodeCanonical(value)).toBe(text);
    // What a reader accepts back (inside a line object).
    expect(() => parseCanonicalLine(`{"a":${text}}`)).not.toThrow();
  });

  it('keeps signed 64-bit integers exact and refuses one past either end', () => {
    expect(encodeCanonical(-(2n ** 63n))).toBe('-9223372036854775808');
    expect(encodeCanonical(2n ** 63n - 1n)).toBe('9223372036854775807');
    for (const text of ['-9223372036854775809', '9223372036854775808']) expect(() => parseCanonicalLine(`{"a":${text}}`)).toThrow(BundleInvalidError);
  });

  it('a header line has the reference bytes: 391 bytes with its LF and the same digests', () => {
    const encoded = encodeFrame('header', 0, refHeader());
    const line = `${encoded.text}\n`;
    expect(encoded.frame['sha256']).toBe('b656d55a3645d02bd95b5e77f5de804634e754cdcc4e7c25e463de473445d23a');
    expect(Buffer.byteLength(line, 'utf8')).toBe(391);
    expect(sha(line)).toBe('6eb5b1231f93958d003f7897a669f78bace71e27b2545e8379d5f3b6617ca094');
  });

  it('counts the frame and payload objects in the 64 levels of nesting', () => {
    let payload: JsonObject = {};
    for (let i = 0; i < 62; i++) payload = { a: payload };
    expect(() => encodeFrame('record', 2, payload)).not.toThrow();
    const text = encodeFrame('record', 2, payload).text;
    expect(() => parseCanonicalLine(text)).not.toThrow();
    const deeper = { a: payload };
    let refused = false;
    try {
      const deepText = encodeFrame('record', 2, deeper).text;
      parseCanonicalLine(deepText);
    } catch (error) {
      refused = error instanceof BundleInvalidError;
    }
    expect(refused).toBe(true);
  });
});
