// The executables' launcher. A dependency missing from node_modules (an
// install cut short, a package deleted by hand) otherwise fails every
// command, `--help` included, with Node's module-resolution stack trace; the
// launcher names the package in one line and says how to mend it; so it does
// for an open files limit too low to load the modules. Any other failure
// propagates unchanged.

import { existsSync } from 'node:fs';
import { errorCode } from './errors.js';

/** Exit status of a broken install, or of modules that could not be opened: outside every command's own classes. */
const EXIT_BROKEN_INSTALL = 1;

/**
 * The package a failed import names when it is missing from node_modules, or
 * null for anything else (a file of our own build, a syntax error, a failure
 * inside the command). ESM reports `Cannot find package 'x'`, a CommonJS
 * dependency's own require (better-sqlite3 needs `bindings`) `Cannot find module 'x'`.
 */
export function missingPackage(error: unknown): string | null {
  const code = errorCode(error);
  if (!(error instanceof Error) || (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND')) return null;
  const quoted = /^Cannot find (?:package|module) '([^']*)'/.exec(error.message)?.[1];
  // A relative or absolute specifier names a file of the build, not a package.
  if (quoted === undefined || quoted === '' || /^(?:[./\\]|[a-z]:|file:)/i.test(quoted)) return null;
  return quoted.split('/').slice(0, quoted.startsWith('@') ? 2 : 1).join('/');
}

/**
 * Why loading modules failed when the open files limit is the cause, or null.
 * Node opens a module graph's files all at once, so a low `ulimit -n` fails
 * the load with EMFILE, or with a "cannot find" naming a file that is there
 * (its resolver reads a failed open as absence).
 */
export function openFilesShortage(error: unknown): string | null {
  const code = errorCode(error);
  // A module file's open, not a file some command opened while it ran.
  const path = (error as { path?: unknown } | null)?.path;
  let cause = (code === 'EMFILE' || code === 'ENFILE') && (path === undefined || (typeof path === 'string' && /\.(?:[cm]?js|json|node)$/.test(path)));
  if (!cause && error instanceof Error && (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND')) {
    const named = /^Cannot find (?:package|module) '(\/[^']*)'/.exec(error.message)?.[1];
    cause = named !== undefined && existsSync(named);
  }
  return cause ? 'too many open files (raise the open files limit, ulimit -n)' : null;
}

/**
 * What to tell the user when loading modules failed for a reason of theirs
 * to mend (a package missing from node_modules, an open files limit too
 * low), or null for anything else.
 */
export function moduleLoadFailure(error: unknown): string | null {
  const shortage = openFilesShortage(error);
  if (shortage !== null) return `cannot load its modules: ${shortage}`;
  const name = missingPackage(error);
  if (name === null) return null;
  return `this installation is incomplete: the package '${name}' is missing. Install the dependencies again (\`npm ci\` in a checkout, or reinstall the package) and retry.`;
}

/**
 * Runs an executable's entry module (which does its work when imported).
 * `program` is the command's name, as its own messages begin.
 */
export async function launch(program: string, entry: () => Promise<unknown>): Promise<void> {
  try {
    await entry();
  } catch (error) {
    const failure = moduleLoadFailure(error);
    if (failure === null) throw error;
    process.stderr.write(`${program}: ${failure}\n`);
    process.exitCode = EXIT_BROKEN_INSTALL;
  }
}
