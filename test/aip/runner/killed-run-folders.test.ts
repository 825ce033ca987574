// A runner killed with kill -9 (or a crash) cannot remove its evaluation
// folder (spec 8 step 11), a copy of a whole state under the system temp
// folder. A folder the run will remove carries the runner's pid
// (`aip-run-{pid}-*`), and the next `aip run` removes those of runners that
// are gone (over a minute old, ours). A live run's folder and one kept with
// `--keep` (no pid in its name) stay.
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

describe('evaluation folders of killed runs', () => {
  it('are removed by the next run; a live run and a kept folder stay', async () => {
    const project = await tempDir();
    expect((await aip(['init'], { cwd: project })).code).toBe(0);
    const temp = await tempDir('aip-killed-run-');
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    const dead = `aip-run-${gone}-Ab3xYz`;
    const live = `aip-run-${process.pid}-Qw9eRt`;
    const kept = 'aip-run-Zx8cVb';
    const aMinuteAgo = new Date(Date.now() - 120_000);
    for (const name of [dead, live, kept]) {
      await mkdir(join(temp, name));
      await writeFile(join(temp, name, 'file.txt'), 'a state file');
      await utimes(join(temp, name), aMinuteAgo, aMinuteAgo);
    }
    const run = await aip(['run', '--', 'true'], { cwd: project, env: { TMPDIR: temp } });
    expect(run.code, run.stderr).toBe(0);
    expect((await readdir(temp)).sort()).toEqual([live, kept].sort());
  });
});
