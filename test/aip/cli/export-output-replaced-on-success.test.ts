// `aip export -o FILE` over an existing regular file (D28): the bundle is
// written to a temp file beside it and renamed over it only once complete,
// so a failed or interrupted export leaves the old file's bytes as they were
// (it used to open FILE with truncation first and leave it empty or partial).
import { spawn, spawnSync } from 'node:child_process';
import { chmod, readdir, readFile, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { AIP_BIN, aip, requireBuiltBin } from '../support/cli.js';
import { tempDir, writeTree } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CRASH_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/crash-at.mjs');

/** As root the refusal is shown by another user (root may write any file), who must reach the checkout: not one in root's 0700 home. */
const OTHER_USER = { uid: 65534, gid: 65534 };
const otherUserCannotRunAip = process.getuid?.() === 0 && spawnSync('/bin/sh', ['-c', 'test -r "$1"', 'sh', AIP_BIN], OTHER_USER).status !== 0;

/** A repository with a few objects; returns its folder and the ID of the artifact of `a.txt`. */
async function repository(): Promise<{ dir: string; artifact: string }> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  await writeTree(dir, { 'a.txt': 'a\n', 'b.txt': 'b\n'.repeat(300) });
  expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).code).toBe(0);
  const artifact = (await aip(['put', '--from', 'raw', 'a.txt'], { cwd: dir })).text.trim();
  return { dir, artifact };
}

const OLD = Buffer.from('the previous bundle, which must survive a failed export\n');

describe('aip export -o onto an existing file', () => {
  it('a failed export leaves the existing file as it was, and no temp file beside it', async () => {
    const { dir, artifact } = await repository();
    const out = await tempDir();
    const target = join(out, 'old.bundle');
    await writeFile(target, OLD);
    await chmod(target, 0o640);
    // Damage one stored object: its bytes no longer hash to its name.
    const objectPath = join(dir, '.aip', 'objects', artifact.slice(0, 2), artifact.slice(2));
    await chmod(objectPath, 0o644);
    await writeFile(objectPath, 'not the artifact');

    const failed = await aip(['export', '-o', target], { cwd: dir });
    expect(failed.code, failed.stderr).toBe(5);
    expect(failed.stderr).toContain('store.hash');
    expect(await readFile(target)).toEqual(OLD);
    expect(await readdir(out)).toEqual(['old.bundle']);
  });

  it('an interrupted export leaves the existing file as it was', async () => {
    const { dir } = await repository();
    const out = await tempDir();
    const target = join(out, 'old.bundle');
    await writeFile(target, OLD);
    // The 5th open is an object read, after the output was opened.
    const interrupted = await aip(['export', '-o', target], { cwd: dir, nodeArgs: ['--import', CRASH_AT], env: { AIP_TEST_CRASH_AT: 'open:5', AIP_TEST_CRASH_SIGNAL: 'SIGTERM' } });
    expect(interrupted.signal).toBe('SIGTERM');
    expect(await readFile(target)).toEqual(OLD);
    expect(await readdir(out)).toEqual(['old.bundle']);
  });

  it.skipIf(otherUserCannotRunAip)('a file this user may not write is refused as before, not replaced through the folder', async () => {
    const { dir } = await repository();
    await chmod(dir, 0o755);
    const out = await tempDir();
    await chmod(out, 0o777); // a folder anyone may make files in
    const target = join(out, 'read-only.bundle');
    await writeFile(target, OLD);
    await chmod(target, 0o444);
    // As root, as another user (root may write any file); otherwise as this one.
    const asOther = process.getuid?.() === 0 ? OTHER_USER : {};
    const refused = await new Promise<{ code: number | null; stderr: string }>((settle, reject) => {
      const child = spawn(process.execPath, [AIP_BIN, 'export', '-o', target], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], ...asOther });
      const err: Buffer[] = [];
      child.stderr.on('data', (c: Buffer) => err.push(c));
      child.on('error', reject);
      child.on('close', (code) => settle({ code, stderr: Buffer.concat(err).toString('utf8') }));
    });
    expect(refused.code, refused.stderr).toBe(6);
    expect(refused.stderr).toBe(`aip: io: EACCES ${target} (permission denied)\n`);
    expect(await readFile(target)).toEqual(OLD);
    expect(await readdir(out)).toEqual(['read-only.bundle']);
  });

  it('a successful export replaces the file, keeping its permission bits, and writes through a link to it', async () => {
    const { dir } = await repository();
    const expected = (await aip(['export'], { cwd: dir })).stdout;
    const out = await tempDir();
    const target = join(out, 'old.bundle');
    await writeFile(target, OLD);
    await chmod(target, 0o640);
    expect((await aip(['export', '-o', target], { cwd: dir })).code).toBe(0);
    expect(await readFile(target)).toEqual(expected);
    expect((await stat(target)).mode & 0o7777).toBe(0o640);

    // A link to a regular file: the file it names is replaced, the link stays.
    await writeFile(target, OLD);
    const link = join(out, 'link.bundle');
    await symlink('old.bundle', link);
    expect((await aip(['export', '-o', link], { cwd: dir })).code).toBe(0);
    expect(await readFile(target)).toEqual(expected);
    expect((await readdir(out)).sort()).toEqual(['link.bundle', 'old.bundle']);
    await unlink(link);

    // A new file is still made, with nothing else left beside it.
    const fresh = join(out, 'fresh.bundle');
    expect((await aip(['export', '-o', fresh], { cwd: dir })).code).toBe(0);
    expect(await readFile(fresh)).toEqual(expected);
    expect((await readdir(out)).sort()).toEqual(['fresh.bundle', 'old.bundle']);
  });

  it('-o - writes the bundle to stdout, as import reads - as stdin, and makes no file named -', async () => {
    const { dir } = await repository();
    const expected = (await aip(['export'], { cwd: dir })).stdout;
    const dashed = await aip(['export', '-o', '-'], { cwd: dir });
    expect(dashed.code).toBe(0);
    expect(dashed.stdout).toEqual(expected);
    expect(dashed.stderr).toMatch(/^exported \d+ objects\n$/);
    expect((await readdir(dir)).includes('-')).toBe(false);
  });
});
