// Keeps the configuration file at TOML 1.0 (operations spec §2.4). smol-toml
// parses TOML 1.1, so after a successful parse this scanner looks for the
// syntax 1.1 added: newlines or a trailing comma inside an inline table,
// the `\e` and `\xHH` escapes, and times without seconds. Pure.

const BARE_END = new Set([' ', '\t', '\r', '\n', ',', '=', '[', ']', '{', '}', '#', '"', "'"]);

/** True if the (already parsed) document relies on syntax new in TOML 1.1. */
export function usesToml11Syntax(text: string): boolean {
  const open: string[] = [];
  let lastSignificant = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (c === '\n') {
      if (open[open.length - 1] === '{') return true;
      i++;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      const scanned = scanString(text, i);
      if (scanned === null) return true;
      i = scanned;
      lastSignificant = c;
      continue;
    }
    if (c === '[' || c === '{') {
      open.push(c);
      lastSignificant = c;
      i++;
      continue;
    }
    if (c === ']' || c === '}') {
      if (c === '}' && lastSignificant === ',') return true;
      open.pop();
      lastSignificant = c;
      i++;
      continue;
    }
    if (c === ',' || c === '=') {
      lastSignificant = c;
      i++;
      continue;
    }
    const start = i;
    while (i < text.length && !BARE_END.has(text[i] ?? '')) i++;
    if (timeWithoutSeconds(text.slice(start, i))) return true;
    lastSignificant = 'x';
  }
  return false;
}

// In a bare value only date-times hold `:`; the first HH:MM is the time and
// must go on to seconds (a later `+07:00` is an offset, which has none).
function timeWithoutSeconds(token: string): boolean {
  const match = /[0-9]{2}:[0-9]{2}/.exec(token);
  return match !== null && token[match.index + 5] !== ':';
}

/**
 * Skips one string starting at `start` and returns the index after it, or
 * null if a basic string uses a TOML 1.1 escape.
 */
function scanString(text: string, start: number): number | null {
  const quote = text[start] ?? '';
  const basic = quote === '"';
  const multiline = text.startsWith(quote.repeat(3), start);
  let i = start + (multiline ? 3 : 1);
  while (i < text.length) {
    const c = text[i];
    if (basic && c === '\\') {
      const next = text[i + 1];
      if (next === 'e' || next === 'x') return null;
      // Any other escape (or a line-ending backslash) is two characters at most.
      i += next === '\\' || next === '"' ? 2 : 1;
      continue;
    }
    if (c === quote) {
      if (!multiline) return i + 1;
      if (text.startsWith(quote.repeat(3), i)) {
        // Up to two quotes may sit just before the closing delimiter.
        let end = i + 3;
        while (end < text.length && text[end] === quote && end < i + 5) end++;
        return end;
      }
    }
    i++;
  }
  return i;
}
