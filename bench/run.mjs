// Runs every bench/*.bench.mjs in its own process, one after another, so one
// benchmark's heap and caches do not colour the next. Each prints markdown.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const all = readdirSync(here)
  .filter((name) => name.endsWith('.bench.mjs'))
  .map((name) => name.slice(0, -'.bench.mjs'.length))
  .sort();
if (only.some((word) => word === '-h' || word === '--help')) {
  process.stdout.write(`usage: node bench/run.mjs [NAME...]\nRuns every benchmark, or those named: a whole name (${all.join(', ')}) or a part of one (records).\n`);
  process.exit(0);
}
// A whole name picks that benchmark only (`aip` is not every `aipcs-*`); any other word picks the names containing it.
const picks = (word) => (all.includes(word) ? [word] : all.filter((name) => name.includes(word)));
const unknown = only.filter((word) => picks(word).length === 0);
if (unknown.length > 0) {
  process.stderr.write(`bench: no benchmark named ${unknown.join(', ')} (have: ${all.join(', ')})\n`);
  process.exit(2);
}
const files = (only.length === 0 ? all : [...new Set(only.flatMap(picks))].sort()).map((name) => `${name}.bench.mjs`);

// The benchmarks share test fixtures that only `npm run bench` compiles.
if (!existsSync(join(here, '..', 'dist', 'test', 'support'))) {
  process.stderr.write('bench: the benchmark build is missing; run `npm run bench` (or `npm run bench -- NAME...`)\n');
  process.exit(2);
}

let failed = 0;
for (const name of files) {
  process.stdout.write(`\n<!-- ${name} -->\n`);
  const run = spawnSync(process.execPath, ['--expose-gc', join(here, name)], { stdio: 'inherit' });
  if (run.status !== 0) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
