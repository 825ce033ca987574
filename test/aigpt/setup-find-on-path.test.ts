// findOnPath (spec 4.6: `claude` and `aigpt` are looked up on PATH) with an
// injected platform, so the Windows rules run here too: the `Path` spelling,
// `;` between entries, `{name}.exe`, and no executable bit to ask for.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Environment } from '../../src/aigpt/config/config.js';
import { findOnPath } from '../../src/aigpt/config/setup.js';
import { makeTempHome, type TempHome } from './support.js';

describe('findOnPath', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  const at = (platform: NodeJS.Platform, env: Record<string, string>): Environment => ({ env, platform, homedir: () => home.home, cwd: () => home.root });

  /** A file `dir/name`, with `mode`. */
  async function put(dir: string, name: string, mode: number): Promise<string> {
    await fs.mkdir(join(home.root, dir), { recursive: true });
    const path = join(home.root, dir, name);
    await fs.writeFile(path, '#!/bin/sh\nexit 0\n', { mode });
    return path;
  }

  it('Windows: reads `Path` when PATH is unset, splits it at `;` and takes the first `{name}.exe`, executable bit or not', async () => {
    await put('a', 'claude', 0o755);
    const exe = await put('b', 'claude.exe', 0o644);
    await put('c', 'claude.exe', 0o755);
    const path = ['a', 'b', 'c'].map((dir) => join(home.root, dir)).join(';');
    expect(await findOnPath('claude', at('win32', { Path: path }))).toBe(exe);
    expect(await findOnPath('claude', at('win32', { PATH: path }))).toBe(exe);
  });

  it('elsewhere: `Path` is another variable, `;` is part of a folder name and `.exe` is not added', async () => {
    await put('bin', 'claude', 0o755);
    expect(await findOnPath('claude', at('linux', { Path: join(home.root, 'bin') }))).toBeUndefined();
    await put('exe', 'claude.exe', 0o755);
    expect(await findOnPath('claude', at('linux', { PATH: join(home.root, 'exe') }))).toBeUndefined();
    const plain = await put('x;y', 'claude', 0o755);
    expect(await findOnPath('claude', at('linux', { PATH: join(home.root, 'x;y') }))).toBe(plain);
  });
});
