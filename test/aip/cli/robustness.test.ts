// What a user is left with when aip is interrupted or refused partway: each
// test spawns the built dist/src/aip/cli/main.js in a temp folder, crashing it
// (SIGKILL at a chosen file operation, see support/crash-at.mjs) where needed.
import { spawn } from 'node:child_process';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { AIP_BIN, aip, requireBuiltBin, type CliResult } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CRASH_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/crash-at.mjs');

/** `aip ARGS` killed by SIGKILL on the `nth` call of fs/promises' `operation`, if it gets that far. */
function aipCrashingAt(operation: string, nth: number, args: readonly string[], cwd: string): Promise<CliResult> {
  return new Promise((settle, reject) => {
    const child = spawn(process.execPath, ['--import', CRASH_AT, AIP_BIN, ...args], {
      cwd,
      env: { ...process.env, AIP_TEST_CRASH_AT: `${operation}:${nth}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out);
      settle({ code, signal, stdout, stderr: Buffer.concat(err).toString('utf8'), text: stdout.toString('utf8') });
    });
  });
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

describe('aip init interrupted', () => {
  it('leaves no .aip or a working one, and init again always ends with a working repository', async () => {
    for (const operation of ['mkdir', 'rename', 'open']) {
      for (let nth = 1; ; nth++) {
        const dir = await tempDir();
        const crashed = await aipCrashingAt(operation, nth, ['init'], dir);
        if (crashed.signal === null) {
          expect(crashed.code, crashed.stderr).toBe(0); // got past every such call: nothing left to interrupt
          expect(nth).toBeGreaterThan(1);
          break;
        }
        const where = `killed at ${operation} #${nth}`;
        expect(crashed.signal, where).toBe('SIGKILL');
        const published = await exists(join(dir, '.aip'));
        // Either there is no repository at all, or it already works.
        expect((await aip(['--repo', '.', 'head'], { cwd: dir })).code, where).toBe(published ? 0 : 3);
        const again = await aip(['--repo', '.', 'init'], { cwd: dir });
        expect(again.code, `${where}: ${again.stderr}`).toBe(published ? 1 : 0);
        const verify = await aip(['--repo', '.', 'verify'], { cwd: dir });
        expect(verify.code, `${where}: ${verify.text}${verify.stderr}`).toBe(0);
        // The killed init's work folder went with the next init.
        expect((await readdir(dir)).filter((name) => name !== '.aipignore'), where).toEqual(['.aip']);
      }
    }
  });

  it('says how to get out of a half-made .aip left by an older aip', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, '.aip', 'objects'), { recursive: true });
    const init = await aip(['--repo', '.', 'init'], { cwd: dir });
    expect(init.code).toBe(1);
    expect(init.stderr).toBe(`aip: repo.exists: ${join(dir, '.aip')} already exists but has no HEAD (left by an interrupted aip init?); if it holds nothing you need, remove it and run aip init again\n`);
  });
});
