// Text predicates with the semantics of the reference's Python checks:
// str.isprintable(), str.isspace()/strip(), str.isascii() and len() in code
// points. Pure; owns no field knowledge.

// Python's whitespace: bidi classes WS, B, S and category Zs. Wider than
// JavaScript's \s (adds U+001C–U+001F and U+0085) and without U+FEFF.
const PY_WHITESPACE_CLASS = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_WHITESPACE = new RegExp(`[${PY_WHITESPACE_CLASS}]`);
const PY_WHITESPACE_RUNS = new RegExp(`[${PY_WHITESPACE_CLASS}]+`, 'g');
const SURROUNDING_PY_WHITESPACE = new RegExp(`^[${PY_WHITESPACE_CLASS}]|[${PY_WHITESPACE_CLASS}]$`);

// Not printable in Python: Cc, Cf, Cs, Co, Cn, Zl, Zp, and Zs other than the ASCII space.
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]|(?! )\p{Zs}/u;

const NON_ASCII = /[^\x00-\x7f]/;

const NOT_PRINTABLE_ALL = new RegExp(NOT_PRINTABLE.source, 'gu');
const REPR_ESCAPES: Readonly<Record<string, string>> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * The text with every character Python's str.isprintable() refuses written
 * as repr() writes it (`\x1b`, `\n`, `\u202e`, `\U000e0001`), so that echoing
 * it can neither drive a terminal nor forge a line.
 */
export function escapeUnprintable(text: string): string {
  return text.replace(NOT_PRINTABLE_ALL, (char) => {
    const known = REPR_ESCAPES[char];
    if (known !== undefined) return known;
    const code = char.codePointAt(0) ?? 0;
    if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
    if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, '0')}`;
    return `\\U${code.toString(16).padStart(8, '0')}`;
  });
}

/** Python's str.isprintable(): the empty string is printable. */
export function isPrintable(text: string): boolean {
  return !NOT_PRINTABLE.test(text);
}

/** True if the text starts or ends with Python whitespace (`text != text.strip()`). */
export function hasSurroundingWhitespace(text: string): boolean {
  return SURROUNDING_PY_WHITESPACE.test(text);
}

/** True if any character is Python whitespace. */
export function containsWhitespace(text: string): boolean {
  return PY_WHITESPACE.test(text);
}

export function isAscii(text: string): boolean {
  return !NON_ASCII.test(text);
}

/** Python's `" ".join(text.split())`: runs of whitespace become one space, ends trimmed. */
export function collapseWhitespace(text: string): string {
  return text.replace(PY_WHITESPACE_RUNS, ' ').replace(/^ | $/g, '');
}

