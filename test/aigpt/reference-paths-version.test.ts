// Checked against the Rust reference's source (syui/aigpt): what a user
// or script of the reference observes and what we did differently. The
// version output, `..` in configured paths (the reference hands paths to the
// kernel unnormalised), and `~` without any home folder.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Environment, expandPath, loadConfig } from '../../src/aigpt/config/config.js';
import { AIGPT_VERSION } from '../../src/aigpt/core/limits.js';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

describe('aigpt against the reference source', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('prints the bare version, as the reference prints CARGO_PKG_VERSION', async () => {
    for (const args of [['v'], ['-v'], ['--version'], ['-v', 'server']]) {
      const result = await runAigpt(args, home.childEnv);
      expect(result, args.join(' ')).toEqual({ code: 0, stdout: `${AIGPT_VERSION}\n`, stderr: '' });
    }
  });

  it('-v before a subcommand wins only when the whole command line parses, as with the reference (clap)', async () => {
    for (const args of [['-v', 'foo'], ['--version', 'extra'], ['-v', 'save-memory'], ['-v', 'server', 'extra']]) {
      const result = await runAigpt(args, home.childEnv);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout, args.join(' ')).toBe('');
    }
    for (const args of [['-v', 'save-memory', 'x'], ['-v', 'read-core'], ['-v', 'setup']]) {
      expect(await runAigpt(args, home.childEnv), args.join(' ')).toEqual({ code: 0, stdout: `${AIGPT_VERSION}\n`, stderr: '' });
    }
    // The version wins: nothing was saved, set up or even initialised.
    await expect(fs.stat(home.configHome)).rejects.toThrow();
  });

  /** `{root}/link` -> `{root}/real/inner`: `link/..` is `real` for the kernel, `root` by name. */
  async function linkIntoReal(): Promise<void> {
    await fs.mkdir(join(home.root, 'real', 'inner'), { recursive: true });
    await fs.symlink(join(home.root, 'real', 'inner'), join(home.root, 'link'));
  }

  it('an absolute bot.path with `..` after a symlink names the folder the kernel (and the reference) reaches', async () => {
    await linkIntoReal();
    const configured = `${home.root}/link/../content`;
    await writeConfig(home, { did: 'did:plc:xxx', path: configured });
    const saved = await runAigpt(['save-memory', 'hello'], home.childEnv);
    expect(saved).toMatchObject({ code: 0, stdout: 'Saved. (1 records)\n' });
    const memoryDir = join(home.root, 'real', 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    expect(await fs.readdir(memoryDir)).toHaveLength(1);
    await expect(fs.stat(join(home.root, 'content'))).rejects.toThrow();
    // The status prints the path as configured, like the reference.
    const status = await runAigpt([], home.childEnv);
    expect(status.stdout.split('\n')[7]).toBe(`path: ${configured}/`);
    expect(status.stdout).toContain('records: 1/100');
  });

  it('a relative bot.path with `..` after a symlink is taken from the working directory the same way', async () => {
    await linkIntoReal();
    await writeConfig(home, { path: 'link/../rel' });
    expect(await runAigpt(['save-memory', 'hello'], home.childEnv, { cwd: home.root })).toMatchObject({ code: 0 });
    expect(await fs.readdir(join(home.root, 'real', 'rel', 'self', 'ai.syui.gpt.memory'))).toHaveLength(1);
    await expect(fs.stat(join(home.root, 'rel'))).rejects.toThrow();
  });

  it('a bot.path whose `..` follows a file, a dangling link or a link loop fails as the kernel does, writing nothing beside it', async () => {
    await fs.writeFile(join(home.root, 'file'), '');
    await fs.symlink(join(home.root, 'nothing'), join(home.root, 'dangling'));
    await fs.symlink('loop-b', join(home.root, 'loop-a'));
    await fs.symlink('loop-a', join(home.root, 'loop-b'));
    for (const [step, cause] of [['file', 'ENOTDIR'], ['dangling', 'E'], ['loop-a', 'ELOOP']] as const) {
      await writeConfig(home, { path: `${home.root}/${step}/../content` });
      const saved = await runAigpt(['save-memory', 'hello'], home.childEnv);
      expect(saved.code, step).toBe(1);
      expect(saved.stderr, step).toContain(`Failed to create ${home.root}/${step}/../content/self/ai.syui.gpt.core: ${cause}`);
      await expect(fs.stat(join(home.root, 'content')), step).rejects.toThrow();
    }
  });

  it('XDG_CONFIG_HOME with `..` after a symlink puts the config where the reference puts it, and prints it as written', async () => {
    await linkIntoReal();
    const spelling = `${home.root}/link/../xdg`;
    const env = { ...home.childEnv, XDG_CONFIG_HOME: spelling };
    const result = await runAigpt([], env);
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[2]).toBe(`config: ${spelling}/ai.syui.gpt/config.json`);
    expect(lines[7]).toBe(`path: ${spelling}/ai.syui.gpt/`);
    const configFile = join(home.root, 'real', 'xdg', 'ai.syui.gpt', 'config.json');
    expect(await fs.readFile(configFile, 'utf8')).toContain('"bot"');
    // The default data folder is the one beside the config, where the kernel takes `link/..`.
    expect(await fs.readdir(join(home.root, 'real', 'xdg', 'ai.syui.gpt', 'self'))).toContain('ai.syui.gpt.core');
    await expect(fs.stat(join(home.root, 'xdg'))).rejects.toThrow();
    const setup = await runAigpt(['setup'], { ...env, PATH: join(home.root, 'no-bin') });
    expect(setup.code).toBe(0);
    expect(setup.stdout).toContain(`ok backed up ${spelling}/ai.syui.gpt/config.json -> ${spelling}/ai.syui.gpt/config.json.bak-`);
    expect(setup.stdout).toContain(`ok ${spelling}/ai.syui.gpt/config.json -> ${spelling}/ai.syui.log/config.json\n`);
    expect((await fs.lstat(configFile)).isSymbolicLink()).toBe(true);
  });

  it('setup spells the backup like the config path beside it, keeping a `//` the user wrote', async () => {
    const spelling = `${home.root}//xdg`;
    const env = { ...home.childEnv, XDG_CONFIG_HOME: spelling };
    expect((await runAigpt([], env)).code).toBe(0);
    const setup = await runAigpt(['setup'], { ...env, PATH: join(home.root, 'no-bin') });
    expect(setup.code).toBe(0);
    expect(setup.stdout).toContain(`ok backed up ${spelling}/ai.syui.gpt/config.json -> ${spelling}/ai.syui.gpt/config.json.bak-`);
    const backups = (await fs.readdir(join(home.root, 'xdg', 'ai.syui.gpt'))).filter((name) => name.startsWith('config.json.bak-'));
    expect(backups).toHaveLength(1);
  });

  it('`~` with no home folder at all is the reference fallback `.`, never the root folder', async () => {
    const environment: Environment = { env: {}, platform: 'linux', homedir: () => '', cwd: () => home.root };
    expect(expandPath('~/data', '/default', environment)).toBe('./data');
    expect(expandPath('~', '/default', environment)).toBe('.');
    // End to end: the config (under XDG) names `~/data`; the tree lands in the working directory.
    await writeConfig(home, { path: '~/data' });
    const config = await loadConfig({ ...environment, env: { XDG_CONFIG_HOME: home.configHome } });
    expect(config.base).toBe('./data');
    expect(config.tree.memoryDir).toBe(join(home.root, 'data', 'self', 'ai.syui.gpt.memory'));
  });
});
