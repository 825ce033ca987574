// makeFolders is `mkdir -p` made one level at a time: Node 20's recursive
// mkdir never settles (and spins a core) where mkdir answers ENOENT under a
// folder that exists, as procfs does; aigpt and aip then hung for good when
// a configured path or `--repo` pointed there.

import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeFolders } from '../../src/common/make-folders.js';
import { aigptBin } from '../aigpt/support.js';
import { AIP_BIN } from '../aip/support/cli.js';
import { runGuarded } from '../support/bins.js';

const work = mkdtempSync(join(tmpdir(), 'make-folders-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('makeFolders', () => {
  it('makes every missing level and answers the first it made, or undefined when the folder was there', async () => {
    const deep = join(work, 'a', 'b', 'c');
    expect(await makeFolders(deep)).toBe(join(work, 'a'));
    expect(existsSync(deep)).toBe(true);
    expect(await makeFolders(deep)).toBeUndefined();
    expect(await makeFolders(join(work, 'a', 'b', 'd'))).toBe(join(work, 'a', 'b', 'd'));
  });

  it('follows a symlink to a folder, and refuses a file with the system error mkdir gives', async () => {
    mkdirSync(join(work, 'real'));
    symlinkSync(join(work, 'real'), join(work, 'link'));
    expect(await makeFolders(join(work, 'link', 'x'))).toBe(join(work, 'link', 'x'));
    expect(existsSync(join(work, 'real', 'x'))).toBe(true);
    writeFileSync(join(work, 'file'), 'not a folder');
    await expect(makeFolders(join(work, 'file'))).rejects.toMatchObject({ code: 'EEXIST' });
    await expect(makeFolders(join(work, 'file', 'x'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  it('lets calls racing for one path all succeed, a level another made meanwhile counting as made', async () => {
    const deep = join(work, 'race', 'b', 'c');
    const made = await Promise.all(Array.from({ length: 8 }, () => makeFolders(deep)));
    expect(existsSync(deep)).toBe(true);
    expect(made.every((first) => first === undefined || first.startsWith(join(work, 'race')))).toBe(true);
  });

  it.runIf(existsSync('/proc/self'))('settles with ENOENT under /proc', async () => {
    await expect(makeFolders('/proc/self/aipcs-no-such-folder/x')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it.runIf(existsSync('/proc/self'))('lets aigpt and aip fail with a message, not hang, on a path under /proc', async () => {
    const home = join(work, 'home');
    mkdirSync(join(home, '.config', 'ai.syui.gpt'), { recursive: true });
    writeFileSync(join(home, '.config', 'ai.syui.gpt', 'config.json'), JSON.stringify({ bot: { path: '/proc/self' } }));
    const aigpt = await runGuarded(aigptBin(), ['read-memory'], { cwd: work, env: { PATH: process.env['PATH'] ?? '', HOME: home }, timeoutMs: 20_000 });
    expect(aigpt.signal).toBeNull();
    expect(aigpt.code).toBe(1);
    expect(aigpt.stderr).toMatch(/^aigpt: Failed to create \/proc\/self\/\S+: ENOENT: no such file or directory\n$/);
    const aip = await runGuarded(AIP_BIN, ['init', '/proc/aipcs-no-such-folder/repo'], { cwd: work, timeoutMs: 20_000 });
    expect(aip.signal).toBeNull();
    expect(aip.code).toBe(6);
    expect(aip.stderr).toBe('aip: io: ENOENT /proc/aipcs-no-such-folder (no such file or directory)\n');
  });
});
