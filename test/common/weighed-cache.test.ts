// The caches of a long-lived server keep their recent entries within a count
// and a total weight, so that a few heavy entries cannot hold what a count
// alone allows.

import { describe, expect, it } from 'vitest';
import { WeighedCache } from '../../src/common/weighed-cache.js';

describe('WeighedCache', () => {
  it('lets go of the least recently used entries beyond its count', () => {
    const cache = new WeighedCache<string, number>(2, 100);
    cache.set('a', 1, 1);
    cache.set('b', 2, 1);
    expect(cache.get('a')).toBe(1); // b is now the least recently used
    cache.set('c', 3, 1);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([1, undefined, 3]);
    expect(cache.size).toBe(2);
  });

  it('lets go of the least recently used entries beyond its weight, however few', () => {
    const cache = new WeighedCache<string, string>(100, 10);
    cache.set('a', 'x', 4);
    cache.set('b', 'y', 4);
    cache.set('c', 'z', 4);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 'y', 'z']);
    expect(cache.weight).toBe(8);
  });

  it('keeps no entry heavier than its whole weight, and forgets what that key held', () => {
    const cache = new WeighedCache<string, string>(100, 10);
    cache.set('a', 'small', 2);
    cache.set('a', 'huge', 11);
    expect(cache.get('a')).toBeUndefined();
    expect([cache.size, cache.weight]).toEqual([0, 0]);
  });

  it('keeps an entry that weighs exactly its whole weight', () => {
    const cache = new WeighedCache<string, string>(100, 10);
    cache.set('a', 'full', 10);
    expect([cache.get('a'), cache.size, cache.weight]).toEqual(['full', 1, 10]);
  });

  it('replaces an entry under the same key and counts its new weight only', () => {
    const cache = new WeighedCache<string, string>(100, 10);
    cache.set('a', 'old', 6);
    cache.set('a', 'new', 3);
    cache.set('b', 'other', 7);
    expect([cache.get('a'), cache.get('b'), cache.weight]).toEqual(['new', 'other', 10]);
    cache.delete('a');
    expect([cache.get('a'), cache.size, cache.weight]).toEqual([undefined, 1, 7]);
  });
});
