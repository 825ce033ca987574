// Textual path rules of configuration (operations spec §2.5.2 and §2.7): the
// explicit SQLite data root and the platform default root computed from
// HOME / XDG_DATA_HOME / LOCALAPPDATA. Pure: nothing is stat'ed, opened or created.

import { hasSurroundingWhitespace, isPrintable } from './text-rules.js';
import { codePointLength } from '../../common/code-points.js';

const MAX_PATH_LENGTH = 4096;
const LEAF = 'aipcs';

/** Python's Path.is_absolute() for the host's flavour: POSIX needs a leading `/`, Windows a drive and root or a UNC share. */
export function isAbsolutePath(text: string, platform: NodeJS.Platform): boolean {
  if (platform === 'win32') return /^[A-Za-z]:[\\/]/.test(text) || /^[\\/]{2}[^\\/]+[\\/]+[^\\/]+/.test(text);
  return text.startsWith('/');
}

/** The configured data root: non-empty, absolute, ≤ 4096 characters, printable, no surrounding whitespace. */
export function isValidDataRoot(text: string, platform: NodeJS.Platform): boolean {
  return (
    text.length > 0 &&
    !hasSurroundingWhitespace(text) &&
    codePointLength(text) <= MAX_PATH_LENGTH &&
    isPrintable(text) &&
    isAbsolutePath(text, platform)
  );
}

function isValidBase(text: string | undefined, platform: NodeJS.Platform): text is string {
  if (text === undefined || !isValidDataRoot(text, platform)) return false;
  const separators = platform === 'win32' ? /[\\/]/ : /\//;
  return !text.split(separators).some((part) => part === '.' || part === '..');
}

function join(base: string, separator: string, tail: readonly string[]): string {
  const trailing = separator === '\\' ? /[\\/]+$/ : /\/+$/;
  return [base.replace(trailing, ''), ...tail].join(separator);
}

export type DefaultRootOutcome = { readonly ok: true; readonly root: string } | { readonly ok: false };

/**
 * The default SQLite data root (§2.7). Linux and other POSIX systems:
 * `$XDG_DATA_HOME/aipcs` when XDG_DATA_HOME is present (an empty or relative
 * value fails rather than falling back), else `$HOME/.local/share/aipcs`.
 * macOS: `$HOME/Library/Application Support/aipcs`. Windows: `%LOCALAPPDATA%\aipcs`.
 */
export function defaultSqliteDataRoot(
  platform: NodeJS.Platform,
  env: Readonly<Record<string, string | undefined>>,
): DefaultRootOutcome {
  if (platform === 'darwin') {
    const home = env['HOME'];
    return isValidBase(home, platform) ? { ok: true, root: join(home, '/', ['Library', 'Application Support', LEAF]) } : { ok: false };
  }
  if (platform === 'win32') {
    const local = env['LOCALAPPDATA'];
    return isValidBase(local, platform) ? { ok: true, root: join(local, '\\', [LEAF]) } : { ok: false };
  }
  const xdg = env['XDG_DATA_HOME'];
  if (xdg !== undefined) return isValidBase(xdg, platform) ? { ok: true, root: join(xdg, '/', [LEAF]) } : { ok: false };
  const home = env['HOME'];
  return isValidBase(home, platform) ? { ok: true, root: join(home, '/', ['.local', 'share', LEAF]) } : { ok: false };
}
