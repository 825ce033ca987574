// A dependency missing from node_modules (an install cut short, a package
// deleted by hand) must not greet the user with a module-resolution stack
// trace on every command: each executable names the package and how to mend
// it. The built bins run from a copy of dist/ whose node_modules links every
// real package but one.

import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, missingPackage, openFilesShortage } from '../../src/common/launch.js';
import { repoRoot, runGuarded } from '../support/bins.js';

describe('an executable whose dependency is missing', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'aipcs-broken-install-'));
    cpSync(join(repoRoot, 'dist', 'src'), join(root, 'dist', 'src'), { recursive: true });
    cpSync(join(repoRoot, 'package.json'), join(root, 'package.json'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** node_modules with every installed package linked but `missing`. */
  function installWithout(missing: string): void {
    const modules = join(root, 'node_modules');
    rmSync(modules, { recursive: true, force: true });
    mkdirSync(modules);
    const source = join(repoRoot, 'node_modules');
    for (const entry of readdirSync(source)) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        mkdirSync(join(modules, entry));
        for (const scoped of readdirSync(join(source, entry))) {
          if (`${entry}/${scoped}` !== missing) symlinkSync(join(source, entry, scoped), join(modules, entry, scoped));
        }
      } else if (entry !== missing) {
        symlinkSync(join(source, entry), join(modules, entry));
      }
    }
  }

  it.each([
    ['aipcs', 'better-sqlite3'],
    ['aipcs', 'commander'],
    ['aigpt', 'commander'],
    ['aip', 'cborg'],
  ])('%s --help without %s names the package in one line, exit 1', async (program, missing) => {
    installWithout(missing);
    const run = await runGuarded(join(root, 'dist', 'src', program, 'cli', 'main.js'), ['--help'], { cwd: root });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `${program}: this installation is incomplete: the package '${missing}' is missing. ` +
        'Install the dependencies again (`npm ci` in a checkout, or reinstall the package) and retry.\n',
    );
  });

  it('aigpt server without @modelcontextprotocol/sdk names the package in one line, exit 1; the other commands need it not', async () => {
    installWithout('@modelcontextprotocol/sdk');
    const aigpt = join(root, 'dist', 'src', 'aigpt', 'cli', 'main.js');
    const env = { PATH: process.env['PATH'] ?? '', HOME: root };
    const server = await runGuarded(aigpt, ['server'], { cwd: root, env });
    expect([server.code, server.stdout]).toEqual([1, '']);
    expect(server.stderr).toBe(
      "aigpt: this installation is incomplete: the package '@modelcontextprotocol/sdk' is missing. " +
        'Install the dependencies again (`npm ci` in a checkout, or reinstall the package) and retry.\n',
    );
    expect((await runGuarded(aigpt, ['--help'], { cwd: root, env })).code).toBe(0);
  });

  it('runs as before once the package is back', async () => {
    installWithout('no-such-package');
    const run = await runGuarded(join(root, 'dist', 'src', 'aipcs', 'cli', 'main.js'), ['--help'], { cwd: root });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('usage: aipcs');
  });
});

describe('missingPackage', () => {
  const failure = (code: string, message: string): Error => Object.assign(new Error(message), { code });

  it('reads the package from ESM and CommonJS resolution failures', () => {
    expect(missingPackage(failure('ERR_MODULE_NOT_FOUND', "Cannot find package 'pg' imported from /x/y.js"))).toBe('pg');
    expect(missingPackage(failure('ERR_MODULE_NOT_FOUND', "Cannot find package '@scope/name' imported from /x/y.js"))).toBe('@scope/name');
    expect(missingPackage(failure('MODULE_NOT_FOUND', "Cannot find module 'bindings'\nRequire stack:\n- /x/database.js"))).toBe('bindings');
    expect(missingPackage(failure('MODULE_NOT_FOUND', "Cannot find module 'pg/lib/client'"))).toBe('pg');
  });

  it('leaves files of the build and other failures alone', () => {
    expect(missingPackage(failure('ERR_MODULE_NOT_FOUND', "Cannot find module '/x/dist/src/aip/cli/entry.js' imported from /x/main.js"))).toBeNull();
    expect(missingPackage(failure('MODULE_NOT_FOUND', "Cannot find module './lib/x'"))).toBeNull();
    expect(missingPackage(failure('ENOENT', "Cannot find package 'pg'"))).toBeNull();
    expect(missingPackage(new Error("Cannot find package 'pg'"))).toBeNull();
    expect(missingPackage('ERR_MODULE_NOT_FOUND')).toBeNull();
    expect(missingPackage(failure('ERR_MODULE_NOT_FOUND', "Cannot find package '' imported from /x/y.js"))).toBeNull();
  });

  it('tells an open files limit from a missing file, and from a command that ran out of descriptors', () => {
    const emfile = (path: string): Error => Object.assign(new Error(`EMFILE: too many open files, open '${path}'`), { code: 'EMFILE', path });
    const shortage = 'too many open files (raise the open files limit, ulimit -n)';
    expect(openFilesShortage(emfile('/x/node_modules/zod/v4/locales/es.js'))).toBe(shortage);
    expect(openFilesShortage(emfile('/x/node_modules/pkg/package.json'))).toBe(shortage);
    expect(openFilesShortage(Object.assign(new Error('EMFILE'), { code: 'EMFILE' }))).toBe(shortage);
    // The system-wide table full (ENFILE) is the same shortage; a native addon is a module file too.
    expect(openFilesShortage(Object.assign(new Error('ENFILE'), { code: 'ENFILE', path: '/x/node_modules/pg/lib/index.js' }))).toBe(shortage);
    expect(openFilesShortage(emfile('/x/node_modules/better-sqlite3/build/Release/better_sqlite3.node'))).toBe(shortage);
    // A command's own file is the command's failure, reported by the command.
    expect(openFilesShortage(emfile('/home/u/project/notes.txt'))).toBeNull();
    // The resolver reads a failed open as absence: a file that is there was not missing.
    expect(openFilesShortage(failure('ERR_MODULE_NOT_FOUND', `Cannot find package '${join(repoRoot, 'package.json')}' imported from /x/y.js`))).toBe(shortage);
    expect(openFilesShortage(failure('ERR_MODULE_NOT_FOUND', "Cannot find package '/no/such/file.js' imported from /x/y.js"))).toBeNull();
    expect(openFilesShortage(failure('ERR_MODULE_NOT_FOUND', "Cannot find package 'pg' imported from /x/y.js"))).toBeNull();
  });

  it('lets any other failure of the entry propagate', async () => {
    const boom = new Error('boom');
    await expect(launch('aip', () => Promise.reject(boom))).rejects.toBe(boom);
  });
});
