// The running text digest behind import re-observation must give the
// SHA-256 of the texts' UTF-8 bytes joined, whatever their lengths and
// however they fall across its buffer.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Utf8Sha256 } from '../../../src/aipcs/portable/text-digest.js';

const joined = (texts: readonly string[]) => createHash('sha256').update(texts.join(''), 'utf8').digest('hex');

function digestOf(texts: readonly string[]): string {
  const digest = new Utf8Sha256();
  for (const text of texts) digest.update(text);
  return digest.digest();
}

describe('running UTF-8 text digest', () => {
  it('is the SHA-256 of the joined texts', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 40 }), { maxLength: 30 }), (texts) => {
        expect(digestOf(texts)).toBe(joined(texts));
      }),
      { numRuns: 300 },
    );
  });

  it('is the same when texts cross or exceed its buffer', () => {
    const line = 'ascii line\n';
    const wide = 'é – 漢字 \u{1F600}\n';
    const texts: string[] = [];
    for (let i = 0; i < 120_000; i++) texts.push(i % 3 === 0 ? wide : line);
    texts.push('x'.repeat(400_000), 'é'.repeat(700_000), 'tail');
    expect(digestOf(texts)).toBe(joined(texts));
    expect(digestOf([])).toBe(joined([]));
    // A single byte left in the buffer is hashed too, after a long text as well.
    for (const texts of [['x'], ['', 'x', ''], ['b'.repeat(1_048_577), 'x']]) expect(digestOf(texts)).toBe(joined(texts));
  });

  it('is the same when three-byte text lands at the end of its buffer', () => {
    // Every unit of '漢' takes three UTF-8 bytes: the room reserved for a
    // text must allow for that, or the tail of a text near the buffer's end
    // is silently cut off.
    for (const fill of [1_048_000, 1_048_576 - 1_000, 1_048_576 - 3]) {
      const texts = ['a'.repeat(fill), '漢字'.repeat(400), 'tail'];
      expect(digestOf(texts)).toBe(joined(texts));
    }
    // A text longer than the buffer in bytes, whatever its room estimate, goes straight to the hash.
    for (const long of ['é'.repeat(600_000), '漢'.repeat(349_600), 'b'.repeat(1_048_577)]) {
      const texts = ['head', long, 'tail'];
      expect(digestOf(texts)).toBe(joined(texts));
    }
  });
});
