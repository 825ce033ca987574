// The one error base of the product. A SafeError carries a stable code, a
// message that is safe to show a client, and a retryable flag; anything
// internal (SQL, paths, driver text, stacks) stays in `cause` and is never
// rendered by an edge. Each system defines its own code vocabulary.

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
