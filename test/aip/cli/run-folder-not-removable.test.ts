// Spec 8 step 11: store the captures and the evidence, then remove the
// evaluation folder. When the command left something that cannot be removed
// (an immutable file; for a user who is not root, a parent folder it made
// read-only), the removal failed after the evidence was stored, and `aip run`
// ended with `aip: io: ...` (exit 6) instead of the evidence's ID and result:
// the outcome of a command that ran and was recorded looked like a failure to
// run it. Now the result stands and a warning names the leftover folder.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

const root = process.getuid?.() === 0;

/** Whether `chattr +i` works here (root on a file system with the attribute). */
async function immutableFiles(dir: string): Promise<boolean> {
  const probe = join(dir, 'probe');
  await writeFile(probe, '');
  try {
    execFileSync('chattr', ['+i', probe], { stdio: 'ignore' });
    execFileSync('chattr', ['-i', probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('aip run: an evaluation folder that cannot be removed', () => {
  it.runIf(process.platform === 'linux')('keeps the stored evidence\'s result and exit code, with a warning naming the folder', async () => {
    const dir = await tempDir();
    const tmp = await tempDir();
    if (root && !(await immutableFiles(tmp))) return; // root removes anything else
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);

    const stubborn = root ? 'touch f && chattr +i f' : 'chmod 500 ..';
    const run = await aip(['run', '--', 'sh', '-c', stubborn], { cwd: dir, env: { TMPDIR: tmp } });
    const leftovers = (await readdir(tmp)).filter((name) => name.startsWith('aip-run-'));
    // Undo what the command did, so the temp folders can go.
    await chmod(tmp, 0o700);
    if (root) for (const name of leftovers) execFileSync('chattr', ['-i', join(tmp, name, 'f')]);

    expect(run.stderr).not.toMatch(/aip: io:/);
    expect(run.code).toBe(0);
    expect(run.text).toMatch(/^evidence [0-9a-f]{64}\nresult pass \(termination exited, exit 0, workspace /);
    expect(leftovers).toHaveLength(1);
    expect(run.stderr).toContain(`aip: warning: the evaluation folder is left behind: cannot remove ${join(tmp, leftovers[0]!)}: `);
  });
});

describe('aip run: removing the evaluation folder follows no link the command left', () => {
  // As root, `chattr +i` makes an unlink fail with EPERM, on which Node's `rm`
  // read through the link and removed what it points to; otherwise a parent
  // made read-only sent the removal to its fallback, which chmod'ed through
  // a link in place of the folder.
  const stuck = root ? 'chattr +i' : 'chmod 500';
  const unstuck = async (path: string): Promise<void> => {
    if (root) execFileSync('chattr', ['-i', path]);
    else await chmod(path, 0o700);
  };
  const cases = [
    { name: 'a link inside the folder', command: `ln -s "$VICTIM" link && ${stuck} .`, stuckPath: (run: string) => run },
    { name: 'a link in place of the folder', command: `d=$PWD && cd / && mv "$d" "$d.moved" && ln -s "$VICTIM" "$d" && ${stuck} "$TMPDIR"`, stuckPath: (_run: string, tmp: string) => tmp },
  ];
  for (const { name, command, stuckPath } of cases) {
    it.runIf(process.platform === 'linux')(`leaves what ${name} points to as it was`, async () => {
      const dir = await tempDir();
      const tmp = await tempDir();
      if (root && !(await immutableFiles(tmp))) return;
      const victim = await tempDir();
      await writeFile(join(victim, 'precious'), 'keep me\n');
      await mkdir(join(victim, 'sub'));
      await chmod(join(victim, 'sub'), 0o755);
      expect((await aip(['init'], { cwd: dir })).code).toBe(0);

      const run = await aip(['run', '--', 'sh', '-c', command], { cwd: dir, env: { TMPDIR: tmp, VICTIM: victim } });
      const leftovers = (await readdir(tmp)).filter((entry) => entry.startsWith('aip-run-') && !entry.endsWith('.moved'));
      await unstuck(stuckPath(join(tmp, leftovers[0] ?? ''), tmp));

      expect(run.code).toBe(0);
      expect(await readdir(victim)).toEqual(['precious', 'sub']);
      expect(await readFile(join(victim, 'precious'), 'utf8')).toBe('keep me\n');
      expect((await stat(join(victim, 'sub'))).mode & 0o777).toBe(0o755);
    });
  }
});

describe('aip run: an evaluation folder nested deeper than a path reaches', () => {
  it.runIf(process.platform === 'linux')('is removed all the same (rm failed with ENAMETOOLONG and left it behind)', async () => {
    const dir = await tempDir();
    const tmp = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    // 30 folders of 200-byte names: a 6000-byte path, beyond Linux's 4096.
    const nest = "const fs = require('node:fs'); for (let i = 0; i < 30; i++) { fs.mkdirSync('d'.repeat(200)); process.chdir('d'.repeat(200)); } fs.writeFileSync('f', 'x');";
    const run = await aip(['run', '--', process.execPath, '-e', nest], { cwd: dir, env: { TMPDIR: tmp } });

    expect(run.stderr).not.toContain('left behind');
    expect(run.code).toBe(4); // the inspection cannot read that deep: workspace unknown
    expect(await readdir(tmp)).toEqual([]);
  });
});

describe('aip run: a folder the command mounted inside its evaluation folder', () => {
  it.runIf(process.platform === 'linux' && root)('is left mounted with what it holds, and named in the warning', async () => {
    const dir = await tempDir();
    const tmp = await tempDir();
    const victim = await tempDir();
    await writeFile(join(victim, 'precious'), 'keep me\n');
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);

    const run = await aip(['--format', 'json', 'run', '--', 'sh', '-c', 'mkdir m && mount --bind "$VICTIM" m'], { cwd: dir, env: { TMPDIR: tmp, VICTIM: victim } });
    const mounted = (JSON.parse(run.text) as { data: { exit_code: number | null } }).data.exit_code === 0;
    const leftovers = (await readdir(tmp)).filter((entry) => entry.startsWith('aip-run-'));
    if (mounted) for (const name of leftovers) execFileSync('umount', [join(tmp, name, 'm')]);
    if (!mounted) return; // no permission to mount here

    expect(await readdir(victim)).toEqual(['precious']);
    expect(run.stderr).toContain(`aip: warning: the evaluation folder is left behind: cannot remove ${join(tmp, leftovers[0]!)}: ${join(tmp, leftovers[0]!, 'm')} is a mount point`);
  });
});
