/**
 * A text an error message quotes back (a field name, an argument, a config
 * member): JSON-quoted, and cut to its first 77 code units and `...` when it
 * is longer than 80, so a message never grows with its input.
 */
export function quoted(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}
