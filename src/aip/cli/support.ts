// CLI plumbing for `aip` (spec 9.1, 9.2): the I/O seam, exit codes per error
// code, the error line and JSON error document, and parsing of durations,
// sizes, times and bounded inputs. No command logic lives here.
import { open } from 'node:fs/promises';
import { constants } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { AipError, PROTOCOL_CODES, isAipError, type AipErrorCode } from '../core/errors.js';
import { isTime } from '../core/value-rules.js';
import { errorCode, systemErrorText } from '../../common/errors.js';
import { ownReadFailureText } from '../../common/regular-file.js';
import { quoted } from '../core/quote.js';

export interface CliIo {
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly stdin: Readable;
  /** The current folder; throws an `io` AipError when it cannot be named (see current-folder.ts). */
  readonly cwd: () => string;
  /** Wall clock in milliseconds (injected so tests can fix it). */
  readonly now: () => number;
  /** Subscribes to SIGINT, SIGTERM and SIGHUP for `aip run`; returns the unsubscribe function. */
  readonly onSignal: (handler: (signal: string) => void) => () => void;
  /** The 1-based position of an argument whose raw bytes are not UTF-8 (see firstNonUtf8Argument). */
  readonly nonUtf8Argument?: number;
}

export const EXIT = {
  ok: 0,
  negative: 1,
  usage: 2,
  notFound: 3,
  unknownResult: 4,
  rejected: 5,
  io: 6,
  cancelled: 130,
} as const;

const PROTOCOL: ReadonlySet<string> = new Set(PROTOCOL_CODES);

export function exitCodeFor(code: AipErrorCode): number {
  switch (code) {
    case 'usage':
      return EXIT.usage;
    case 'store.not_found':
    case 'store.ambiguous':
    case 'repo.not_found':
      return EXIT.notFound;
    case 'head.moved':
    case 'lock.timeout':
    case 'repo.exists':
    case 'operation.empty':
    case 'store.index':
      return EXIT.negative;
    case 'object.id':
    case 'bundle.format':
    case 'snapshot.invalid':
      return EXIT.rejected;
    case 'io':
    case 'internal':
    case 'repo.config':
    case 'run.materialize':
      return EXIT.io;
    default:
      return PROTOCOL.has(code) ? EXIT.rejected : EXIT.io;
  }
}

/** The system code (ENOENT, EISDIR) of an error the operating system reported, or undefined. */
function systemCode(error: unknown): string | undefined {
  const code = errorCode(error);
  return code !== undefined && /^E[A-Z]+$/.test(code) ? code : undefined;
}

/** Turns anything thrown into a known error; unknown failures become a generic `io`/`internal` error. */
export function toAipError(error: unknown): AipError {
  if (isAipError(error)) return error;
  const code = systemCode(error);
  if (code !== undefined) {
    const path = typeof error === 'object' && error !== null && 'path' in error ? ` ${String((error as { path: unknown }).path)}` : '';
    // The code first, as scripts read it; then what it means, in libuv's words.
    const text = systemErrorText(error) ?? ownReadFailureText(error);
    return new AipError('io', `${code}${path}${text === undefined ? '' : ` (${text})`}`, { cause: error });
  }
  return new AipError('internal', 'internal error', { cause: error });
}

export function usage(message: string): AipError {
  return new AipError('usage', message);
}

const DURATION_UNITS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/** `--timeout`: an integer with ns, us, ms, s, m or h (bare = seconds); zero is refused. */
export function parseDuration(text: string): bigint {
  const match = /^(\d+)(ns|us|ms|s|m|h)?$/.exec(text);
  if (!match) throw usage(`invalid duration ${quoted(text)} (use an integer with ns, us, ms, s, m or h)`);
  const ns = BigInt(match[1] as string) * (DURATION_UNITS[match[2] ?? 's'] as bigint);
  if (ns === 0n) throw usage('a duration of zero is not allowed');
  if (ns > 0xffff_ffff_ffff_ffffn) throw usage(`duration ${text} is too long`);
  return ns;
}

/** `--output-limit`: an integer with an optional K, M or G (powers of 1024); zero is refused. */
export function parseSize(text: string, max: number): number {
  const match = /^(\d+)([KMG])?$/.exec(text);
  if (!match) throw usage(`invalid size ${quoted(text)} (use an integer with an optional K, M or G)`);
  const factor = match[2] === 'K' ? 1024n : match[2] === 'M' ? 1024n ** 2n : match[2] === 'G' ? 1024n ** 3n : 1n;
  const size = BigInt(match[1] as string) * factor;
  if (size === 0n) throw usage('a size of zero is not allowed');
  if (size > BigInt(max)) throw usage(`size ${text} exceeds ${max} bytes (max_object_bytes - 64)`);
  return Number(size);
}

export function parseTime(text: string, option: string): string {
  if (!isTime(text)) {
    throw usage(`${option} ${quoted(text)} is not a time: UTC with nine fractional digits on a date and time that exist, like 2026-01-01T00:00:00.000000000Z`);
  }
  return text;
}

/** A system error met while reading stdin (a folder, an fd opened for writing) says so, as a failed write names stdout. */
export function readingStdin(error: unknown): unknown {
  const code = systemCode(error);
  return code === undefined ? error : new AipError('io', `cannot read stdin: ${code}`, { cause: error });
}

/** A system error met while reading `source` names it (a read of a folder reports EISDIR without a path). */
export function namingSource(error: unknown, source: string): unknown {
  if (typeof error === 'object' && error !== null && systemCode(error) !== undefined && !('path' in error)) {
    Object.assign(error, { path: source });
  }
  return error;
}

/** Reads a whole input (FILE or `-` for stdin), refusing more than `limit` bytes before buffering them. */
export async function readInput(io: CliIo, source: string | undefined, limit: number): Promise<Uint8Array> {
  if (source === undefined || source === '-') {
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const chunk of io.stdin) {
        const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
        total += buffer.length;
        if (total > limit) throw new AipError('cbor.too_large', `input exceeds ${limit} bytes`);
        chunks.push(buffer);
      }
    } catch (error) {
      throw readingStdin(error);
    }
    return new Uint8Array(Buffer.concat(chunks, total));
  }
  const handle = await open(source, constants.O_RDONLY);
  try {
    const { size } = await handle.stat();
    if (size > limit) throw new AipError('cbor.too_large', `${source}: ${size} bytes exceed ${limit}`);
    // Read up to the limit, not to the end: a FIFO (`<(...)`) reports size 0
    // and a file may grow after the stat, and readFile would buffer it all.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(64 * 1024), 0, 64 * 1024, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > limit) throw new AipError('cbor.too_large', `${source}: more than ${limit} bytes`);
      chunks.push(buffer.subarray(0, bytesRead));
    }
    return new Uint8Array(Buffer.concat(chunks, total));
  } catch (error) {
    throw namingSource(error, source);
  } finally {
    await handle.close();
  }
}

export function write(stream: Writable, text: string | Uint8Array): Promise<void> {
  return new Promise((settle, reject) => {
    // A stream an earlier write broke (the live `--tee` copy meeting a full
    // disk) refuses further writes as destroyed: the earlier error is the cause.
    stream.write(text, (error) => (error ? reject(stream.errored ?? error) : settle()));
  });
}
