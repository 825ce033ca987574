// D27: a write error on aip's stdout other than a closed pipe is an `io`
// error (exit 6) naming it. With `aip run --tee`, the live copy met the error
// first (a full disk: ENOSPC); that write has no caller to tell, and it left
// the stdout wrapper destroyed, so the result line then failed with Node's
// ERR_STREAM_DESTROYED, reported as `aip: internal: internal error`: the
// cause was lost. The line's write now reports the error that broke the
// stream. The evidence is stored either way. Help text is output too: it
// exited 0 on a full disk with nothing written. The message names the stream
// that failed: a bare `aip: io: ENOSPC` did not say what could not be written.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { AIP_BIN, aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

/** aip with its stdout on /dev/full (every write fails with ENOSPC). */
async function aipOnFullDisk(args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  const full = await open('/dev/full', 'w');
  try {
    return await new Promise((settle, reject) => {
      const child = spawn(process.execPath, [AIP_BIN, ...args], { cwd, stdio: ['ignore', full.fd, 'pipe'] });
      const err: Buffer[] = [];
      child.stderr?.on('data', (c: Buffer) => err.push(c));
      child.on('error', reject);
      child.on('close', (code) => settle({ code, stderr: Buffer.concat(err).toString('utf8') }));
    });
  } finally {
    await full.close();
  }
}

describe('aip run --tee with stdout on a full disk', () => {
  it.runIf(existsSync('/dev/full'))('is an io error naming stdout and ENOSPC, not an internal error, and the evidence is stored', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);

    const run = await aipOnFullDisk(['run', '--tee', '--', 'echo', 'hi'], dir);
    expect(run.stderr).toBe('aip: io: cannot write to stdout: ENOSPC\n');
    expect(run.code).toBe(6);

    const log = await aip(['log'], { cwd: dir });
    expect(log.text).toMatch(/\n {2}evidence [0-9a-f]{64} command pass \(executed\)\n$/);
  });
});

describe('help text with stdout on a full disk', () => {
  it.runIf(existsSync('/dev/full'))('is an io error naming stdout and ENOSPC, as every other output aip cannot write', async () => {
    const dir = await tempDir();
    for (const args of [['--help'], ['help', 'init'], ['log', '--help']]) {
      const help = await aipOnFullDisk(args, dir);
      expect(help.stderr, args.join(' ')).toBe('aip: io: cannot write to stdout: ENOSPC\n');
      expect(help.code, args.join(' ')).toBe(6);
    }
  });
});

describe('command output with stdout on a full disk', () => {
  it.runIf(existsSync('/dev/full'))('says which stream could not be written, with the system code', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    for (const args of [['head'], ['export'], ['--format', 'json', 'log']]) {
      const out = await aipOnFullDisk(args, dir);
      expect(out.stderr, args.join(' ')).toBe('aip: io: cannot write to stdout: ENOSPC\n');
      expect(out.code, args.join(' ')).toBe(6);
    }
  });
});
