// `aip head STATE` is how a missing or damaged .aip/HEAD is put right: it
// sets HEAD to an existing state and says on stderr that the old one could
// not be read. Printing a missing HEAD still fails, and a name that is no
// state still leaves HEAD as it was.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

describe('aip head STATE on a missing or damaged HEAD', () => {
  it.each([
    ['missing', (path: string) => rm(path)],
    ['damaged', (path: string) => writeFile(path, 'not a state id\n')],
  ])('repairs a %s HEAD', async (_kind, damage) => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const root = (await aip(['head'], { cwd: dir })).text.trim();
    const headFile = join(dir, '.aip', 'HEAD');
    await damage(headFile);
    const printed = await aip(['head'], { cwd: dir });
    expect(printed.code).toBe(6);

    const notState = await aip(['head', 'ffffff'], { cwd: dir });
    expect(notState.code).not.toBe(0);
    expect((await aip(['head'], { cwd: dir })).code).toBe(6);

    const repaired = await aip(['head', root.slice(0, 12)], { cwd: dir });
    expect([repaired.code, repaired.text, repaired.stderr]).toEqual([0, `${root}\n`, `aip: warning: HEAD could not be read; it is now ${root}\n`]);
    expect(await readFile(headFile, 'utf8')).toBe(`${root}\n`);
    const again = await aip(['head', root], { cwd: dir });
    expect([again.code, again.stderr]).toEqual([0, '']);
  });
});
