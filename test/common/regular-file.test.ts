// Metadata files read by aigpt and aip (locks, journals, HEAD, config,
// index files) are bounded before they are read: a file filled by someone
// else is refused by its size instead of being loaded whole.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileTooLargeError, NotRegularFileError, readRegularFile } from '../../src/common/regular-file.js';
import { builtBin, mkfifo, runGuarded } from '../support/bins.js';

const work = mkdtempSync(join(tmpdir(), 'regular-file-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('readRegularFile', () => {
  it('reads a file of exactly the bound, and refuses one byte more by its size', async () => {
    const path = join(work, 'at-bound');
    writeFileSync(path, Buffer.alloc(5000, 0x61));
    expect((await readRegularFile(path, 5000)).equals(Buffer.alloc(5000, 0x61))).toBe(true);
    writeFileSync(path, Buffer.alloc(5001, 0x61));
    const refusal = await readRegularFile(path, 5000).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(FileTooLargeError);
    expect(refusal).toMatchObject({ code: 'EFBIG', path, maxBytes: 5000 });
  });

  it('reads an empty file, and keeps the other refusals', async () => {
    writeFileSync(join(work, 'empty'), '');
    expect((await readRegularFile(join(work, 'empty'), 10)).length).toBe(0);
    mkdirSync(join(work, 'folder'));
    await expect(readRegularFile(join(work, 'folder'), 10)).rejects.toMatchObject({ code: 'EISDIR' });
    mkfifo(join(work, 'fifo'));
    await expect(readRegularFile(join(work, 'fifo'), 10)).rejects.toBeInstanceOf(NotRegularFileError);
  });
});

describe('the bins refuse oversized metadata files', () => {
  it('aip: a .aip/config.json of over 1 MiB is repo.config, not parsed', async () => {
    const root = join(work, 'aip-project');
    mkdirSync(root);
    const aip = builtBin('aip/cli/main.js');
    expect((await runGuarded(aip, ['init'], { cwd: root })).code).toBe(0);
    // Valid JSON whose padding makes it larger than any config aip writes.
    writeFileSync(join(root, '.aip', 'config.json'), `{"format":"aip-repository","version":1${' '.repeat(1_100_000)}}`);
    const status = await runGuarded(aip, ['status', '--format', 'json'], { cwd: root });
    expect(status.code).toBe(6);
    expect(JSON.parse(status.stdout)).toEqual({ error: { code: 'repo.config', message: 'cannot read .aip/config.json: larger than 1048576 bytes' } });
  });

  it('aigpt: a lock file of over 64 KiB fails the write at once, naming the file', async () => {
    const home = join(work, 'aigpt-home');
    mkdirSync(home);
    const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config') };
    const aigpt = builtBin('aigpt/cli/main.js');
    expect((await runGuarded(aigpt, ['save-memory', 'first'], { cwd: home, env })).code).toBe(0);
    const lock = join(home, '.config', 'ai.syui.gpt', 'self', 'ai.syui.gpt.memory', '.lock');
    writeFileSync(lock, 'x'.repeat(100_000));
    // Before the bound, the garbage lock was read whole and waited on for the lock timeout (10 s).
    const second = await runGuarded(aigpt, ['save-memory', 'second'], { cwd: home, env, timeoutMs: 8000 });
    expect(second.signal).toBeNull();
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`${lock} is larger than 65536 bytes`);
  });
});
