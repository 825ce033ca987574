// `aip export -o FILE` replaces only a regular file (written beside it and
// renamed over it, D28); a path that is not one is written in place and left
// as it is: a FIFO stays a FIFO and its reader gets the bundle, a link that
// names nothing yet stays a link and the file it names is created. Only the
// failure case was checked, so a successful export that renamed a regular
// file over such a path went unnoticed.
import { execFile, spawn } from 'node:child_process';
import { lstat, readFile, readlink, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const execFileAsync = promisify(execFile);

async function initialized(): Promise<string> {
  const dir = await tempDir();
  expect((await aip(['init'], { cwd: dir })).code).toBe(0);
  return dir;
}

describe('aip export -o onto a path that is not a regular file', () => {
  it('a link to nothing yet stays a link, and the file it names gets the bundle', async () => {
    const dir = await initialized();
    const bundle = (await aip(['export'], { cwd: dir })).stdout;
    await symlink('target.aipb', join(dir, 'out.aipb'));
    const exported = await aip(['export', '-o', 'out.aipb'], { cwd: dir });
    expect([exported.code, exported.stderr]).toEqual([0, 'exported 1 objects\n']);
    expect((await lstat(join(dir, 'out.aipb'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(dir, 'out.aipb'))).toBe('target.aipb');
    expect((await readFile(join(dir, 'target.aipb'))).equals(bundle)).toBe(true);
  });

  it('a FIFO stays a FIFO and its reader gets the bundle', async () => {
    const dir = await initialized();
    const bundle = (await aip(['export'], { cwd: dir })).stdout;
    const fifo = join(dir, 'pipe');
    await execFileAsync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    reader.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closed = new Promise<void>((settle) => reader.on('close', () => settle()));
    try {
      const exported = await aip(['export', '-o', fifo], { cwd: dir });
      expect([exported.code, exported.stderr]).toEqual([0, 'exported 1 objects\n']);
      expect((await lstat(fifo)).isFIFO()).toBe(true);
      await closed;
      expect(Buffer.concat(chunks).equals(bundle)).toBe(true);
    } finally {
      reader.kill('SIGKILL'); // a reader left waiting on a FIFO nobody opened
    }
  });
});
