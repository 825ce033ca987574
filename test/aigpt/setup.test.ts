// `aigpt setup` through the built CLI (spec 4.6, product behaviour): the
// config link, the backup of a regular config, first-run initialisation and
// the `claude mcp add` registration, with a fake `claude` on a private PATH.

import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, listDir, makeTempHome, runAigpt, runAigptStdoutClosed, type TempHome, writeConfig } from './support.js';

const INITIAL_CONFIG = '{\n  "bot": {\n    "did": null,\n    "handle": null,\n    "path": null\n  }\n}';
const CLAUDE_ARGS = ['mcp', 'add', '--transport', 'stdio', 'aigpt', '--scope', 'user', '--'];

describe('aigpt setup', () => {
  let home: TempHome;
  let siteDir: string;
  let siteConfig: string;
  /** An empty folder: the default PATH of these tests, so no real claude or aigpt is found. */
  let emptyBin: string;

  beforeEach(async () => {
    home = makeTempHome();
    siteDir = join(home.configHome, 'ai.syui.log');
    siteConfig = join(siteDir, 'config.json');
    emptyBin = join(home.root, 'empty-bin');
    await fs.mkdir(emptyBin, { recursive: true });
  });
  afterEach(() => home.cleanup());

  const setup = (path: string[] = [emptyBin], args: string[] = ['setup']) =>
    runAigpt(args, { ...home.childEnv, PATH: path.join(':') });

  /** A fake executable: records its arguments one per line, prints a line, exits with `code`. */
  async function fakeCommand(dir: string, name: string, code: number): Promise<{ path: string; argvFile: string }> {
    await fs.mkdir(dir, { recursive: true });
    const path = join(dir, name);
    const argvFile = join(home.root, `${name}-argv.txt`);
    await fs.writeFile(path, `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > '${argvFile}'\necho "fake ${name} ran"\nexit ${code}\n`, { mode: 0o755 });
    return { path, argvFile };
  }

  const linkLine = (): string => `ok ${home.configFile} -> ${siteConfig}`;
  const tail = ['ok data initialized', 'skip claude mcp add (claude not found)', '', 'done.', ''];

  it('finishes every step with its stdout closed (aigpt setup | head -1), exiting quietly', async () => {
    const claude = await fakeCommand(join(home.root, 'bin'), 'claude', 0);
    const result = await runAigptStdoutClosed(['setup'], { ...home.childEnv, PATH: join(home.root, 'bin') });
    expect(result).toEqual({ code: 0, stderr: '' });
    expect(await fs.readlink(home.configFile)).toBe(siteConfig);
    expect(await fs.readFile(siteConfig, 'utf8')).toBe(INITIAL_CONFIG);
    await expect(fs.stat(join(home.appDir, 'self', 'ai.syui.gpt.core', 'self.json'))).resolves.toBeDefined();
    // The registration still ran, after every earlier line had failed to print.
    expect((await fs.readFile(claude.argvFile, 'utf8')).split('\n').slice(0, CLAUDE_ARGS.length)).toEqual(CLAUDE_ARGS);
  });

  it('with no config: links it to the site config, creates the site config and initialises the data', async () => {
    const result = await setup();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe([linkLine(), ...tail].join('\n'));

    expect((await fs.lstat(home.configFile)).isSymbolicLink()).toBe(true);
    expect(await fs.readlink(home.configFile)).toBe(siteConfig);
    expect(await fs.readFile(siteConfig, 'utf8')).toBe(INITIAL_CONFIG);
    const core = JSON.parse(await fs.readFile(join(home.appDir, 'self', 'ai.syui.gpt.core', 'self.json'), 'utf8')) as { uri: string };
    expect(core.uri).toBe('at://self/ai.syui.gpt.core/self');
    expect(await fs.readdir(join(home.appDir, 'self', 'ai.syui.gpt.memory'))).toEqual([]);

    // Every other command accepts the linked config afterwards.
    const status = await runAigpt([], home.childEnv);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`config: ${home.configFile}\n`);
  });

  it('backs up a regular config under a UTC timestamped name, then links and reads the existing site config', async () => {
    const original = '{"bot":{"did":"did:plc:mine","memory":7},"mine":true}';
    await writeConfig(home, original);
    const inode = (await fs.stat(home.configFile)).ino;
    const content = join(home.root, 'content');
    const siteText = JSON.stringify({ bot: { did: 'did:plc:site', path: content }, title: 'a site' });
    await fs.mkdir(siteDir, { recursive: true });
    await fs.writeFile(siteConfig, siteText);

    const before = Math.floor(Date.now() / 1000) * 1000;
    const result = await setup();
    const after = Date.now();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);

    const names = await listDir(home.appDir);
    const backups = names.filter((name) => name !== 'config.json');
    expect(backups).toHaveLength(1);
    const backupName = backups[0] ?? '';
    const stamp = /^config\.json\.bak-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(backupName);
    expect(stamp, backupName).not.toBeNull();
    const [, y, mo, d, h, mi, s] = (stamp ?? []).map(Number);
    const taken = Date.UTC(y ?? 0, (mo ?? 1) - 1, d ?? 0, h ?? 0, mi ?? 0, s ?? 0);
    expect(taken).toBeGreaterThanOrEqual(before);
    expect(taken).toBeLessThanOrEqual(after);

    const backup = join(home.appDir, backupName);
    expect(result.stdout).toBe([`ok backed up ${home.configFile} -> ${backup}`, linkLine(), ...tail].join('\n'));
    // Kept under a second name, not copied: same file, same bytes.
    expect(await fs.readFile(backup, 'utf8')).toBe(original);
    expect((await fs.stat(backup)).ino).toBe(inode);
    expect(await fs.readlink(home.configFile)).toBe(siteConfig);
    // The site config is used as it is, and the data lives where it says.
    expect(await fs.readFile(siteConfig, 'utf8')).toBe(siteText);
    const core = JSON.parse(await fs.readFile(join(content, 'did:plc:site', 'ai.syui.gpt.core', 'self.json'), 'utf8')) as { uri: string };
    expect(core.uri).toBe('at://did:plc:site/ai.syui.gpt.core/self');
  });

  // A running server reads the config on every operation and takes a missing
  // one for a first run (the default data folder): the name must never go.
  const strace = spawnSync('/bin/sh', ['-c', 'command -v strace'], { encoding: 'utf8' }).stdout.trim();
  it.runIf(strace !== '')('never leaves the config name missing: the backup is a hard link and the new link is renamed over the old file', async () => {
    await writeConfig(home, '{"bot":{"did":"did:plc:mine"}}');
    const trace = join(home.root, 'trace');
    const run = spawnSync(strace, ['-f', '-qq', '-o', trace, '-e', 'trace=rename,renameat,renameat2,unlink,unlinkat,link,linkat', process.execPath, aigptBin(), 'setup'], {
      env: { ...home.childEnv, PATH: emptyBin }, cwd: home.root, encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    const calls = (await fs.readFile(trace, 'utf8')).split('\n').filter((line) => line.includes(`"${home.configFile}"`));
    // The config's name is only ever a link source or a rename target.
    expect(calls.some((line) => /\blink(?:at)?\(.*"[^"]*config\.json" *,.*config\.json\.bak-/.test(line)), calls.join('\n')).toBe(true);
    expect(calls.filter((line) => /\b(?:unlink(?:at)?|rename(?:at2?)?)\(/.test(line) && !new RegExp(`, *"${home.configFile}"`).test(line)), calls.join('\n')).toEqual([]);
    expect(await fs.readlink(home.configFile)).toBe(siteConfig);
  });

  it('never overwrites an existing backup: a taken backup name stops setup with exit 1 and changes nothing', async () => {
    await writeConfig(home, '{"bot":null}');
    const now = Date.now();
    // Occupy every backup name of the next minute.
    for (let offset = 0; offset < 60_000; offset += 1000) {
      const name = `config.json.bak-${new Date(now + offset).toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
      await fs.writeFile(join(home.appDir, name), 'older backup');
    }
    const result = await setup();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^aigpt: Failed to create ${home.appDir}/config\\.json\\.bak-\\d{8}T\\d{6}Z: a file with that name already exists\\n$`));
    expect(result.stdout).toBe('');
    expect(await fs.readFile(home.configFile, 'utf8')).toBe('{"bot":null}');
    const names = await listDir(home.appDir);
    expect(names).toHaveLength(61);
    for (const name of names.filter((n) => n !== 'config.json')) {
      expect(await fs.readFile(join(home.appDir, name), 'utf8')).toBe('older backup');
    }
  });

  // Without hard links the backup is made by rename, which would replace a
  // taken name: the check before it is then the only guard.
  it.runIf(strace !== '')('never overwrites an existing backup where hard links are refused (EPERM)', async () => {
    await writeConfig(home, '{"bot":null}');
    const now = Date.now();
    for (let offset = 0; offset < 60_000; offset += 1000) {
      await fs.writeFile(join(home.appDir, `config.json.bak-${new Date(now + offset).toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`), 'older backup');
    }
    const run = spawnSync(strace, ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=link,linkat', '-e', 'inject=link,linkat:error=EPERM', process.execPath, aigptBin(), 'setup'], {
      env: { ...home.childEnv, PATH: emptyBin }, cwd: home.root, encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/: a file with that name already exists\n$/);
    expect(await fs.readFile(home.configFile, 'utf8')).toBe('{"bot":null}');
    for (const name of (await listDir(home.appDir)).filter((n) => n !== 'config.json')) {
      expect(await fs.readFile(join(home.appDir, name), 'utf8')).toBe('older backup');
    }
  });

  it('leaves a symlink that already points at the site config as it is (absolute or relative)', async () => {
    await fs.mkdir(siteDir, { recursive: true });
    await fs.writeFile(siteConfig, '{"bot":{"memory":5}}');
    await fs.mkdir(home.appDir, { recursive: true });
    for (const target of [siteConfig, '../ai.syui.log/config.json', '../ai.syui.log/./config.json']) {
      await fs.rm(home.configFile, { force: true });
      await fs.symlink(target, home.configFile);
      const inode = (await fs.lstat(home.configFile)).ino;
      const result = await setup();
      expect(result.code, target).toBe(0);
      expect(result.stdout, target).toBe([linkLine(), ...tail].join('\n'));
      expect((await fs.lstat(home.configFile)).ino, target).toBe(inode);
      expect(await fs.readlink(home.configFile), target).toBe(target);
    }
    expect(await fs.readFile(siteConfig, 'utf8')).toBe('{"bot":{"memory":5}}');
    expect((await listDir(home.appDir)).filter((name) => name.startsWith('config.json') || name.startsWith('.'))).toEqual(['config.json']);
  });

  it('replaces a symlink that points elsewhere (live or dangling) without touching its target or backing it up', async () => {
    const elsewhere = join(home.root, 'elsewhere.json');
    await fs.writeFile(elsewhere, '{"bot":{"did":"did:plc:other"}}');
    await fs.mkdir(home.appDir, { recursive: true });
    for (const target of [elsewhere, join(home.root, 'missing.json')]) {
      await fs.rm(home.configFile, { force: true });
      await fs.symlink(target, home.configFile);
      const result = await setup();
      expect(result.code, target).toBe(0);
      expect(result.stdout, target).toBe([linkLine(), ...tail].join('\n'));
      expect(await fs.readlink(home.configFile), target).toBe(siteConfig);
    }
    expect(await fs.readFile(elsewhere, 'utf8')).toBe('{"bot":{"did":"did:plc:other"}}');
    await expect(fs.lstat(join(home.root, 'missing.json'))).rejects.toThrow();
    expect((await listDir(home.appDir)).filter((name) => name !== 'self')).toEqual(['config.json']);
  });

  it('skips the registration when no executable claude is on PATH', async () => {
    // A non-executable file and a folder named claude do not count, and an
    // empty PATH entry does not mean the current folder.
    const decoys = join(home.root, 'decoys');
    await fs.mkdir(join(decoys, 'claude'), { recursive: true });
    const other = join(home.root, 'other');
    await fs.mkdir(other);
    await fs.writeFile(join(other, 'claude'), '#!/bin/sh\nexit 0\n', { mode: 0o644 });
    const cwd = join(home.root, 'cwd');
    await fakeCommand(cwd, 'claude', 0);
    const result = await runAigpt(['setup'], { ...home.childEnv, PATH: [emptyBin, '', decoys, other].join(':') }, { cwd });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n').slice(-4)).toEqual(['skip claude mcp add (claude not found)', '', 'done.', '']);
  });

  it('runs claude mcp add with the first aigpt on PATH and reports success', async () => {
    const first = join(home.root, 'bin1');
    const second = join(home.root, 'bin2');
    const claude = await fakeCommand(first, 'claude', 0);
    const aigpt = await fakeCommand(second, 'aigpt', 0);
    await fakeCommand(join(home.root, 'bin3'), 'aigpt', 0);
    await fs.writeFile(join(first, 'aigpt'), 'not executable', { mode: 0o644 });
    const result = await setup([emptyBin, first, second, join(home.root, 'bin3')]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe([linkLine(), 'ok data initialized', 'fake claude ran', 'ok claude mcp add aigpt', '', 'done.', ''].join('\n'));
    expect(await fs.readFile(claude.argvFile, 'utf8')).toBe([...CLAUDE_ARGS, aigpt.path, 'server', ''].join('\n'));
    // Only claude ran, never the aigpt it registered.
    await expect(fs.stat(aigpt.argvFile)).rejects.toThrow();
  });

  it('registers the bare word aigpt when no aigpt is on PATH', async () => {
    const bin = join(home.root, 'bin');
    const claude = await fakeCommand(bin, 'claude', 0);
    const result = await setup([bin]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('\nok claude mcp add aigpt\n\ndone.\n');
    expect(await fs.readFile(claude.argvFile, 'utf8')).toBe([...CLAUDE_ARGS, 'aigpt', 'server', ''].join('\n'));
  });

  it('warns when claude mcp add fails and still exits 0', async () => {
    const bin = join(home.root, 'bin');
    const claude = await fakeCommand(bin, 'claude', 1);
    const result = await setup([bin]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe([linkLine(), 'ok data initialized', 'fake claude ran', 'warn claude mcp add failed', '', 'done.', ''].join('\n'));
    expect(await fs.readFile(claude.argvFile, 'utf8')).toContain('mcp\nadd\n');
  });

  it('warns for any exit other than 0, a signal included, as the reference asks for success', async () => {
    const bin = join(home.root, 'bin');
    await fakeCommand(bin, 'claude', 2);
    const two = await setup([bin]);
    expect(two.code).toBe(0);
    expect(two.stdout).toContain('\nfake claude ran\nwarn claude mcp add failed\n');
    // Killed by a signal: no exit code at all, which is no success either.
    await fs.writeFile(join(bin, 'claude'), '#!/bin/sh\nkill -9 $$\n', { mode: 0o755 });
    const killed = await setup([bin]);
    expect(killed.code).toBe(0);
    expect(killed.stdout).toContain('\nok data initialized\nwarn claude mcp add failed\n');
  });

  it('exits 1 when claude cannot be started', async () => {
    const bin = join(home.root, 'bin');
    await fs.mkdir(bin);
    const claude = join(bin, 'claude');
    await fs.writeFile(claude, `#!${join(home.root, 'no-such-interpreter')}\n`, { mode: 0o755 });
    const result = await setup([bin]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe([linkLine(), 'ok data initialized', ''].join('\n'));
    expect(result.stderr).toBe(`aigpt: Failed to run ${claude}: ENOENT\n`);
  });

  it('exits 1 with the product error format when step 1 fails', async () => {
    // Something that is neither a file nor a symlink has the config's name.
    await fs.mkdir(home.configFile, { recursive: true });
    const blocked = await setup();
    expect(blocked.code).toBe(1);
    expect(blocked.stdout).toBe('');
    expect(blocked.stderr).toBe(`aigpt: Failed to create ${home.configFile}: something that is neither a file nor a symlink has that name\n`);
    expect((await fs.stat(home.configFile)).isDirectory()).toBe(true);

    // A FIFO is neither: it is left in place, not backed up or read as a link.
    await fs.rm(home.configFile, { recursive: true });
    expect(spawnSync('mkfifo', [home.configFile]).status).toBe(0);
    const fifo = await setup();
    expect(fifo.code).toBe(1);
    expect(fifo.stdout).toBe('');
    expect(fifo.stderr).toBe(`aigpt: Failed to create ${home.configFile}: something that is neither a file nor a symlink has that name\n`);
    expect((await fs.lstat(home.configFile)).isFIFO()).toBe(true);
    expect(await listDir(home.appDir)).toEqual(['config.json']);

    // The config folder cannot be created.
    await fs.rm(home.configHome, { recursive: true });
    await fs.writeFile(home.configHome, 'a file where the config folder should be');
    const noFolder = await setup();
    expect(noFolder.code).toBe(1);
    expect(noFolder.stdout).toBe('');
    expect(noFolder.stderr).toBe(`aigpt: Failed to create ${home.appDir}: ENOTDIR: not a directory\n`);
  });

  it('takes no arguments and is listed in the help', async () => {
    const extra = await setup([emptyBin], ['setup', 'extra-arg']);
    expect(extra.code).toBe(2);
    expect(extra.stdout).toBe('');
    expect(extra.stderr).toContain('aigpt --help');
    await expect(fs.lstat(home.configFile)).rejects.toThrow();

    const top = await setup([emptyBin], ['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^ {2}setup +link the config to the site config/m);
    const own = await setup([emptyBin], ['setup', '--help']);
    expect(own.code).toBe(0);
    expect(own.stdout).toContain('Usage: aigpt setup');
  });
});
