// Config location and loading cases a mutation review of config.ts found
// untested: each test here failed on a small wrong edit of the product.

import { promises as fs } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configBaseDir, type Environment, ensureConfigFile, expandPath, INITIAL_CONFIG_TEXT, loadConfig } from '../../src/aigpt/config/config.js';
import { AigptError } from '../../src/aigpt/core/errors.js';
import { makeTempHome, type TempHome, writeConfig } from './support.js';

describe('config location, reviewed', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  const at = (platform: NodeJS.Platform, vars: Record<string, string>): Environment => ({ env: vars, platform, homedir: () => '', cwd: () => home.root });

  it('Windows treats an empty APPDATA as unset (spec 2.1: "." when nothing is known)', () => {
    expect(configBaseDir(at('win32', { APPDATA: '' }))).toBe('.');
  });

  it('puts the first-run config where the kernel takes a `..` in HOME after a symlink, on Linux and macOS', async () => {
    // `{root}/link` -> `{root}/real/inner`: `link/..` is `real` for the kernel, `root` by name.
    await fs.mkdir(join(home.root, 'real', 'inner'), { recursive: true });
    await fs.symlink(join(home.root, 'real', 'inner'), join(home.root, 'link'));
    const linkHome = `${home.root}/link/..`;
    for (const [platform, base] of [['linux', ['.config']], ['darwin', ['Library', 'Application Support']]] as const) {
      const environment = at(platform, { HOME: linkHome });
      await ensureConfigFile(environment);
      expect(await fs.readFile(join(home.root, 'real', ...base, 'ai.syui.gpt', 'config.json'), 'utf8'), platform).toBe(INITIAL_CONFIG_TEXT);
      expect((await loadConfig(environment)).tree.identityDir, platform).toBe(join(home.root, 'real', ...base, 'ai.syui.gpt', 'self'));
    }
    expect((await fs.readdir(home.root)).sort()).toEqual(['link', 'real']);
  });

  it('takes every missing folder before a `..` in order, as mkdir -p creates them', async () => {
    const environment = at('linux', { XDG_CONFIG_HOME: `${home.root}/a/b/../cfg` });
    await ensureConfigFile(environment);
    expect(await fs.readFile(join(home.root, 'a', 'cfg', 'ai.syui.gpt', 'config.json'), 'utf8')).toBe(INITIAL_CONFIG_TEXT);
    expect((await fs.readdir(home.root)).sort()).toEqual(['a']);
  });

  it('joins ~/ to a home ending in / as PathBuf::join does, without a doubled slash', () => {
    expect(expandPath('~/x', '/d', at('linux', { HOME: '/' }))).toBe('/x');
    expect(expandPath('~/x', '/d', at('linux', { HOME: '/h/' }))).toBe('/h/x');
  });
});

describe('config loading, reviewed', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('names the target of a dangling config symlink', async () => {
    await fs.mkdir(home.appDir, { recursive: true });
    const target = join(home.root, 'site', 'config.json');
    await fs.symlink(target, home.configFile);
    await expect(ensureConfigFile(home.environment)).rejects.toThrow(`invalid config ${home.configFile}: dangling symlink to ${target}`);
  });

  it('reports a config path it cannot look at as a read failure, creating nothing', async () => {
    // The config folder is a file: looking for config.json in it fails with ENOTDIR, not "absent".
    await fs.mkdir(home.configHome, { recursive: true });
    await fs.writeFile(home.appDir, 'x');
    const error = await ensureConfigFile(home.environment).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AigptError);
    expect((error as AigptError).code).toBe('read_failed');
    expect((error as AigptError).message).toBe(`Failed to read ${home.configFile}: ENOTDIR: not a directory`);
    expect(await fs.readFile(home.appDir, 'utf8')).toBe('x');
  });

  it('refuses an empty DID method and handles that are no ATProto handle (spec 3.1)', async () => {
    const refused: [Record<string, string>, string][] = [
      [{ did: 'did::abc' }, 'bot.did is not a valid DID: "did::abc"'],
      [{ handle: 'localhost' }, 'bot.handle is not a valid handle: "localhost"'],
      // The last label (the TLD) may not start with a digit.
      [{ handle: 'ai.1com' }, 'bot.handle is not a valid handle: "ai.1com"'],
    ];
    for (const [bot, detail] of refused) {
      await writeConfig(home, bot);
      await expect(loadConfig(home.environment), detail).rejects.toThrow(`invalid config ${home.configFile}: ${detail}`);
    }
    await writeConfig(home, { did: 'did:web:a', handle: 'a.b1' });
    expect(await loadConfig(home.environment)).toMatchObject({ did: 'did:web:a', handle: 'a.b1' });
  });

  it('quotes a long value by characters, not UTF-16 units', async () => {
    await writeConfig(home, { handle: '\u{1F600}'.repeat(70) });
    await expect(loadConfig(home.environment)).rejects.toThrow(`bot.handle is not a valid handle: "${'\u{1F600}'.repeat(64)}"... (70 characters)`);
  });

  it('refuses a socket in place of the config file as no regular file', async () => {
    await fs.mkdir(home.appDir, { recursive: true });
    const server = createServer();
    await new Promise<void>((done) => server.listen(home.configFile, done));
    try {
      await expect(loadConfig(home.environment)).rejects.toThrow(`invalid config ${home.configFile}: not a regular file`);
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
  });
});
