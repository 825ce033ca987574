// aigpt's error vocabulary on top of the shared SafeError. aigpt is a local,
// single-user tool whose users need to see which file failed, so its safe
// messages deliberately carry absolute paths and a short cause (spec 4.7, 5.5).

import { isAbsolute, sep } from 'node:path';
import { SafeError, systemErrorText } from '../../common/errors.js';

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

/**
 * A path as messages show it: absolute (spec 5.5), a relative one (under a
 * relative HOME) put after the working directory without normalising it,
 * since a `..` after a symlink does not mean what dropping a component does.
 */
export function absolutePath(path: string): string {
  if (isAbsolute(path)) return path;
  try {
    return `${process.cwd()}${sep}${path}`;
  } catch {
    return path; // the working directory was deleted: the path as given is all there is
  }
}

/** `Failed to {verb} {path}: {cause}`, the path made absolute (spec 5.5: paths in messages are absolute, also under a relative HOME). */
export function failedTo(
  code: 'read_failed' | 'parse_failed' | 'create_failed' | 'write_failed',
  path: string,
  cause: unknown,
): AigptError {
  const verb = { read_failed: 'read', parse_failed: 'parse', create_failed: 'create', write_failed: 'write' }[code];
  return new AigptError(code, `Failed to ${verb} ${absolutePath(path)}: ${describeCause(cause)}`, { cause });
}
