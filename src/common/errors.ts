// The one error base of the product. A SafeError carries a stable code, a
// message that is safe to show a client, and a retryable flag; anything
// internal (SQL, paths, driver text, stacks) stays in `cause` and is never
// rendered by an edge. Each system defines its own code vocabulary.

import { getSystemErrorMap } from 'node:util';

export interface SafeErrorOptions {
  readonly retryable?: boolean;
  readonly cause?: unknown;
}

export class SafeError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly retryable: boolean;

  constructor(code: Code, safeMessage: string, options: SafeErrorOptions = {}) {
    super(safeMessage, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SafeError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

export function isSafeError(value: unknown): value is SafeError {
  return value instanceof SafeError;
}

/** The `code` a Node system error (ENOSPC) or a driver error (SQLITE_FULL) carries, when it is a string. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

let systemErrorMap: Map<number, [string, string]> | undefined;

/**
 * libuv's own text for a Node system error's errno ("no such file or
 * directory" for ENOENT), or undefined for anything else. Node's message
 * wording changes between releases (Node 24 rewrote uv_cwd's); this does not.
 */
export function systemErrorText(error: unknown): string | undefined {
  const { errno, code } = (error ?? {}) as { errno?: unknown; code?: unknown };
  if (typeof errno !== 'number') return undefined;
  // Node builds the table afresh on every call; a listing may ask thousands of times.
  const known = (systemErrorMap ??= getSystemErrorMap()).get(errno);
  return known !== undefined && known[0] === code ? known[1] : undefined;
}
