// A runner killed with kill -9 (or a crash) cannot remove its evaluation
// folder (spec 8 step 11), a copy of a whole state under the system temp
// folder. A folder the run will remove carries the runner's pid
// (`aip-run-{pid}-*`), and the next `aip run` removes those of runners that
// are gone (over a minute old, ours). A live run's folder, one kept with
// `--keep` (no pid in its name) and one named with another PID namespace
// (a container sharing the temp folder: its pid names nothing here) stay.
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ownPidNamespace } from '../../../src/common/process.js';
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
    // Named with this PID namespace, and with another one (a container
    // sharing the temp folder), whose pid means nothing here.
    const namespace = /^pid:\[([0-9]+)\]$/.exec(ownPidNamespace() ?? '')?.[1];
    const deadHere = namespace === undefined ? undefined : `aip-run-${gone}.${namespace}-Cd4eFg`;
    const otherNamespace = `aip-run-${gone}.1-Hi5jKl`;
    const aMinuteAgo = new Date(Date.now() - 120_000);
    for (const name of [dead, live, kept, otherNamespace, ...(deadHere === undefined ? [] : [deadHere])]) {
      await mkdir(join(temp, name));
      await writeFile(join(temp, name, 'file.txt'), 'a state file');
      await utimes(join(temp, name), aMinuteAgo, aMinuteAgo);
    }
    // Of a gone pid too, but made within the last minute: it stays for a later run.
    const deadRecent = `aip-run-${gone}-Mn6oPq`;
    await mkdir(join(temp, deadRecent));
    const run = await aip(['run', '--', 'true'], { cwd: project, env: { TMPDIR: temp } });
    expect(run.code, run.stderr).toBe(0);
    expect((await readdir(temp)).sort()).toEqual([live, kept, otherNamespace, deadRecent].sort());
  });
});
