// The executables' launcher. A dependency missing from node_modules (an
// install cut short, a package deleted by hand) otherwise fails every
// command, `--help` included, with Node's module-resolution stack trace; the
// launcher names the package in one line and says how to mend it. Any other
// failure propagates unchanged.

import { errorCode } from './errors.js';

/** Exit status of a broken install: outside every command's own classes. */
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
 * Runs an executable's entry module (which does its work when imported).
 * `program` is the command's name, as its own messages begin.
 */
export async function launch(program: string, entry: () => Promise<unknown>): Promise<void> {
  try {
    await entry();
  } catch (error) {
    const name = missingPackage(error);
    if (name === null) throw error;
    process.stderr.write(
      `${program}: this installation is incomplete: the package '${name}' is missing. ` +
        'Install the dependencies again (`npm ci` in a checkout, or reinstall the package) and retry.\n',
    );
    process.exitCode = EXIT_BROKEN_INSTALL;
  }
}
