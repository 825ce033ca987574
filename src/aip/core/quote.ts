/**
 * A text an error message quotes back (a field name, an argument, a config
 * member): JSON-quoted, and cut to its first 77 code units and `...` when it
 * is longer than 80, so a message never grows with its input.
 */
export function quoted(text: string): string {
  if (text.length <= 80) return JSON.stringify(text);
  // Never between the two halves of a surrogate pair: the message would show
  // an escaped half (`\ud83d`) of a character nobody typed.
  const high = text.charCodeAt(76);
  const end = high >= 0xd800 && high <= 0xdbff ? 76 : 77;
  return JSON.stringify(`${text.slice(0, end)}...`);
}

/**
 * A text shown inside one line of text output (a log's intent title or
 * evidence kind, a status path): control characters, the line and paragraph
 * separators and the bidirectional embedding, override and isolate controls
 * are written as JSON-style escapes (`\n`, `\u001b`, `\u202e`), so a title
 * cannot start a line of its own, steer the terminal or show its characters
 * in another order than they are (`evil\u202etxt.exe` read as `evilexe.txt`);
 * every other character, the backslash included, is shown as it is (D42).
 */
export function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (ch) => {
    const short: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return short[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}
