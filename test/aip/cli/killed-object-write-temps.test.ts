// An object write killed with kill -9 between its temp file and its link
// (spec 7.4 steps 2-4) leaves the temp file in .aip/tmp; it can be as large
// as an object and nothing else would ever remove it. The next aip that
// writes an object removes the temp files of writers that are gone (their
// pid is in the name), while a live writer's file stays, and so does one
// named in another PID namespace (its pid names nothing here). The same
// holds for the work folders of killed `aip init`s.
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ownerTag } from '../../../src/common/process.js';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CRASH_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/crash-at.mjs');

describe('temp files of killed object writers', () => {
  it('are removed by the next object write; a live writer keeps its own', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const tmp = join(dir, '.aip', 'tmp');
    const killed = await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: 'killed before its link', nodeArgs: ['--import', CRASH_AT], env: { AIP_TEST_CRASH_AT: 'link:1' } });
    expect(killed.signal).toBe('SIGKILL');
    const left = await readdir(tmp);
    expect(left).toHaveLength(1);
    // A live writer's file (this test process's pid), as old as the killed one.
    const live = `${ownerTag()}-${'ab'.repeat(16)}`;
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    const otherNamespace = `${gone}.1-${'cd'.repeat(16)}`;
    for (const name of [live, otherNamespace]) await writeFile(join(tmp, name), 'in progress');
    const aMinuteAgo = new Date(Date.now() - 120_000);
    for (const name of [...left, live, otherNamespace]) await utimes(join(tmp, name), aMinuteAgo, aMinuteAgo);

    const next = await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: 'the next write' });
    expect(next.code, next.stderr).toBe(0);
    expect((await readdir(tmp)).sort()).toEqual([live, otherNamespace].sort());
    const verify = await aip(['verify'], { cwd: dir });
    expect(verify.code, verify.text).toBe(0);
  });

  it('the work folders of killed inits go at the next init; one of another PID namespace stays', async () => {
    const dir = await tempDir();
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    const namespace = /\.([0-9]+)$/.exec(ownerTag())?.[1];
    const deadHere = `.aip-init-${gone}${namespace === undefined ? '' : `.${namespace}`}-${'ab'.repeat(8)}`;
    const deadOlder = `.aip-init-${gone}-${'cd'.repeat(8)}`;
    const otherNamespace = `.aip-init-${gone}.1-${'ef'.repeat(8)}`;
    for (const name of [deadHere, deadOlder, otherNamespace]) await mkdir(join(dir, name));
    const init = await aip(['init'], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
    expect((await readdir(dir)).filter((name) => name.startsWith('.aip-init-'))).toEqual([otherNamespace]);
  });
});
