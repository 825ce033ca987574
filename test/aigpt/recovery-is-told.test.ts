// What a writer's recovery removed is told on stderr (spec 7.5), also when
// the write itself then fails, and `aigpt setup`, which initialises like
// every writer (spec 4.6 step 2), recovers like one. (mutation review K)

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

const OLD = new Date('2020-01-01T00:00:00Z');
const STALE_CONFIG_TEMP = '.config.json.tmp-4242-abcdefabcdef';
const STALE_CORE_TEMP = '.self.json.tmp-4242-0123456789ab';

describe('recovery reports of aigpt writers', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  async function plant(dir: string, name: string): Promise<void> {
    await fs.writeFile(join(dir, name), '{"half');
    await fs.utimes(join(dir, name), OLD, OLD);
  }

  it('a save refused for its content still tells the leftover temp file its recovery removed from the config folder', async () => {
    await writeConfig(home, { path: join(home.root, 'c') });
    expect((await runAigpt([], home.childEnv)).code).toBe(0);
    await plant(home.appDir, STALE_CONFIG_TEMP);
    const big = await runAigpt(['save-memory', 'x'.repeat(16 * 1024 + 1)], home.childEnv);
    expect(big.code).toBe(1);
    expect(big.stdout).toBe('');
    expect(big.stderr).toBe('aigpt: removed 1 leftover temporary file(s) of interrupted writes\naigpt: content exceeds 16384 bytes\n');
    expect(await fs.readdir(home.appDir)).not.toContain(STALE_CONFIG_TEMP);
  });

  it('setup removes the leftover temp files of interrupted writes, as every writer does, and says so', async () => {
    await writeConfig(home, { path: join(home.root, 'c') });
    expect((await runAigpt([], home.childEnv)).code).toBe(0);
    const coreDir = join(home.root, 'c', 'self', 'ai.syui.gpt.core');
    await plant(home.appDir, STALE_CONFIG_TEMP);
    await plant(coreDir, STALE_CORE_TEMP);
    // The site config names the same data folder, so the core folder above is the one setup initialises.
    const siteDir = join(home.configHome, 'ai.syui.log');
    await fs.mkdir(siteDir, { recursive: true });
    await fs.writeFile(join(siteDir, 'config.json'), JSON.stringify({ bot: { path: join(home.root, 'c') } }));
    const emptyBin = join(home.root, 'empty-bin');
    await fs.mkdir(emptyBin);
    const result = await runAigpt(['setup'], { ...home.childEnv, PATH: emptyBin });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('aigpt: removed 2 leftover temporary file(s) of interrupted writes\n');
    expect(await fs.readdir(coreDir)).toEqual(['self.json']);
    expect((await fs.readdir(home.appDir)).filter((name) => name.startsWith('.'))).toEqual([]);
  });
});
