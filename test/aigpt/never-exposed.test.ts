// What aigpt must never do with a damaged memory folder or config:
// hang (a FIFO where the compress journal or the lock file belongs blocked
// every writer and the server's start forever), wedge (a folder with a temp
// file's name failed every write with the file system's own text), or echo
// Node's internal refusal of a NUL in bot.path. Real files, the built CLI.

import { spawnSync } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkfifo, runGuarded, type GuardedRun } from '../support/bins.js';
import { aigptBin, makeTempHome, runAigpt, type TempHome } from './support.js';

let home: TempHome;
let memoryDir: string;

beforeEach(async () => {
  home = makeTempHome();
  memoryDir = join(home.appDir, 'self', 'ai.syui.gpt.memory');
  expect((await runAigpt([], home.childEnv)).code).toBe(0);
});

afterEach(() => home.cleanup());

/** The built CLI in a temp home; see runGuarded for why it is guarded. */
function runAigptGuarded(args: readonly string[]): Promise<GuardedRun> {
  return runGuarded(aigptBin(), args, { cwd: tmpdir(), env: home.childEnv });
}

const internals = /\n\s+at |node:internal|ERR_[A-Z_]+|TypeError|Path is a directory/;

describe('aigpt never hangs on a FIFO where its own metadata files belong', () => {
  it('a FIFO named .compress-journal fails save-memory and the server start with a bounded message', async () => {
    const journal = join(memoryDir, '.compress-journal');
    mkfifo(journal);
    const save = await runAigptGuarded(['save-memory', 'kept']);
    expect(save.signal).toBeNull();
    expect(save.code).toBe(1);
    expect(save.stderr).toBe(`aigpt: Failed to read ${journal}: not a regular file\n`);
    const server = await runAigptGuarded(['server']);
    expect(server.signal).toBeNull();
    expect(server.code).toBe(1);
    expect(server.stdout).toBe('');
    expect(server.stderr).not.toMatch(internals);
    // Reads do not need the journal and still work.
    expect((await runAigptGuarded(['read-memory'])).code).toBe(0);
  });

  it('a FIFO named .lock fails save-memory at once instead of blocking every writer', async () => {
    mkfifo(join(memoryDir, '.lock'));
    const save = await runAigptGuarded(['save-memory', 'kept']);
    expect(save.signal).toBeNull();
    expect(save.code).toBe(1);
    expect(save.stderr).toBe(`aigpt: Failed to write ${memoryDir}: not a regular file\n`);
    await fs.rm(join(memoryDir, '.lock'));
    expect((await runAigptGuarded(['save-memory', 'kept'])).code).toBe(0);
  });
});

describe('aigpt keeps writing beside a folder that has a temp file name', () => {
  it('recovery leaves the folder alone (spec 7.5 unlinks temp files) and the save succeeds', async () => {
    const stray = join(memoryDir, '.3aaaaaaaaaaa2.json.tmp-1-2');
    await fs.mkdir(stray);
    const save = await runAigptGuarded(['save-memory', 'kept']);
    expect(save.stderr).not.toMatch(internals);
    expect(save.code).toBe(0);
    expect(save.stdout).toBe('Saved. (1 records)\n');
    expect(existsSync(stray)).toBe(true);
  });
});

/** Whether this file system lets `chattr +i` make a file unremovable, even by root (ext4 does; tmpfs and overlays may not). */
function immutableFilesWork(): boolean {
  const probe = join(tmpdir(), `aigpt-immutable-probe-${process.pid}`);
  try {
    spawnSync('touch', [probe]);
    if (spawnSync('chattr', ['+i', probe]).status !== 0) return false;
    return spawnSync('rm', ['-f', probe]).status !== 0;
  } finally {
    spawnSync('chattr', ['-i', probe]);
    spawnSync('rm', ['-f', probe]);
  }
}

describe('aigpt beside a temp file it cannot remove', () => {
  it.skipIf(!immutableFilesWork())('fails the save with a bounded message instead of taking EPERM for a folder (Linux)', async () => {
    const stray = join(memoryDir, '.3aaaaaaaaaaa2.json.tmp-1-2');
    await fs.writeFile(stray, 'half');
    expect(spawnSync('chattr', ['+i', stray]).status).toBe(0);
    try {
      const save = await runAigptGuarded(['save-memory', 'kept']);
      expect(save.code).toBe(1);
      expect(save.stderr).not.toMatch(internals);
      expect(save.stderr).toContain('EPERM');
      expect(existsSync(stray)).toBe(true);
    } finally {
      spawnSync('chattr', ['-i', stray]);
    }
  });
});

describe('aigpt config with a NUL in bot.path', () => {
  it('is an invalid config naming the field, with no NUL byte or Node refusal echoed', async () => {
    await fs.writeFile(home.configFile, '{"bot":{"path":"/tmp/a\\u0000b"}}');
    const status = await runAigptGuarded([]);
    expect(status.code).toBe(1);
    expect(status.stderr).toBe(`aigpt: invalid config ${home.configFile}: bot.path holds a NUL character\n`);
  });
});
