// Symbolic links inside `.aip` where aip makes its own files and folders
// (spec 7.1: index/v1/refs/{xx}/{rest}, objects/{xx}, tmp): a write never
// goes through one to a file or folder outside the repository. A linked
// index is no index (rebuilt); a linked index file or fan-out folder is an
// `io` error naming `aip index rebuild`; a linked tmp is refused before
// anything is removed from it. Before, an object write appended its index
// lines to whatever file the link named.
import { mkdir, readdir, readFile, rm, symlink, writeFile, lstat, cp } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const ROOT = 'd3892a5bf1fef7589daf0d297b76d3a0630d2c516352ce43f758fd34ad632ef6';
const VICTIM = 'a file outside the repository\n';

/** An intent citing the root state: storing it appends a line to the root state's index file. */
const intentCitingRoot = (n: number): string[] => ['intent', '--title', 't', '--goal', 'g', '--context', ROOT, '--created-at', `2026-01-01T00:00:0${n}.000000000Z`];

async function initialized(): Promise<{ dir: string; outside: string }> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  return { dir, outside: await tempDir() };
}

describe('links inside .aip', () => {
  it('a linked index file: the write fails with io and the file outside is untouched; index rebuild mends it', async () => {
    const { dir, outside } = await initialized();
    const victim = join(outside, 'victim');
    await writeFile(victim, VICTIM);
    const refs = join(dir, '.aip', 'index', 'v1', 'refs', ROOT.slice(0, 2));
    await mkdir(refs, { recursive: true });
    await rm(join(refs, ROOT.slice(2)), { force: true });
    await symlink(victim, join(refs, ROOT.slice(2)));

    const refused = await aip(intentCitingRoot(1), { cwd: dir });
    expect(refused.code, refused.stderr).toBe(6);
    expect(refused.stderr).toMatch(/^aip: io: the reverse index path .* is not a regular file \(a symbolic link\?\); aip index rebuild replaces it\n$/);
    expect(await readFile(victim, 'utf8')).toBe(VICTIM);

    expect((await aip(['index', 'rebuild'], { cwd: dir })).code).toBe(0);
    const stored = await aip(intentCitingRoot(1), { cwd: dir });
    expect(stored.code, stored.stderr).toBe(0);
    expect((await aip(['refs', ROOT], { cwd: dir })).text).toBe(`${stored.text.trim()} intent/1 context\n`);
    expect(await readFile(victim, 'utf8')).toBe(VICTIM);
  });

  it('a linked fan-out folder of the index or of the objects: nothing is written outside', async () => {
    const { dir, outside } = await initialized();
    const refs = join(dir, '.aip', 'index', 'v1', 'refs', ROOT.slice(0, 2));
    await rm(refs, { recursive: true, force: true });
    await symlink(outside, refs);
    const refused = await aip(intentCitingRoot(1), { cwd: dir });
    expect(refused.code, refused.stderr).toBe(6);
    expect(refused.stderr).toContain('aip index rebuild replaces it');
    expect(await readdir(outside)).toEqual([]);
    expect((await aip(['index', 'rebuild'], { cwd: dir })).code).toBe(0);
    expect((await aip(intentCitingRoot(1), { cwd: dir })).code).toBe(0);

    // An object whose fan-out folder is a link.
    const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'x' });
    const id = put.text.trim();
    await rm(join(dir, '.aip', 'objects', id.slice(0, 2)), { recursive: true });
    await symlink(outside, join(dir, '.aip', 'objects', id.slice(0, 2)));
    const again = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'x' });
    expect(again.code, again.stderr).toBe(6);
    expect(again.stderr).toContain('is not a folder (a symbolic link?)');
    expect(await readdir(outside)).toEqual([]);
  });

  it('a linked index folder is no index: it is rebuilt in the repository and the folder outside keeps its files', async () => {
    const { dir, outside } = await initialized();
    const index = join(dir, '.aip', 'index');
    const copy = join(outside, 'index');
    await cp(index, copy, { recursive: true });
    const before = await readFile(join(copy, 'v1', 'refs', ROOT.slice(0, 2), ROOT.slice(2)), 'utf8').catch(() => '');
    await rm(index, { recursive: true });
    await symlink(copy, index);

    const stored = await aip(intentCitingRoot(1), { cwd: dir });
    expect(stored.code, stored.stderr).toBe(0);
    expect((await lstat(index)).isDirectory()).toBe(true);
    expect((await aip(['refs', ROOT], { cwd: dir })).text).toBe(`${stored.text.trim()} intent/1 context\n`);
    expect(await readFile(join(copy, 'v1', 'refs', ROOT.slice(0, 2), ROOT.slice(2)), 'utf8').catch(() => '')).toBe(before);
    expect((await aip(['verify'], { cwd: dir })).code).toBe(0);
  });

  it('a linked tmp folder: index rebuild and object writes refuse it before removing anything there', async () => {
    const { dir, outside } = await initialized();
    await mkdir(join(outside, 'index-mine'));
    await writeFile(join(outside, 'index-mine', 'notes'), VICTIM);
    const tmp = join(dir, '.aip', 'tmp');
    await rm(tmp, { recursive: true, force: true });
    await symlink(outside, tmp);

    const rebuild = await aip(['index', 'rebuild'], { cwd: dir });
    expect(rebuild.code, rebuild.stderr).toBe(6);
    expect(rebuild.stderr).toBe(`aip: io: ${tmp} is not a folder (a symbolic link?); remove it\n`);
    const put = await aip(['put', '--from', 'raw'], { cwd: dir, input: 'x' });
    expect(put.code, put.stderr).toBe(6);
    expect(await readFile(join(outside, 'index-mine', 'notes'), 'utf8')).toBe(VICTIM);
    expect(await readdir(outside)).toEqual(['index-mine']);
  });
});
