// Runs a built command as if some packages were not installed: a module
// hook (loaded through NODE_OPTIONS) refuses to resolve them with the error
// Node gives for a missing package.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The environment that refuses `packages`: a name ending in `/` refuses every
 * module under that scope, any other name the package and its subpaths.
 */
export function envWithoutPackages(packages: readonly string[]): Record<string, string> {
  const folder = mkdtempSync(join(tmpdir(), 'aipcs-refuse-modules-'));
  const hooks = join(folder, 'hooks.mjs');
  writeFileSync(
    hooks,
    `const refused = ${JSON.stringify(packages)};
export async function resolve(specifier, context, next) {
  if (refused.some((name) => specifier === name || specifier.startsWith(name.endsWith('/') ? name : name + '/'))) {
    throw Object.assign(new Error(specifier + ' is not installed'), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}\n`,
  );
  const register = join(folder, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  return { NODE_OPTIONS: `--import=${pathToFileURL(register).href}` };
}
