// Spec 8 step 11: store the captures and the evidence, then remove the
// evaluation folder. When the command left something that cannot be removed
// (an immutable file; for a user who is not root, a parent folder it made
// read-only), the removal failed after the evidence was stored, and `aip run`
// ended with `aip: io: ...` (exit 6) instead of the evidence's ID and result:
// the outcome of a command that ran and was recorded looked like a failure to
// run it. Now the result stands and a warning names the leftover folder.
import { execFileSync } from 'node:child_process';
import { chmod, readdir, writeFile } from 'node:fs/promises';
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
