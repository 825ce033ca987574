/**
 * A text an error message quotes back (a field name, an argument, a config
 * member): JSON-quoted, and cut to its first 77 code units and `...` when it
 * is longer than 80, so a message never grows with its input.
 */
export function quoted(text: string): string {
  return JSON.stringify(cut(text, 80));
}

/**
 * A state's file path as a message names it. Paths have no length bound in
 * an object (only the object's size bounds them), so one of a megabyte,
 * which no file system can hold, would make a megabyte of error line: past
 * 1024 code units it is cut as `quoted` cuts.
 */
export function shownPath(path: string): string {
  return cut(path, 1024);
}

/** A file path JSON-quoted as a message or a location names it (shownPath: cut past 1024 code units). */
export function quotedPath(path: string): string {
  return JSON.stringify(shownPath(path));
}

/** `text` when it has at most `max` code units, else its first `max - 3` and `...`. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never between the two halves of a surrogate pair: the message would show
  // an escaped half (`\ud83d`) of a character nobody typed.
  const high = text.charCodeAt(max - 4);
  const end = high >= 0xd800 && high <= 0xdbff ? max - 4 : max - 3;
  return `${text.slice(0, end)}...`;
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
