// The raw bytes of the process's command-line arguments and environment.
// Node decodes both as UTF-8 with U+FFFD in place of invalid bytes, so the
// strings cannot show that a value was not text; the CLIs that refuse or
// re-read such a value look here (Linux /proc). Owns no wording: each CLI
// words its own errors.

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
  const own = rawArgumentBytes(args, cmdline);
  if (own === undefined) return undefined;
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

/** The NUL-terminated entries of a /proc file (cmdline, environ), or undefined when it cannot be read. */
function procEntries(file: string): Buffer[] | undefined {
  let raw: Buffer;
  try {
    raw = readFileSync(file);
  } catch {
    return undefined;
  }
  const parts: Buffer[] = [];
  for (let start = 0; start < raw.length; ) {
    const end = raw.indexOf(0, start);
    parts.push(raw.subarray(start, end === -1 ? raw.length : end));
    start = end === -1 ? raw.length : end + 1;
  }
  return parts;
}

/**
 * The raw bytes of `args`: the last `args.length` entries of `cmdline`, when
 * they decode to exactly these arguments (else a rewritten process title, or
 * no such file: undefined).
 */
function rawArgumentBytes(args: readonly string[], cmdline: string): Buffer[] | undefined {
  const parts = procEntries(cmdline);
  if (parts === undefined || parts.length < args.length) return undefined;
  const own = parts.slice(parts.length - args.length);
  return own.some((part, i) => part.toString('utf8') !== args[i]) ? undefined : own;
}

/**
 * The process's initial environment as `[name, raw value]` pairs, from
 * `/proc/self/environ` (Linux); undefined when it cannot be read.
 */
export function rawEnvironmentEntries(environ = '/proc/self/environ'): [string, Buffer][] | undefined {
  const parts = procEntries(environ);
  if (parts === undefined) return undefined;
  const entries: [string, Buffer][] = [];
  for (const part of parts) {
    const equals = part.indexOf(0x3d);
    if (equals > 0) entries.push([part.subarray(0, equals).toString('utf8'), part.subarray(equals + 1)]);
  }
  return entries;
}

/**
 * Python's `surrogateescape` decoding, which is how the reference's Python
 * reads its command line and environment: well-formed UTF-8 becomes text and
 * every byte of an ill-formed sequence becomes the lone surrogate
 * U+DC80..U+DCFF carrying it. Text checks then see a character that is not
 * printable instead of a U+FFFD that is.
 */
export function decodeSurrogateEscape(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const length = wellFormedSequenceLength(bytes, i);
    if (length === 0) {
      out += String.fromCharCode(0xdc00 + (bytes[i] ?? 0));
      i += 1;
    } else {
      out += Buffer.from(bytes.subarray(i, i + length)).toString('utf8');
      i += length;
    }
  }
  return out;
}

/**
 * The inverse of `decodeSurrogateEscape` for file calls, as Python's
 * `os.fsencode`: a path holding the lone surrogates U+DC80..U+DCFF goes to
 * the file system as the bytes it was read from (Node would write each as
 * U+FFFD, naming another file); any other path stays as it is.
 */
export function fileSystemPath(path: string): string | Buffer {
  if (!/[\udc80-\udcff]/u.test(path)) return path;
  const parts: Buffer[] = [];
  let text = '';
  for (const char of path) {
    const code = char.charCodeAt(0);
    if (char.length === 1 && code >= 0xdc80 && code <= 0xdcff) {
      parts.push(Buffer.from(text, 'utf8'), Buffer.of(code - 0xdc00));
      text = '';
    } else text += char;
  }
  parts.push(Buffer.from(text, 'utf8'));
  return Buffer.concat(parts);
}

/** The length of the well-formed UTF-8 sequence starting at `at` (Unicode Table 3-7), or 0. */
function wellFormedSequenceLength(bytes: Uint8Array, at: number): number {
  const b0 = bytes[at] ?? 0;
  const within = (offset: number, low: number, high: number): boolean => {
    const b = bytes[at + offset];
    return b !== undefined && b >= low && b <= high;
  };
  if (b0 <= 0x7f) return 1;
  if (b0 >= 0xc2 && b0 <= 0xdf) return within(1, 0x80, 0xbf) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const [low, high] = b0 === 0xe0 ? [0xa0, 0xbf] : b0 === 0xed ? [0x80, 0x9f] : [0x80, 0xbf];
    return within(1, low, high) && within(2, 0x80, 0xbf) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const [low, high] = b0 === 0xf0 ? [0x90, 0xbf] : b0 === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
    return within(1, low, high) && within(2, 0x80, 0xbf) && within(3, 0x80, 0xbf) ? 4 : 0;
  }
  return 0;
}

/**
 * `args` (the user's arguments, as Node decoded them) with each argument
 * whose raw bytes are not UTF-8 decoded the `surrogateescape` way instead.
 * Unchanged when no argument holds U+FFFD or the raw bytes cannot be read or
 * do not match (see firstNonUtf8Argument).
 */
export function surrogateEscapedArguments(args: readonly string[], cmdline = '/proc/self/cmdline'): string[] {
  if (!args.some((arg) => arg.includes('\ufffd'))) return [...args];
  const own = rawArgumentBytes(args, cmdline);
  if (own === undefined) return [...args];
  return own.map((part, i) => (args[i]?.includes('\ufffd') ? decodeSurrogateEscape(part) : (args[i] ?? '')));
}

/**
 * `env` with each value holding U+FFFD replaced by the `surrogateescape`
 * decoding of its raw bytes from the process's initial environment, when the
 * entry of the same name there decodes to exactly that value (a value the
 * process set itself is left alone).
 */
export function surrogateEscapedEnvironment(env: NodeJS.ProcessEnv, environ = '/proc/self/environ'): NodeJS.ProcessEnv {
  const suspect = Object.entries(env).filter(([, value]) => value?.includes('\ufffd'));
  if (suspect.length === 0) return env;
  const entries = rawEnvironmentEntries(environ);
  if (entries === undefined) return env;
  const out: NodeJS.ProcessEnv = { ...env };
  for (const [name, raw] of entries) {
    const value = env[name];
    if (value !== undefined && value.includes('\ufffd') && raw.toString('utf8') === value) out[name] = decodeSurrogateEscape(raw);
  }
  return out;
}
