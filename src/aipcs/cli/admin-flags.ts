// Lexical rules of the administration flags (operations spec §1.5) and the
// machine/interactive mode decision (§1.9.1). Pure: values in, typed values
// or a validation_failed document out; no storage, terminal or file access.

import { isCanonicalUuid } from '../contract/schema-check.js';
import { invalidArgument } from './admin-errors.js';
import type { CliErrorDocument } from './error-document.js';

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: CliErrorDocument };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const bad = <T>(error: CliErrorDocument): Checked<T> => ({ ok: false, error });

const INT64_MAX = 9223372036854775807n;
const DECIMAL = /^[1-9][0-9]*$/;

/** SERVICE_ID, --service, --operation-id, --receipt, --confirm-service-id: a canonical, non-nil UUID. */
export function checkUuid(value: unknown, path: string): Checked<string> {
  if (isCanonicalUuid(value)) return ok(value);
  return bad(invalidArgument(path, 'The value must be a lowercase canonical UUID other than the nil UUID.'));
}

export function checkOptionalUuid(value: unknown, path: string): Checked<string | null> {
  return value === undefined ? ok(null) : checkUuid(value, path);
}

/** --expected-revision: a positive decimal integer within signed 64 bits. */
export function checkRevision(value: unknown, path = '--expected-revision'): Checked<bigint | null> {
  if (value === undefined) return ok(null);
  if (typeof value === 'string' && DECIMAL.test(value) && value.length <= 19 && BigInt(value) <= INT64_MAX) return ok(BigInt(value));
  return bad(invalidArgument(path, 'The revision must be a positive decimal integer.'));
}

/** --limit: 1..100 (default 100). */
export function checkLimit(value: unknown): Checked<number> {
  if (value === undefined) return ok(100);
  if (typeof value === 'string' && DECIMAL.test(value) && value.length <= 3 && Number(value) <= 100) return ok(Number(value));
  return bad(invalidArgument('--limit', 'The limit must be a decimal integer from 1 to 100.'));
}

/**
 * --output, --input: non-empty, at most 4096 characters (code points), no
 * NUL, naming a file. Components are read as the reference's pathlib reads
 * them: empty and `.` components are dropped, so `out.jsonl/` and
 * `./out.jsonl/.` name `out.jsonl`; what is left must end in a name other
 * than `..` (`/`, `.` and `dir/..` are refused). The value returned is that
 * normalised path, which is what is opened.
 */
export function checkFilePath(value: unknown, path: '--output' | '--input'): Checked<string> {
  if (typeof value === 'string' && value.length > 0 && [...value].length <= 4096 && !value.includes('\u0000')) {
    const parts = value.split('/').filter((part) => part !== '' && part !== '.');
    const last = parts.at(-1);
    if (last !== undefined && last !== '..') return ok((value.startsWith('/') ? '/' : '') + parts.join('/'));
  }
  return bad(invalidArgument(path, 'The path must name a file: non-empty, at most 4096 characters, no NUL, not / or . and not ending in ..'));
}

export interface ModeFacts {
  readonly format: 'json' | 'human';
  readonly stdinIsTty: boolean;
  readonly stdoutIsTty: boolean;
  readonly yes: boolean;
}

/** Interactive only with --format human, a terminal on stdin and stdout, and no --yes. */
export function isInteractive(facts: ModeFacts): boolean {
  return facts.format === 'human' && facts.stdinIsTty && facts.stdoutIsTty && !facts.yes;
}

/** The machine-mode requirement that is missing, as a validation failure naming the flag. */
export function missingFlag(flag: string): CliErrorDocument {
  return invalidArgument(flag, 'The option is required in machine mode.', 'Provide the option, or run interactively with --format human on a terminal.');
}
