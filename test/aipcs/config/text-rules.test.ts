import { describe, expect, it } from 'vitest';
import { collapseWhitespace, containsWhitespace, escapeUnprintable, hasSurroundingWhitespace, isAscii } from '../../../src/aipcs/config/text-rules.js';

// Python's whitespace is wider than JavaScript's \s; these are the characters
// where the two differ, plus the line and paragraph separators both share.
const PY_ONLY_WHITESPACE = ['\x1c', '\x1d', '\x1e', '\x1f', '\x85'];
const SEPARATORS = ['\u2028', '\u2029'];

describe('Python text predicates', () => {
  it.each([...PY_ONLY_WHITESPACE, ...SEPARATORS, '\t', '\u00a0', '\u3000'])('treats %j as whitespace', (char) => {
    expect(containsWhitespace(`a${char}b`)).toBe(true);
    expect(hasSurroundingWhitespace(`${char}a`)).toBe(true);
    expect(hasSurroundingWhitespace(`a${char}`)).toBe(true);
    expect(collapseWhitespace(`${char}a${char}${char}b${char}`)).toBe('a b');
  });

  it('does not treat U+FEFF or U+200B as whitespace, as Python does not', () => {
    for (const char of ['\ufeff', '\u200b']) {
      expect(containsWhitespace(`a${char}b`)).toBe(false);
      expect(collapseWhitespace(`${char}a`)).toBe(`${char}a`);
    }
  });

  it('counts U+007F as ASCII and U+0080 as not', () => {
    expect(isAscii('\x00a\x7f')).toBe(true);
    expect(isAscii('a\x80')).toBe(false);
  });
});

describe('escaping unprintable text as repr() does', () => {
  it.each([
    ['\t\n\r', '\\t\\n\\r'],
    ['a\x1bb\x1b', 'a\\x1bb\\x1b'],
    ['\x85\xad', '\\x85\\xad'],
    ['\u202e\uffff', '\\u202e\\uffff'],
    ['\u{e0001}', '\\U000e0001'],
    ['plain é 中文 😀', 'plain é 中文 😀'],
  ])('writes %j as %j', (text, escaped) => {
    expect(escapeUnprintable(text)).toBe(escaped);
  });
});
