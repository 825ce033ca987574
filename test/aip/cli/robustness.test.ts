// What a user is left with when aip is interrupted or refused partway: each
// test spawns the built dist/src/aip/cli/main.js in a temp folder, crashing it
// (SIGKILL at a chosen file operation, see support/crash-at.mjs) where needed.
import { lstat, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin, type CliResult } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CRASH_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/crash-at.mjs');

/** `aip ARGS` killed by SIGKILL on the `nth` call of fs/promises' `operation`, if it gets that far. */
function aipCrashingAt(operation: string, nth: number, args: readonly string[], cwd: string): Promise<CliResult> {
  return aip(args, { cwd, nodeArgs: ['--import', CRASH_AT], env: { AIP_TEST_CRASH_AT: `${operation}:${nth}` } });
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
  // Four processes per crash point, a few dozen points: about a minute on a loaded 2-core machine.
  it('leaves no .aip or a working one, and init again always ends with a working repository', { timeout: 240_000 }, async () => {
    for (const operation of ['mkdir', 'link', 'rename', 'open']) {
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

describe('aip run with evidence too large to store', () => {
  it('refuses before running the command, with the error storing would give', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, '.aip', 'config.json'), '{"format":"aip-repository","version":1,"max_object_bytes":1048576}\n');
    const marker = join(dir, 'ran');
    // About 1.1 MB of argv (each argument below the kernel's 128 KiB limit).
    const big = Array.from({ length: 10 }, () => 'a'.repeat(110_000));
    const objectsBefore = await aip(['export'], { cwd: dir });
    const refused = await aip(['run', '--', 'sh', '-c', 'echo ran > "$0"', marker, ...big], { cwd: dir });
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/^aip: cbor\.too_large: the evidence would take at least 11[0-9]{5} bytes \(argv 11[0-9]{5} of them\), above max_object_bytes 1048576; nothing was run\n$/);
    expect(await exists(marker)).toBe(false);
    expect((await aip(['export'], { cwd: dir })).stdout).toEqual(objectsBefore.stdout); // not even the captures
    // An argv that fits still runs and is recorded.
    const fits = await aip(['run', '--', 'sh', '-c', 'echo ran > "$0"', marker, ...big.slice(1)], { cwd: dir });
    expect(fits.code, fits.stderr).toBe(0);
    expect(await exists(marker)).toBe(true);
  });
});

describe('aip checkout that fails partway', () => {
  it('leaves no half-filled folder: a new one is not created, an empty one the user had stays empty', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, 'a.txt'), 'first\n');
    await mkdir(join(dir, 'b'));
    await writeFile(join(dir, 'b', 'c.txt'), 'second\n');
    expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).code).toBe(0);
    // Damage the store so the last file cannot be read: a.txt is written first, then the checkout fails.
    const second = (await aip(['put', '--from', 'raw', 'b/c.txt'], { cwd: dir })).text.trim();
    await rm(join(dir, '.aip', 'objects', second.slice(0, 2), second.slice(2)));

    const fresh = join(dir, 'out', 'nested', 'copy');
    const failed = await aip(['checkout', 'HEAD', '--into', fresh], { cwd: dir });
    expect(failed.code).toBe(5);
    expect(failed.stderr).toBe(`aip: graph.missing: artifact ${second} is not stored\n`);
    expect(await exists(join(dir, 'out'))).toBe(false); // nor the parents it made, nor its work folder

    const empty = join(dir, 'mine');
    await mkdir(empty);
    expect((await aip(['checkout', 'HEAD', '--into', empty], { cwd: dir })).code).toBe(5);
    expect(await readdir(empty)).toEqual([]);

    // Once the store is repaired, the same checkouts succeed.
    expect((await aip(['put', '--from', 'raw', 'b/c.txt'], { cwd: dir })).code).toBe(0);
    for (const into of [fresh, empty]) {
      const ok = await aip(['checkout', 'HEAD', '--into', into], { cwd: dir });
      expect(ok.text, ok.stderr).toBe(`${into}\n`);
      expect((await readdir(into)).sort()).toEqual(['.aipignore', 'a.txt', 'b']);
    }
    expect((await readdir(join(dir, 'out', 'nested')))).toEqual(['copy']);
  });
});
