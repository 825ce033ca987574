// Spec 8 step 3: a spawn failure is a start_error with the resolved
// executable and the system error text, and the evidence is stored. Node
// reports only some failures (EACCES, ENOENT, EAGAIN, EMFILE, ENFILE) as an
// 'error' event and throws for the rest (ETXTBSY, E2BIG, ELOOP, ...); the
// throw escaped the runner, so `aip run` of a program still open for writing
// (a build writing it) ended with `aip: io: ETXTBSY`, exit 6, no evidence.
import { execFileSync } from 'node:child_process';
import { copyFile, chmod, open } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

describe('aip run of a program the kernel will not start just now', () => {
  it.runIf(process.platform === 'linux')('a program open for writing (ETXTBSY) is a stored start_error naming it, exit 4', async () => {
    const dir = await tempDir();
    const bin = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const program = join(bin, 'busy-program');
    await copyFile('/bin/true', program);
    await chmod(program, 0o755);
    const writer = await open(program, 'r+');
    try {
      try {
        execFileSync(program);
        return; // this kernel runs files open for writing: nothing to check
      } catch (error) {
        if ((error as { code?: string }).code !== 'ETXTBSY') throw error;
      }
      const run = await aip(['--format', 'json', 'run', '--', program], { cwd: dir });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(4);
      const evidence = JSON.parse(run.text) as { data: Record<string, unknown> };
      expect(evidence.data).toMatchObject({
        termination: 'start_error', executable: program, error: `spawn ${program} ETXTBSY`, exit_code: null, result: 'unknown', workspace: 'clean',
      });
    } finally {
      await writer.close();
    }
  });
});
