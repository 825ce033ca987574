import { existsSync, promises as fs } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  configBaseDir,
  configFilePath,
  type Environment,
  ensureConfigFile,
  expandPath,
  INITIAL_CONFIG_TEXT,
  loadConfig,
  processEnvironment,
} from '../../src/aigpt/config/config.js';
import { AigptError } from '../../src/aigpt/core/errors.js';
import { makeTempHome, type TempHome, writeConfig } from './support.js';

const env = (platform: NodeJS.Platform, vars: Record<string, string | undefined>, home = '/users/db-home'): Environment => ({
  env: vars,
  platform,
  homedir: () => home,
  cwd: () => '/srv/project',
});

describe('config location (spec 2.1)', () => {
  it('Linux: absolute XDG_CONFIG_HOME, else $HOME/.config, else the user database home', () => {
    expect(configFilePath(env('linux', { XDG_CONFIG_HOME: '/x/cfg', HOME: '/h' }))).toBe('/x/cfg/ai.syui.gpt/config.json');
    expect(configFilePath(env('linux', { XDG_CONFIG_HOME: 'relative/cfg', HOME: '/h' }))).toBe('/h/.config/ai.syui.gpt/config.json');
    expect(configFilePath(env('linux', { HOME: '/h' }))).toBe('/h/.config/ai.syui.gpt/config.json');
    expect(configFilePath(env('linux', { HOME: '' }))).toBe('/users/db-home/.config/ai.syui.gpt/config.json');
  });

  it('macOS ignores XDG_CONFIG_HOME', () => {
    expect(configFilePath(env('darwin', { XDG_CONFIG_HOME: '/x/cfg', HOME: '/Users/u' }))).toBe(
      '/Users/u/Library/Application Support/ai.syui.gpt/config.json',
    );
  });

  it('Windows uses APPDATA, and "." when nothing is known', () => {
    expect(configBaseDir(env('win32', { APPDATA: 'C:\\Users\\u\\AppData\\Roaming' }))).toBe('C:\\Users\\u\\AppData\\Roaming');
    expect(configBaseDir(env('win32', {}))).toBe('.');
    expect(configBaseDir({ ...env('linux', {}), homedir: () => '' })).toBe('.');
  });
});

describe('the real process environment', () => {
  const saved = { HOME: process.env['HOME'], XDG_CONFIG_HOME: process.env['XDG_CONFIG_HOME'] };
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('treats an empty HOME as unset and takes the home folder from the user database (spec 2.1)', () => {
    // os.homedir() returns "" here, which would put the config under the working directory.
    process.env['HOME'] = '';
    delete process.env['XDG_CONFIG_HOME'];
    const environment = processEnvironment();
    expect(environment.homedir()).toBe(userInfo().homedir);
    expect(configFilePath(environment)).toBe(join(userInfo().homedir, '.config', 'ai.syui.gpt', 'config.json'));
  });
});

describe('path expansion (spec 2.3)', () => {
  const e = env('linux', { HOME: '/home/u' });
  it('expands ~/ and ~ only', () => {
    expect(expandPath('~/ai/log/public/content', '/d', e)).toBe('/home/u/ai/log/public/content');
    expect(expandPath('~', '/d', e)).toBe('/home/u');
    expect(expandPath('~/', '/d', e)).toBe('/home/u/');
    // Rust's PathBuf::join: an absolute rest replaces the home folder.
    expect(expandPath('~//srv/ai', '/d', e)).toBe('/srv/ai');
    expect(expandPath('~user/x', '/d', e)).toBe('~user/x');
    expect(expandPath('$HOME/x', '/d', e)).toBe('$HOME/x');
    expect(expandPath('rel/x', '/d', e)).toBe('rel/x');
    expect(expandPath('', '/d', e)).toBe('/d');
    expect(expandPath(undefined, '/d', e)).toBe('/d');
  });
});

describe('loading', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('creates the reference first-run file and then reads all defaults', async () => {
    await ensureConfigFile(home.environment);
    expect(await fs.readFile(home.configFile, 'utf8')).toBe('{\n  "bot": {\n    "did": null,\n    "handle": null,\n    "path": null\n  }\n}');
    expect(INITIAL_CONFIG_TEXT.endsWith('}')).toBe(true);
    const config = await loadConfig(home.environment);
    expect(config).toMatchObject({ did: 'self', handle: 'self', memory: 100n, identity: 'self', base: home.appDir, baseIsRelative: false });
    expect(config.tree.coreFile).toBe(join(home.appDir, 'self', 'ai.syui.gpt.core', 'self.json'));
    expect(config.tree.memoryDir).toBe(join(home.appDir, 'self', 'ai.syui.gpt.memory'));
  });

  it('never overwrites an existing config', async () => {
    await writeConfig(home, { did: 'did:plc:abc', memory: 5 });
    await ensureConfigFile(home.environment);
    const config = await loadConfig(home.environment);
    expect(config.did).toBe('did:plc:abc');
    expect(config.memory).toBe(5n);
  });

  it('reads the seed example, ignoring other members', async () => {
    await fs.mkdir(home.appDir, { recursive: true });
    await fs.writeFile(
      home.configFile,
      JSON.stringify({ title: 'site', bot: { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: '~/ai/log/public/content', memory: 100, extra: true } }),
    );
    const config = await loadConfig(home.environment);
    expect(config.base).toBe(`${home.home}/ai/log/public/content`);
    expect(config.tree.memoryDir).toBe(join(home.home, 'ai/log/public/content/did:plc:xxx/ai.syui.gpt.memory'));
    expect(config.handle).toBe('ai.syui.ai');
  });

  it('keeps relative paths relative to the working directory and flags them', async () => {
    await writeConfig(home, { path: 'data' });
    const config = await loadConfig(home.environment);
    expect(config.base).toBe('data');
    expect(config.baseIsRelative).toBe(true);
    expect(config.tree.identityDir).toBe(join(home.root, 'data', 'self'));
  });

  it('ignores repeats of members it does not read, as serde does', async () => {
    await writeConfig(home, '{"x":1,"x":2,"site":{"did":1,"did":2,"bot":3,"bot":4},"bot":{"extra":[{"did":1,"did":2}],"extra":0,"did":"did:plc:a"}}');
    expect((await loadConfig(home.environment)).did).toBe('did:plc:a');
    await writeConfig(home, '{"bot":{"did":"did:plc:\\u0061"}, "k\\"bot": {"bot":1, "bot":2}}');
    expect((await loadConfig(home.environment)).did).toBe('did:plc:a');
  });

  it('loads a config whose ignored members hold numbers beyond f64 or deep nesting, as serde skips them unread (spec 2.2)', async () => {
    const deep = `${'['.repeat(300)}${']'.repeat(300)}`;
    await writeConfig(home, `{"site":{"big":1e400,"n":${'9'.repeat(5000)},"deep":${deep}},"bot":{"memory":3,"x":1e400,"d":${deep}},"tail":[-1.5e-400,true,null,"\\u00e9"]}`);
    expect((await loadConfig(home.environment)).memory).toBe(3n);
    await writeConfig(home, `{"deep":${deep},"b\\u006ft":{"did":"did:plc:a"}}`);
    expect((await loadConfig(home.environment)).did).toBe('did:plc:a');
    // What aigpt reads is held to every rule, and the whole text must still be JSON.
    const refused: [string, string][] = [
      ['{"bot":{"memory":1e400},"x":1e400}', 'not valid JSON (The JSON document holds a number out of range.)'],
      [`{"bot":{"path":${deep}}}`, 'not valid JSON (The JSON document is nested too deeply.)'],
      [`{"bot":{"memory":3},"x":${deep},"y":tru}`, 'not valid JSON'],
      [`{"bot":{"memory":3},"x":${deep}`, 'not valid JSON'],
      [`[${deep}]`, 'not valid JSON'],
    ];
    for (const [text, detail] of refused) {
      await writeConfig(home, text);
      await expect(loadConfig(home.environment)).rejects.toThrow(`invalid config ${home.configFile}: ${detail}`);
    }
  });

  it('names where a syntax error is even when an ignored member before it holds a number beyond f64', async () => {
    const cases: [string, string][] = [
      ['{"other":1e999,"bot":{}}}', 'line 1, column 25'],
      ['{"other":1e999,\n "bot":{"memory":3}\n "x":1}', 'line 3, column 2'],
      ['{"other":1e999,"bot" {}}', 'line 1, column 22'],
      ['{"other":1e999,"bot":{"did":tru}}', 'line 1, column 29'],
      ['{"other":1e999,"bot":{}', 'line 1, column 24'],
      // Inside a string: the bad escape letter, the bad hex digit, the control, the end.
      ['{"other":1e999,"bot":{"did":"a\\qb"}}', 'line 1, column 32'],
      ['{"other":1e999,"bot":{"d\\u00g1":1}}', 'line 1, column 29'],
      ['{"other":1e999,"bot":{"did":"ab\tc"}}', 'line 1, column 32'],
      ['{"other":1e999,"bot":{"did":"abc', 'line 1, column 33'],
    ];
    for (const [text, where] of cases) {
      await writeConfig(home, text);
      await expect(loadConfig(home.environment)).rejects.toThrow(`invalid config ${home.configFile}: not valid JSON at ${where} (The JSON document is malformed.)`);
      // The same place as the parser names when nothing before the error is out of range.
      await writeConfig(home, text.replace('1e999', '1e299'));
      await expect(loadConfig(home.environment)).rejects.toThrow(`not valid JSON at ${where} (The JSON document is malformed.)`);
    }
  });

  it('accepts the full u64 range for memory and null/absent bot', async () => {
    await writeConfig(home, { memory: 0 });
    expect((await loadConfig(home.environment)).memory).toBe(0n);
    await writeConfig(home, '{"bot":{"memory":18446744073709551615}}');
    expect((await loadConfig(home.environment)).memory).toBe(18446744073709551615n);
    await writeConfig(home, '{"bot":null}');
    expect((await loadConfig(home.environment)).memory).toBe(100n);
    await writeConfig(home, '{}');
    expect((await loadConfig(home.environment)).did).toBe('self');
    // A site config's own numbers may carry an exponent of -0.
    await writeConfig(home, '{"ratio":1e-0,"bot":{"memory":7}}');
    expect((await loadConfig(home.environment)).memory).toBe(7n);
  });

  const bad: [string, string][] = [
    ['{"bot":{"memory":"100"}}', 'bot.memory must be a non-negative integer'],
    ['{"bot":{"memory":-1}}', 'bot.memory must be a non-negative integer'],
    ['{"bot":{"memory":5.0}}', 'bot.memory must be a non-negative integer'],
    ['{"bot":{"memory":1e2}}', 'bot.memory must be a non-negative integer'],
    ['{"bot":{"memory":-0}}', 'bot.memory must be a non-negative integer'],
    // Valid JSON (an exponent of -0) that serde reads as the float 1.0.
    ['{"bot":{"memory":1e-0}}', 'bot.memory must be a non-negative integer'],
    ['{"bot":{"memory":18446744073709551616}}', 'bot.memory must be a non-negative integer'],
    ['{"bot":{"did":5}}', 'bot.did must be a string'],
    ['{"bot":{"handle":[]}}', 'bot.handle must be a string'],
    ['{"bot":{"path":true}}', 'bot.path must be a string'],
    ['{"bot":{"did":"../../etc"}}', 'bot.did is not a valid DID'],
    ['{"bot":{"did":"did:plc:a/b"}}', 'bot.did is not a valid DID'],
    ['{"bot":{"handle":"not a handle"}}', 'bot.handle is not a valid handle'],
    ['{"bot":[]}', 'bot must be an object'],
    // serde's derived structs refuse a repeated field; the reference would fall back to the defaults.
    ['{"bot":{"did":"did:plc:a"},"x":{"bot":1},"bot":{"did":"did:plc:b"}}', 'bot appears twice'],
    ['{"bot":{"did":"did:plc:a","n":{"did":1},"did":"did:plc:b"}}', 'bot.did appears twice'],
    ['{"bot":{"memory":5,"memory":7}}', 'bot.memory appears twice'],
    // The first field found twice is the one named.
    ['{"bot":{"did":"did:plc:a","did":"did:plc:b","memory":1,"memory":2}}', 'bot.did appears twice'],
    // Found by the same scan that lets an ignored 1e400 load, keys compared unescaped.
    ['{"x":1e400,"bot":{"did":"did:plc:a","d\\u0069d":"did:plc:b"}}', 'bot.did appears twice'],
    ['{"bot":{},"x":[1e400],"b\\u006ft":null}', 'bot appears twice'],
    ['{"bot":{"path":"/p\\ud800q"}}', 'bot.path holds a lone surrogate escape'],
    ['{"bot":{"path":null,"path":"/p"}}', 'bot.path appears twice'],
    ['[]', 'the file must hold a JSON object'],
    // Where the text stops being JSON, so a hand-edited config can be mended.
    ['{"bot":', 'not valid JSON at line 1, column 8 (The JSON document is malformed.)'],
    ['', 'not valid JSON at line 1, column 1 (The JSON document is malformed.)'],
    ['{\n  "bot": {\n    "memory": 5,\n  }\n}', 'not valid JSON at line 4, column 3 (The JSON document is malformed.)'],
    // A `-0` (read as a float, like serde) is rewritten before parsing, which moves the columns: only the line is named.
    ['{"bot":{"memory":-0 "x":1}}', 'not valid JSON at line 1 (The JSON document is malformed.)'],
    ['{\n"bot":{"memory":-0},\n"x" 1}', 'not valid JSON at line 3 (The JSON document is malformed.)'],
    // Not an object, and a number beyond f64 in it: the number is what the parser names.
    ['[1e400]', 'not valid JSON (The JSON document holds a number out of range.)'],
  ];
  for (const [text, detail] of bad) {
    it(`rejects ${JSON.stringify(text)} naming the file and the field`, async () => {
      await writeConfig(home, text);
      const error = await loadConfig(home.environment).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AigptError);
      expect((error as AigptError).code).toBe('config_invalid');
      expect((error as AigptError).message).toContain(`invalid config ${home.configFile}: ${detail}`);
    });
  }

  it('takes a DID up to 2048 characters and a handle up to 253 with 63-character labels, and refuses one more (spec 3.1)', async () => {
    const did = `did:plc:${'a'.repeat(2040)}`;
    const handle = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
    expect([did.length, handle.length]).toEqual([2048, 253]);
    await writeConfig(home, { did, handle });
    // On Windows the handle names the identity folder, so the DID's length is only its syntax's bound.
    const windows = { ...home.environment, platform: 'win32' as const, env: { APPDATA: home.configHome } };
    expect(await loadConfig(windows)).toMatchObject({ did, handle, identity: handle });
    const refused: [Record<string, string>, string][] = [
      [{ did: `${did}a` }, 'bot.did is not a valid DID'],
      [{ did: 'did:plc:abc:' }, 'bot.did is not a valid DID'],
      [{ handle: `${handle}d` }, 'bot.handle is not a valid handle'],
      [{ handle: `${'a'.repeat(64)}.com` }, 'bot.handle is not a valid handle'],
    ];
    for (const [bot, detail] of refused) {
      await writeConfig(home, bot);
      await expect(loadConfig(home.environment), detail).rejects.toThrow(`invalid config ${home.configFile}: ${detail}`);
    }
  });

  it('refuses a valid DID longer than a folder name may be where it names the identity folder, at 256 bytes not 255', async () => {
    const did = `did:plc:${'a'.repeat(247)}`;
    await writeConfig(home, { did });
    expect(await loadConfig(home.environment)).toMatchObject({ did, identity: did });
    await writeConfig(home, { did: `${did}a` });
    await expect(loadConfig(home.environment)).rejects.toThrow(
      `invalid config ${home.configFile}: bot.did is 256 characters, longer than a folder name may be (255); it names the identity folder`,
    );
    await writeConfig(home, { did: `did:plc:${'a'.repeat(2040)}` });
    await expect(loadConfig(home.environment)).rejects.toThrow('bot.did is 2048 characters, longer than a folder name may be (255)');
  });

  it('reads a config file of exactly 1 MiB and refuses one byte more', async () => {
    const text = JSON.stringify({ bot: { did: 'did:plc:a' } });
    await writeConfig(home, text.padEnd(1024 * 1024, ' '));
    expect((await loadConfig(home.environment)).did).toBe('did:plc:a');
    await writeConfig(home, text.padEnd(1024 * 1024 + 1, ' '));
    await expect(loadConfig(home.environment)).rejects.toThrow(`invalid config ${home.configFile}: larger than 1048576 bytes`);
  });

  // `aigpt setup` makes the config a symlink; a pseudo-file says size 0 whatever it holds (spec 8 bounds reads).
  it.skipIf(!existsSync('/proc/self/pagemap'))('refuses a config linked to a pseudo-file after reading at most 1 MiB of it', async () => {
    await fs.mkdir(home.appDir, { recursive: true });
    await fs.symlink('/proc/self/pagemap', home.configFile);
    await expect(loadConfig(home.environment)).rejects.toThrow(`invalid config ${home.configFile}: larger than 1048576 bytes`);
  });

  it('rejects a config that is not UTF-8', async () => {
    await fs.mkdir(home.appDir, { recursive: true });
    await fs.writeFile(home.configFile, Buffer.from([0x7b, 0xff, 0x7d]));
    await expect(loadConfig(home.environment)).rejects.toThrow(/not UTF-8/);
  });

  it('reports a dangling symlink instead of writing through it', async () => {
    await fs.mkdir(home.appDir, { recursive: true });
    const target = join(home.root, 'site', 'config.json');
    await fs.mkdir(join(home.root, 'site'));
    await fs.symlink(target, home.configFile);
    await expect(ensureConfigFile(home.environment)).rejects.toThrow(/dangling symlink/);
    await expect(fs.stat(target)).rejects.toThrow();
  });

  it('follows a symlink to a site config', async () => {
    await fs.mkdir(join(home.root, 'site'));
    const target = join(home.root, 'site', 'config.json');
    await fs.writeFile(target, JSON.stringify({ title: 'x', bot: { did: 'did:plc:site' } }));
    await fs.mkdir(home.appDir, { recursive: true });
    await fs.symlink(target, home.configFile);
    await ensureConfigFile(home.environment);
    expect((await loadConfig(home.environment)).did).toBe('did:plc:site');
  });

  it('uses the handle as the identity folder on Windows', async () => {
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai' });
    const config = await loadConfig({ ...home.environment, platform: 'win32', env: { APPDATA: home.configHome } });
    expect(config.identity).toBe('ai.syui.ai');
  });
});
