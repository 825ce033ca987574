// The raw bytes of the process's command-line arguments. Node decodes argv as
// UTF-8 with U+FFFD in place of invalid bytes, so the strings cannot show
// that an argument was not text; the CLIs that refuse such an argument look
// here. Owns no wording: each CLI words its own usage error.

import { readFileSync } from 'node:fs';

/**
 * The 1-based position of the first of `args` (the user's arguments, as Node
 * decoded them) whose raw bytes are not valid UTF-8, or undefined. The raw
 * bytes come from `/proc/self/cmdline` (Linux), read only when an argument
 * holds U+FFFD. Without it, or when its last entries do not decode to exactly
 * these arguments (a rewritten process title), nothing can be said and
 * undefined is returned.
 */
export function firstNonUtf8Argument(args: readonly string[], cmdline = '/proc/self/cmdline'): number | undefined {
  if (!args.some((arg) => arg.includes('\ufffd'))) return undefined;
  let raw: Buffer;
  try {
    raw = readFileSync(cmdline);
  } catch {
    return undefined;
  }
  // NUL-terminated entries; the arguments are the last `args.length` of them.
  const parts: Buffer[] = [];
  for (let start = 0; start < raw.length; ) {
    const end = raw.indexOf(0, start);
    parts.push(raw.subarray(start, end === -1 ? raw.length : end));
    start = end === -1 ? raw.length : end + 1;
  }
  if (parts.length < args.length) return undefined;
  const own = parts.slice(parts.length - args.length);
  if (own.some((part, i) => part.toString('utf8') !== args[i])) return undefined;
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (const [i, part] of own.entries()) {
    try {
      strict.decode(part);
    } catch {
      return i + 1;
    }
  }
  return undefined;
}
