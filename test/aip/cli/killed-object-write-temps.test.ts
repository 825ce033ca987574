// An object write killed with kill -9 between its temp file and its link
// (spec 7.4 steps 2-4) leaves the temp file in .aip/tmp; it can be as large
// as an object and nothing else would ever remove it. The next aip that
// writes an object removes the temp files of writers that are gone (their
// pid is in the name), while a live writer's file stays.
import { readdir, utimes, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
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
    const live = `${process.pid}-${'ab'.repeat(16)}`;
    await writeFile(join(tmp, live), 'in progress');
    const aMinuteAgo = new Date(Date.now() - 120_000);
    for (const name of [...left, live]) await utimes(join(tmp, name), aMinuteAgo, aMinuteAgo);

    const next = await aip(['put', '--from', 'raw', '-'], { cwd: dir, input: 'the next write' });
    expect(next.code, next.stderr).toBe(0);
    expect(await readdir(tmp)).toEqual([live]);
    const verify = await aip(['verify'], { cwd: dir });
    expect(verify.code, verify.text).toBe(0);
  });
});
