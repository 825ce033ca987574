// aigpt's error vocabulary on top of the shared SafeError. aigpt is a local,
// single-user tool whose users need to see which file failed, so its safe
// messages deliberately carry absolute paths and a short cause (spec 4.7, 5.5).

import { SafeError, systemErrorText } from '../common/errors.js';

export type AigptErrorCode =
  | 'config_invalid'
  | 'read_failed'
  | 'parse_failed'
  | 'create_failed'
  | 'write_failed'
  | 'lock_timeout'
  | 'invalid_argument'
  | 'over_limit'
  | 'run_failed';

export class AigptError extends SafeError<AigptErrorCode> {
  override readonly name = 'AigptError';
}

/**
 * A one-line cause from a Node system error: `ENOENT: no such file or directory`
 * without the trailing `, open '/path'` that would repeat the path we already print.
 */
export function describeCause(error: unknown): string {
  if (error instanceof Error) {
    const sys = error as NodeJS.ErrnoException;
    // libuv's own text for the errno: users compare these lines across Node releases.
    const known = systemErrorText(error);
    if (known !== undefined) return `${sys.code}: ${known}`;
    let message = error.message;
    if (sys.syscall !== undefined) {
      const at = message.indexOf(`, ${sys.syscall}`);
      if (at > 0) message = message.slice(0, at);
    }
    return message;
  }
  return String(error);
}

export function errnoCode(error: unknown): string | undefined {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

export function failedTo(
  code: 'read_failed' | 'parse_failed' | 'create_failed' | 'write_failed',
  path: string,
  cause: unknown,
): AigptError {
  const verb = { read_failed: 'read', parse_failed: 'parse', create_failed: 'create', write_failed: 'write' }[code];
  return new AigptError(code, `Failed to ${verb} ${path}: ${describeCause(cause)}`, { cause });
}
