// Runs every bench/*.bench.mjs in its own process, one after another, so one
// benchmark's heap and caches do not colour the next. Each prints markdown.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((name) => name.endsWith('.bench.mjs'))
  .filter((name) => only.length === 0 || only.some((word) => name.includes(word)))
  .sort();

let failed = 0;
for (const name of files) {
  process.stdout.write(`\n<!-- ${name} -->\n`);
  const run = spawnSync(process.execPath, ['--expose-gc', join(here, name)], { stdio: 'inherit' });
  if (run.status !== 0) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
