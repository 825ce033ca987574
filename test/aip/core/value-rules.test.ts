// Value rules (spec 3): nonempty text with the seed's exact White_Space set,
// times, paths, ancestor conflicts and absolute executable forms.
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { findPathConflict, formatTime, isAbsoluteExecutable, isId, isNonemptyText, isPath, isTime, pathProblem, sortedIds } from '../../../src/aip/core/value-rules.js';

const WHITE_SPACE = [
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
  0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
];

describe('sortedIds', () => {
  it('sorts and drops repeats (an ID given twice, as a prefix and in full, is one entry)', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    expect(sortedIds([b, a, b, a])).toEqual([a, b]);
  });
});

describe('nonempty text', () => {
  it('treats exactly the 25 White_Space code points as whitespace', () => {
    expect(WHITE_SPACE).toHaveLength(25);
    for (const cp of WHITE_SPACE) expect(isNonemptyText(String.fromCodePoint(cp)), cp.toString(16)).toBe(false);
    expect(isNonemptyText(WHITE_SPACE.map((cp) => String.fromCodePoint(cp)).join(''))).toBe(false);
    expect(isNonemptyText('')).toBe(false);
  });

  it('counts U+200B, U+FEFF, U+180E and NUL as content', () => {
    for (const text of ['\u200b', '\ufeff', '\u180e', '\0', ' x ', '\u{1f600}']) expect(isNonemptyText(text)).toBe(true);
  });

  it('differs from JavaScript trim() on U+0085 and U+FEFF', () => {
    expect('\u0085'.trim()).not.toBe('');
    expect(isNonemptyText('\u0085')).toBe(false);
    expect('\ufeff'.trim()).toBe('');
    expect(isNonemptyText('\ufeff')).toBe(true);
  });
});

describe('times', () => {
  it('accepts the nine-digit UTC form on real dates', () => {
    for (const t of ['2026-01-01T00:00:00.000000000Z', '2000-02-29T23:59:59.999999999Z', '0000-01-01T00:00:00.000000000Z', '9999-12-31T23:59:59.000000000Z']) {
      expect(isTime(t), t).toBe(true);
    }
  });

  it('rejects other forms and impossible dates', () => {
    for (const t of [
      '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.0000000000Z', '2026-01-01t00:00:00.000000000Z', '2026-01-01T00:00:00.000000000z',
      '2026-01-01T00:00:00.000000000+00:00', '1900-02-29T00:00:00.000000000Z', '2026-02-29T00:00:00.000000000Z', '2026-04-31T00:00:00.000000000Z',
      '2026-13-01T00:00:00.000000000Z', '2026-00-01T00:00:00.000000000Z', '2026-01-00T00:00:00.000000000Z', '2026-01-01T24:00:00.000000000Z',
      '2026-01-01T00:60:00.000000000Z', '2026-12-31T23:59:60.000000000Z', ' 2026-01-01T00:00:00.000000000Z', '２026-01-01T00:00:00.000000000Z',
    ]) {
      expect(isTime(t), t).toBe(false);
    }
  });

  it('formats a millisecond clock with zero-filled digits', () => {
    expect(formatTime(Date.UTC(2026, 0, 1, 0, 0, 0, 123))).toBe('2026-01-01T00:00:00.123000000Z');
    expect(isTime(formatTime(Date.now()))).toBe(true);
  });
});

describe('paths', () => {
  it('accepts relative slash-separated paths, case-sensitively', () => {
    for (const p of ['a', 'a/b', 'a/.aip/x', '.AIP/x', '.aipx', '.aipignore', 'e\u0301', ' ', '...', 'a/..b']) expect(isPath(p), p).toBe(true);
  });

  it('names what is wrong', () => {
    expect(pathProblem('')).toBe('empty');
    expect(pathProblem('/a')).toBe('empty_component');
    expect(pathProblem('a/')).toBe('empty_component');
    expect(pathProblem('a//b')).toBe('empty_component');
    expect(pathProblem('./a')).toBe('dot_component');
    expect(pathProblem('a/../b')).toBe('dot_component');
    expect(pathProblem('a\\b')).toBe('backslash');
    expect(pathProblem('a\0b')).toBe('nul');
    expect(pathProblem('.aip')).toBe('top_level_aip');
    expect(pathProblem('.aip/config.json')).toBe('top_level_aip');
  });

  it('finds a file that is an ancestor of another', () => {
    expect(findPathConflict(['a', 'a/b'])).toEqual(['a', 'a/b']);
    expect(findPathConflict(['a/b/c', 'a/b'])).toEqual(['a/b', 'a/b/c']);
    expect(findPathConflict(['a', 'ab/c', 'a.b'])).toBeUndefined();
  });

  it('finds an ancestor across paths that sort between it and its descendant', () => {
    expect(findPathConflict(['a/b', 'a-b', 'a'])).toEqual(['a', 'a/b']);
    expect(findPathConflict(['a/b/c', 'a/b-c', 'a/b.d/e', 'a/b'])).toEqual(['a/b', 'a/b/c']);
    expect(findPathConflict(['a/b', 'a/bc', 'a/b-c/d', 'ab'])).toBeUndefined();
    expect(findPathConflict(['\u{10000}/x', '\ue000', '\u{10000}'])).toEqual(['\u{10000}', '\u{10000}/x']);
  });

  it('agrees with testing every ancestor of every path', () => {
    const byPrefixes = (paths: readonly string[]): boolean => {
      const set = new Set(paths);
      return paths.some((p) => p.split('/').some((_, i, parts) => i > 0 && set.has(parts.slice(0, i).join('/'))));
    };
    const component = fc.constantFrom('a', 'b', 'a-b', 'a.b', 'ab', '\u{10000}', '\ue000');
    const path = fc.array(component, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
    fc.assert(
      fc.property(fc.uniqueArray(path, { maxLength: 8 }), (paths) => {
        const conflict = findPathConflict(paths);
        expect(conflict !== undefined).toBe(byPrefixes(paths));
        if (conflict) {
          expect(paths).toContain(conflict[0]);
          expect(paths).toContain(conflict[1]);
          expect(conflict[1].startsWith(`${conflict[0]}/`)).toBe(true);
        }
      }),
      { seed: 15, numRuns: 2000 },
    );
  });

  it('checks ancestors in one sorted pass, not by looking up every ancestor prefix', () => {
    // Looking up each ancestor prefix of each path hashes the square of a
    // path's length per path: 2 000 paths of 8 000 components (16 000
    // characters, inside a 64 MiB state) took minutes, and a 1.6 MB state
    // 8 s to reject. Counted, not timed: at most one set lookup per path.
    const prefix = 'q/'.repeat(500);
    const paths = Array.from({ length: 200 }, (_, i) => `${prefix}f${i}`);
    const has = vi.spyOn(Set.prototype, 'has');
    try {
      expect(findPathConflict(paths)).toBeUndefined();
      expect(findPathConflict([...paths, `${prefix}f1/x`])).toEqual([`${prefix}f1`, `${prefix}f1/x`]);
      expect(has.mock.calls.length).toBeLessThanOrEqual(2 * paths.length + 1);
    } finally {
      has.mockRestore();
    }
  });
});

describe('IDs and executables', () => {
  it('accepts only 64 lowercase hex digits', () => {
    expect(isId('a'.repeat(64))).toBe(true);
    expect(isId('A'.repeat(64))).toBe(false);
    expect(isId('a'.repeat(63))).toBe(false);
    expect(isId(`${'a'.repeat(63)}g`)).toBe(false);
  });

  it('accepts the three absolute forms on any host', () => {
    for (const p of ['/bin/sh', 'C:\\bin\\tool.exe', 'c:/x', '\\\\server\\share']) expect(isAbsoluteExecutable(p), p).toBe(true);
    for (const p of ['', '/', 'C:\\', 'C:/', '\\\\', 'cat', './cat', '1:/x', 'C:x', '\\tool.exe']) expect(isAbsoluteExecutable(p), p).toBe(false);
  });
});
