// `aip run` materialises the state, then checks the folder against the state
// by a snapshot that uses the state's own .aipignore (spec 8 steps 1 and 7).
// A state that holds a path its .aipignore ignores (an operation made by
// another tool, put and applied as is) therefore cannot be run: the check does
// not see that file. The run stopped with `run.materialize` (exit 6) saying
// only that the folder does not match the state; now the error names the
// path and why. A path is escaped in the error line as any other (D53).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

/** A state whose files are `.aipignore` (the line `pattern`, by default `ignored`) and the file `ignored` itself. */
async function stateHoldingIgnoredPath(dir: string, ignored: string, pattern = ignored): Promise<string> {
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  await writeFile(join(dir, '.aipignore'), `${pattern}\n`);
  await writeFile(join(dir, 'kept.txt'), 'kept\n');
  const made = await aip(['snapshot', '--title', 'a', '--goal', 'a'], { cwd: dir });
  expect(made.code).toBe(0);
  const recorded = /operation ([0-9a-f]{64})/.exec(made.text)![1]!;
  // The same operation, with kept.txt renamed to the ignored path.
  const operation = JSON.parse((await aip(['show', recorded], { cwd: dir })).text) as { id?: string; data: { effects: { path: string }[] } };
  delete operation.id;
  for (const effect of operation.data.effects) if (effect.path === 'kept.txt') effect.path = ignored;
  await writeFile(join(dir, 'op.json'), JSON.stringify(operation));
  const put = await aip(['put', '--from', 'json', 'op.json'], { cwd: dir });
  expect(put.code, put.stderr).toBe(0);
  const applied = await aip(['apply', put.text.trim()], { cwd: dir });
  expect(applied.code, applied.stderr).toBe(0);
  return applied.text.trim();
}

describe('aip run of a state holding a path its .aipignore ignores', () => {
  it('fails with run.materialize naming the path', async () => {
    const dir = await tempDir();
    const state = await stateHoldingIgnoredPath(dir, 'x.log');
    const run = await aip(['run', '--state', state, '--', 'true'], { cwd: dir });
    expect(run.code).toBe(6);
    expect(run.text).toBe('');
    expect(run.stderr).toBe(
      `aip: run.materialize: the materialised folder does not match state ${state}: the state holds x.log, which the state's .aipignore ignores, so a run could not see it change\n`,
    );
  });

  it('names a path whose innermost folder is the one ignored', async () => {
    const dir = await tempDir();
    const state = await stateHoldingIgnoredPath(dir, 'src/build/out.o', 'build/');
    const run = await aip(['run', '--state', state, '--', 'true'], { cwd: dir });
    expect(run.code).toBe(6);
    expect(run.stderr).toContain(': the state holds src/build/out.o, which the state\'s .aipignore ignores,');
  });

  it('escapes a path with control characters in the error line', async () => {
    const dir = await tempDir();
    const state = await stateHoldingIgnoredPath(dir, 'x\u001b[31m');
    const run = await aip(['run', '--state', state, '--', 'true'], { cwd: dir });
    expect(run.code).toBe(6);
    expect(run.stderr).toContain('the state holds x\\u001b[31m, which');
    expect(run.stderr.split('\n')).toHaveLength(2);
  });
});
