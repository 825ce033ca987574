// The reader's compact id lists (128-bit keys in typed arrays) must behave as
// a sorted list of the full ids and as a set: every hex digit of a UUID (and
// of a digest's leading 128 bits) tells keys apart, lists grow without losing
// keys, a duplicate is found wherever it sits, and bits of a BitSet are
// independent of one another at any index.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BitSet, digestWords, IdList, uuidWords } from '../../../src/aipcs/portable/id-list.js';

const HEX = '0123456789abcdef';

/** A canonical UUID from 32 hex digits. */
function uuid(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function randomHex(n: number, seed: number): string {
  return createHash('sha256').update(String(seed)).digest('hex').slice(0, n);
}

describe('IdList', () => {
  it('tells apart UUIDs that differ in any one hex digit', () => {
    const base = '0'.repeat(32);
    const ids = [uuid(base)];
    for (let at = 31; at >= 0; at--) ids.push(uuid(base.slice(0, at) + '1' + base.slice(at + 1)));
    ids.sort();
    const list = new IdList();
    for (const id of ids) list.push(id);
    for (const [index, id] of ids.entries()) expect(list.indexOf(id), id).toBe(index);
    expect(new Set(ids.map((id) => uuidWords(id).join(','))).size).toBe(ids.length);
    expect(list.hasDuplicate()).toBe(false);
    expect(list.indexOf(uuid('f'.repeat(32)))).toBe(-1);
  });

  it('keeps every key while growing, and finds each by bisection', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => uuid(randomHex(32, i))).sort();
    const list = new IdList();
    for (const [index, id] of ids.entries()) expect(list.push(id)).toBe(index);
    expect(list.length).toBe(ids.length);
    for (const [index, id] of ids.entries()) {
      expect(list.indexOf(id)).toBe(index);
      expect(list.keyAt(index)).toEqual(uuidWords(id));
    }
    for (let i = 0; i < 50; i++) expect(list.indexOf(uuid(randomHex(32, 10_000 + i)))).toBe(-1);
    expect(new IdList().indexOf(ids[0] as string)).toBe(-1);
    // Unused slots hold zeros: the all-zero id is not found in a list without it.
    expect(new IdList().indexOf(uuid('0'.repeat(32)))).toBe(-1);
  });

  it('finds a duplicate wherever it sits, in any order of appending', () => {
    const keys = Array.from({ length: 40 }, (_, i) => digestWords(randomHex(64, i)));
    const distinct = new IdList();
    for (const key of keys) distinct.pushKey(key);
    expect(distinct.hasDuplicate()).toBe(false);
    for (const [a, b] of [[0, 1], [1, 0], [0, 39], [17, 3], [38, 39]] as const) {
      const list = new IdList();
      keys.forEach((key, i) => list.pushKey(i === b ? (keys[a] as number[]) : key));
      expect(list.hasDuplicate(), `${a} ${b}`).toBe(true);
    }
    // Keys equal in three of their four words are still different keys.
    for (let word = 0; word < 4; word++) {
      const list = new IdList();
      list.pushKey([1, 2, 3, 4]);
      list.pushKey([1, 2, 3, 4].map((value, i) => (i === word ? value + 1 : value)));
      expect(list.hasDuplicate()).toBe(false);
    }
    const two = new IdList();
    two.pushKey([5, 6, 7, 8]);
    two.pushKey([5, 6, 7, 8]);
    expect(two.hasDuplicate()).toBe(true);
  });

  it('takes the leading 128 bits of a digest, every word of them', () => {
    const digest = HEX.repeat(4);
    const words = digestWords(digest);
    expect(words).toEqual([0x01234567, 0x89abcdef, 0x01234567, 0x89abcdef]);
    expect(digestWords('0'.repeat(24) + 'ffffffff' + '0'.repeat(32))).toEqual([0, 0, 0, 0xffffffff]);
  });
});

describe('BitSet', () => {
  it('sets each bit on its own and reports it once, at any index', () => {
    const bits = new BitSet();
    const indexes = [0, 1, 3, 4, 7, 8, 12, 511, 512, 513, 4095, 100_000];
    for (const index of indexes) {
      expect(bits.has(index)).toBe(false);
      expect(bits.testAndSet(index)).toBe(false);
      expect(bits.has(index)).toBe(true);
    }
    for (const index of indexes) expect(bits.testAndSet(index)).toBe(true);
    for (const index of [2, 5, 6, 9, 11, 13, 510, 514, 4094, 99_999, 100_001, 1_000_000]) expect(bits.has(index)).toBe(false);
  });
});
