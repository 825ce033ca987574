/**
 * A text an error message quotes back (a field name, an argument, a config
 * member): JSON-quoted, and cut to its first 77 code units and `...` when it
 * is longer than 80, so a message never grows with its input.
 */
export function quoted(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}

/**
 * A text shown inside one line of text output (a log's intent title or
 * evidence kind, a status path): control characters and the line and
 * paragraph separators are written as JSON-style escapes (`\n`, `\u001b`),
 * so a title cannot start a line of its own or steer the terminal; every
 * other character, the backslash included, is shown as it is.
 */
export function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (ch) => {
    const short: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return short[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}
