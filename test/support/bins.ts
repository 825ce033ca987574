// Paths of the built command-line entry points. Tests run the real bins from
// dist/ as child processes, the way a user or an MCP client does; `npm test`
// builds before it runs them.

import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export function builtBin(relative: string): string {
  const path = join(repoRoot, 'dist', 'src', relative);
  if (!existsSync(path)) throw new Error(`${relative} is not built: run npm run build first`);
  return path;
}

export const aipcsBin = (): string => builtBin('aipcs/cli/main.js');
