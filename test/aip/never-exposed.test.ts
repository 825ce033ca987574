// What aip must never do with a damaged .aip folder: hang. A FIFO
// where config.json, HEAD, the lock or a reverse-index file belongs blocked
// every command that read it, forever; now each is an I/O error (or, for the
// index, a finding of `verify --all`) with a bounded message. Real
// repositories in temp folders, the built CLI.

import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkfifo, runGuarded, type GuardedRun } from '../support/bins.js';
import { AIP_BIN, requireBuiltBin } from './support/cli.js';
import { tempDir, writeTree } from './support/temp.js';

/** The built CLI on the repository at `root`; see runGuarded for why it is guarded. */
function aipGuarded(root: string, args: readonly string[]): Promise<GuardedRun> {
  return runGuarded(AIP_BIN, ['--repo', root, ...args], { cwd: root });
}

const internals = /\n\s+at |node:internal|ERR_[A-Z_]+|TypeError/;

beforeAll(() => requireBuiltBin());

let root: string;

beforeEach(async () => {
  root = await tempDir('aip-');
  expect((await aipGuarded(root, ['init', root])).code).toBe(0);
  await writeTree(root, { 'a.txt': 'hello\n' });
  expect((await aipGuarded(root, ['snapshot', '--title', 't', '--goal', 'g'])).code).toBe(0);
});

describe('aip never hangs on a FIFO in its .aip folder', () => {
  it('config.json: every command is a repo.config error (exit 6)', async () => {
    await rm(join(root, '.aip', 'config.json'));
    mkfifo(join(root, '.aip', 'config.json'));
    for (const args of [['status'], ['log'], ['verify', '--all']]) {
      const run = await aipGuarded(root, args);
      expect(run.signal).toBeNull();
      expect(run.code).toBe(6);
      expect(run.stderr).toBe('aip: repo.config: cannot read .aip/config.json: not a regular file\n');
    }
  });

  it('HEAD: commands that read it are io errors (exit 6); the others still work', async () => {
    await rm(join(root, '.aip', 'HEAD'));
    mkfifo(join(root, '.aip', 'HEAD'));
    for (const args of [['log'], ['head'], ['status']]) {
      const run = await aipGuarded(root, args);
      expect(run.signal).toBeNull();
      expect(run.code).toBe(6);
      expect(run.stderr).toBe('aip: io: cannot read .aip/HEAD: not a regular file\n');
    }
    expect((await aipGuarded(root, ['intent', '--title', 'a', '--goal', 'b'])).code).toBe(0);
  });

  it('the lock: a writer fails at once with an io error naming it', async () => {
    const lock = join(root, '.aip', 'lock');
    mkfifo(lock);
    await writeTree(root, { 'b.txt': 'more\n' });
    const run = await aipGuarded(root, ['snapshot', '--title', 't', '--goal', 'g']);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(6);
    expect(run.stderr).toBe('aip: io: cannot read .aip/lock: not a regular file (remove it if no aip process is running)\n');
    expect(run.stderr).not.toMatch(internals);
  });

  it('a reverse-index file: verify --all reports the missing lines instead of blocking', async () => {
    const refs = join(root, '.aip', 'index', 'v1', 'refs');
    const fanout = (await readdir(refs)).sort()[0]!;
    const name = (await readdir(join(refs, fanout))).sort()[0]!;
    await rm(join(refs, fanout, name));
    mkfifo(join(refs, fanout, name));
    const run = await aipGuarded(root, ['verify', '--all']);
    expect(run.signal).toBeNull();
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^invalid [0-9a-f]{64} store\.index: .*the reverse index lacks/m);
    expect(run.stderr).not.toMatch(internals);
  });
});
