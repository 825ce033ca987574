// Checked against the Rust reference (syui/aigpt): what its parser
// (clap) and its path handling (Rust's PathBuf::join, the dirs crate) make
// of command lines and environments that earlier audits did not try.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configFilePath } from '../../src/aigpt/config/config.js';
import { joinLikeRust } from '../../src/aigpt/core/record-paths.js';
import { rootOptionsAsClapReadsThem } from '../../src/aigpt/cli/program.js';
import { AIGPT_VERSION } from '../../src/aigpt/core/limits.js';
import { makeTempHome, runAigpt, type TempHome } from './support.js';

describe('aigpt against the reference parser and paths', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  describe('options before the subcommand, as clap reads them', () => {
    it('a repeated -v/--version is a usage error, as clap refuses a flag given twice', async () => {
      for (const args of [['-v', '-v'], ['-vv'], ['-v', '--version'], ['--version', '-v'], ['-v', '-v', 'server'], ['-v', '-v', '-h']]) {
        const result = await runAigpt(args, home.childEnv);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stdout, args.join(' ')).toBe('');
        expect(result.stderr, args.join(' ')).toContain("'--version' cannot be used multiple times");
      }
      // Nothing was initialised.
      await expect(fs.stat(home.configHome)).rejects.toThrow();
    });

    it('after `--` no subcommand is recognised: `aigpt -- server` is a usage error, a bare trailing `--` is nothing', async () => {
      for (const args of [['--', 'server'], ['--', 'save-memory', 'x'], ['-v', '--', 'read-core'], ['--', '--']]) {
        const result = await runAigpt(args, home.childEnv);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stdout, args.join(' ')).toBe('');
      }
      await expect(fs.stat(home.configHome)).rejects.toThrow();
      expect(await runAigpt(['-v', '--'], home.childEnv)).toEqual({ code: 0, stdout: `${AIGPT_VERSION}\n`, stderr: '' });
      const status = await runAigpt(['--'], home.childEnv);
      expect(status.code).toBe(0);
      expect(status.stdout.split('\n')[0]).toBe('aigpt - AI memory MCP server');
    });

    it('a help flag prints the help wherever it stands in a cluster, but an unknown option before it is a usage error', async () => {
      for (const args of [['-hv'], ['-vh'], ['-v', '-h', '-v'], ['-h', '-x']]) {
        const result = await runAigpt(args, home.childEnv);
        expect(result.code, args.join(' ')).toBe(0);
        expect(result.stdout, args.join(' ')).toMatch(/^Usage: aigpt/);
      }
      for (const args of [['-x', '-h'], ['-vx'], ['--versio'], ['--version=1']]) {
        const result = await runAigpt(args, home.childEnv);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stdout, args.join(' ')).toBe('');
      }
    });

    it('a negative number after the subcommand is an unknown option, as for clap, not the content to save', async () => {
      for (const args of [['save-memory', '-5'], ['save-memory', '-.5'], ['save-memory', '-1e3'], ['-v', 'save-memory', '-5']]) {
        const result = await runAigpt(args, home.childEnv);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stdout, args.join(' ')).toBe('');
        expect(result.stderr, args.join(' ')).toContain(`unexpected argument '${args[args.length - 1]}' found`);
      }
      await expect(fs.stat(home.configHome)).rejects.toThrow();
      // After `--` it is the content, as with clap.
      expect(await runAigpt(['save-memory', '--', '-5'], home.childEnv)).toMatchObject({ code: 0, stdout: 'Saved. (1 records)\n' });
      const read = await runAigpt(['read-memory'], home.childEnv);
      expect(read.stdout).toContain('"text": "-5"');
    });

    it('`help` takes command names only: an option or a second word is a usage error with its own line, as clap says', async () => {
      const refused: [string[], string][] = [
        [['help', '-v'], "unexpected argument '-v' found"],
        [['help', '-x'], "unexpected argument '-x' found"],
        [['help', 'server', 'extra'], "unrecognized subcommand 'extra'"],
      ];
      for (const [args, line] of refused) {
        const result = await runAigpt(args, home.childEnv);
        expect(result, args.join(' ')).toEqual({ code: 2, stdout: '', stderr: `error: ${line}\n(run aigpt --help for usage)\n` });
      }
      for (const args of [['help', '--'], ['help', '--', 'server'], ['help', 'server', '-h']]) {
        const result = await runAigpt(args, home.childEnv);
        expect(result.code, args.join(' ')).toBe(0);
        expect(result.stdout, args.join(' ')).toMatch(args.includes('server') ? /^Usage: aigpt server/ : /^Usage: aigpt \[options\]/);
      }
      await expect(fs.stat(home.configHome)).rejects.toThrow();
    });

    it('leaves every other command line to the parser unchanged', () => {
      for (const argv of [[], ['server'], ['-v'], ['-v', 'server'], ['save-memory', '--', '-x'], ['save-memory', '-'], ['save-memory', '5'], ['foo'], ['-'], ['help', 'server']]) {
        expect(rootOptionsAsClapReadsThem(argv)).toEqual({ argv });
      }
    });
  });

  describe('paths spelt as the reference spells them (PathBuf::join, no normalisation)', () => {
    it('joinLikeRust appends as written and lets an absolute part replace the rest', () => {
      expect(joinLikeRust('/a//b', '.config')).toBe('/a//b/.config');
      expect(joinLikeRust('/a/./c/', 'ai.syui.gpt', 'config.json')).toBe('/a/./c/ai.syui.gpt/config.json');
      expect(joinLikeRust('/a', '/x')).toBe('/x');
      expect(joinLikeRust('', 'x')).toBe('x');
    });

    it('XDG_CONFIG_HOME with `//` or `/./` is printed as given in the config: and path: lines', async () => {
      for (const spelling of [`${home.root}//config`, `${home.root}/./config`]) {
        const env = { ...home.childEnv, XDG_CONFIG_HOME: spelling };
        const result = await runAigpt([], env);
        expect(result.code, spelling).toBe(0);
        const lines = result.stdout.split('\n');
        expect(lines[2], spelling).toBe(`config: ${spelling}/ai.syui.gpt/config.json`);
        expect(lines[7], spelling).toBe(`path: ${spelling}/ai.syui.gpt/`);
      }
      // Both spellings are the one folder the kernel (and the reference) reaches.
      expect(await fs.readFile(home.configFile, 'utf8')).toContain('"bot"');
    });

    it('HOME with `//` is printed as given in the default config folder', async () => {
      const env: NodeJS.ProcessEnv = { ...home.childEnv, HOME: `${home.root}//home` };
      delete env['XDG_CONFIG_HOME'];
      const result = await runAigpt([], env);
      expect(result.code).toBe(0);
      expect(result.stdout.split('\n')[2]).toBe(`config: ${home.root}//home/.config/ai.syui.gpt/config.json`);
      expect(configFilePath({ ...home.environment, env: { HOME: '/h//u' } })).toBe('/h//u/.config/ai.syui.gpt/config.json');
    });

    it('setup prints both paths as the reference does and still recognises its own link on a second run', async () => {
      const spelling = `${home.root}//config`;
      const env = { ...home.childEnv, XDG_CONFIG_HOME: spelling, PATH: join(home.root, 'no-bin') };
      const first = await runAigpt(['setup'], env);
      expect(first.code).toBe(0);
      expect(first.stdout.split('\n')[0]).toBe(`ok ${spelling}/ai.syui.gpt/config.json -> ${spelling}/ai.syui.log/config.json`);
      const second = await runAigpt(['setup'], env);
      expect(second.code).toBe(0);
      // Left alone: no backup line, no backup file.
      expect(second.stdout).not.toContain('backed up');
      expect((await fs.readdir(home.appDir)).filter((name) => name.includes('.bak-'))).toEqual([]);
      expect(await fs.readFile(home.configFile, 'utf8')).toContain('"bot"');
    });
  });
});
