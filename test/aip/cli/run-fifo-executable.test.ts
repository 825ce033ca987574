// Spec 8 steps 2-3: `aip run -- /path/to/fifo` (a named pipe with execute
// permission) must end as a start_error like any file that cannot be
// executed. The check that looks at a file's first bytes before spawning
// (D14) opened it for reading without O_NONBLOCK, so on a FIFO it waited for
// a writer for ever: nothing ran, `--timeout` (which bounds the command) did
// not apply, and Ctrl-C was handled but could not end the wait; only kill -9
// stopped aip.
import { spawn, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AIP_BIN, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

/** Runs aip, killing it after `guardMs` so that a hang fails the test instead of stalling it. */
function aipGuarded(args: string[], cwd: string, guardMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((settle, reject) => {
    const child = spawn(process.execPath, [AIP_BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.resume();
    const guard = setTimeout(() => child.kill('SIGKILL'), guardMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      settle({ code, signal, stdout: Buffer.concat(out).toString('utf8') });
    });
  });
}

describe('aip run of a named pipe', () => {
  it.runIf(process.platform === 'linux')('is a stored start_error instead of waiting for ever for a writer', async () => {
    const dir = await tempDir();
    const other = await tempDir();
    execFileSync(process.execPath, [AIP_BIN, 'init'], { cwd: dir });
    const fifo = join(other, 'pipe');
    execFileSync('mkfifo', ['-m', '755', fifo]);

    const run = await aipGuarded(['--format', 'json', 'run', '--timeout', '5s', '--', fifo], dir, 15_000);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(4);
    const evidence = JSON.parse(run.stdout) as { data: Record<string, unknown> };
    expect(evidence.data).toMatchObject({ termination: 'start_error', executable: fifo, error: `spawn ${fifo} EACCES`, result: 'unknown' });
  });
});
