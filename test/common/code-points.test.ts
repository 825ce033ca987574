import { describe, expect, it } from 'vitest';
import { codePointLength, codePointPrefix } from '../../src/common/code-points.js';

describe('code points', () => {
  it('counts a surrogate pair as one and a lone surrogate as one, as Python len() does', () => {
    expect(codePointLength('')).toBe(0);
    expect(codePointLength('abc')).toBe(3);
    expect(codePointLength('é😀x')).toBe(3);
    expect(codePointLength('\ud83d')).toBe(1);
    expect(codePointLength('a\ude00\ud83d')).toBe(3);
    expect(codePointLength('\ud83d\ud83d\ude00')).toBe(2);
    expect(codePointLength('\ud83d\ue000')).toBe(2);
  });

  it('agrees with the string iterator on any mix of units', () => {
    // Units on both sides of the low surrogates too (U+D7FF, U+E000, U+FFFF), so a pair is told by its exact range.
    const units = ['a', 'é', '\ud83d', '\ude00', '\ud83d\ude00', '\u0000', '\ud7ff', '\ue000', '\uffff', '\udbff', '\udc00'];
    let state = 12345;
    const next = (bound: number): number => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state % bound;
    };
    for (let round = 0; round < 500; round++) {
      let text = '';
      for (let i = 0, n = next(13); i < n; i++) text += units[next(units.length)];
      expect(codePointLength(text)).toBe([...text].length);
      for (let max = 0; max <= 14; max++) expect(codePointPrefix(text, max)).toBe([...text].slice(0, max).join(''));
    }
  });

  it('never splits a surrogate pair when taking a prefix', () => {
    expect(codePointPrefix('😀😀😀', 2)).toBe('😀😀');
    expect(codePointPrefix('ab', 5)).toBe('ab');
    expect(codePointPrefix('ab', 0)).toBe('');
  });
});
