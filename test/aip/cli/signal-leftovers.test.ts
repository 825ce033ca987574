// Ctrl-C, SIGTERM or SIGHUP in the middle of an aip command leaves nothing
// that only a crash should leave: `export -o FILE` removes its unfinished
// bundle (a failed export already did; a partial bundle under the name asked
// for would import partway), an object write removes its `.aip/tmp` file
// (spec 7.4; the sweep of dead writers' temps is for kill -9), and a command
// holding `.aip/lock` removes it (spec 7.6). The command still ends by the
// signal. Before, the signal's default action left all three behind. The
// signal is sent by the process itself just before a chosen file operation
// (crash-at.mjs), so it lands at the same point every time.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir, writeTree } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CRASH_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/crash-at.mjs');
const signalAt = (point: string, signal: NodeJS.Signals) => ({ nodeArgs: ['--import', CRASH_AT], env: { AIP_TEST_CRASH_AT: point, AIP_TEST_CRASH_SIGNAL: signal } });

describe('aip commands interrupted by a signal', () => {
  it('export -o, import and a HEAD move leave no partial bundle, temp file or lock', { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const root = (await aip(['head'], { cwd: dir })).text.trim();
    await writeTree(dir, Object.fromEntries(Array.from({ length: 12 }, (_, n) => [`f${n}.txt`, `file ${n}\n`.repeat(200)])));
    expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).code).toBe(0);
    const bundle = join(await tempDir(), 'all.bundle');
    expect((await aip(['export', '-o', bundle], { cwd: dir })).code).toBe(0);

    // The 5th open is an object read, after the output file was created.
    const partial = join(await tempDir(), 'partial.bundle');
    const exported = await aip(['export', '-o', partial], { cwd: dir, ...signalAt('open:5', 'SIGTERM') });
    expect(exported.signal).toBe('SIGTERM');
    expect(existsSync(partial)).toBe(false);

    const target = await tempDir();
    expect((await aip(['init'], { cwd: target })).code).toBe(0);
    // The 3rd object's link under its name: its temp file is complete and waiting.
    const imported = await aip(['import', bundle], { cwd: target, ...signalAt('link:3', 'SIGINT') });
    expect(imported.signal).toBe('SIGINT');
    expect(await readdir(join(target, '.aip', 'tmp'))).toEqual([]);
    const verified = await aip(['verify'], { cwd: target });
    expect(verified.code, verified.text).toBe(0);

    // `aip head STATE` renames HEAD into place under the lock.
    const moved = await aip(['head', root], { cwd: dir, ...signalAt('rename:1', 'SIGHUP') });
    expect(moved.signal).toBe('SIGHUP');
    expect(existsSync(join(dir, '.aip', 'lock'))).toBe(false);
  });

  it('a lock another process took over meanwhile stays: only its own lock goes with the signal', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const root = (await aip(['head'], { cwd: dir })).text.trim();
    await writeTree(dir, { 'a.txt': 'a\n' });
    expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).code).toBe(0);
    const lockPath = join(dir, '.aip', 'lock');
    // As if this command had been judged gone and another holder had broken its lock and taken it.
    const other = JSON.stringify({ pid: 1, host: 'elsewhere', since: '2026-01-01T00:00:00.000Z' });
    const moved = await aip(['head', root], {
      cwd: dir,
      nodeArgs: ['--import', CRASH_AT],
      env: { AIP_TEST_CRASH_AT: 'rename:1', AIP_TEST_CRASH_SIGNAL: 'SIGTERM', AIP_TEST_CRASH_OVERWRITE: JSON.stringify({ path: lockPath, text: other }) },
    });
    expect(moved.signal).toBe('SIGTERM');
    expect(await readFile(lockPath, 'utf8')).toBe(other);
  });

  it('a signal the moment the export file, HEAD\'s temp file or the lock has been created still removes it', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const root = (await aip(['head'], { cwd: dir })).text.trim();
    await writeTree(dir, { 'a.txt': 'a\n' });
    expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: dir })).code).toBe(0);
    const justAfter = (call: string, match: string, signal: NodeJS.Signals) => ({
      nodeArgs: ['--import', CRASH_AT],
      env: { AIP_TEST_CRASH_AT: `${call}:1`, AIP_TEST_CRASH_MATCH: match, AIP_TEST_CRASH_WHEN: 'after', AIP_TEST_CRASH_SIGNAL: signal },
    });

    const bundle = join(await tempDir(), 'fresh.bundle');
    const exported = await aip(['export', '-o', bundle], { cwd: dir, ...justAfter('open', 'fresh.bundle', 'SIGINT') });
    expect(exported.signal).toBe('SIGINT');
    expect(existsSync(bundle)).toBe(false);

    // HEAD's temp file, the moment it exists: before, it stayed in .aip for ever.
    const before = await readFile(join(dir, '.aip', 'HEAD'), 'utf8');
    const headWrite = await aip(['head', root], { cwd: dir, ...justAfter('open', 'HEAD.', 'SIGHUP') });
    expect(headWrite.signal).toBe('SIGHUP');
    expect((await readdir(join(dir, '.aip'))).filter((name) => name.startsWith('HEAD.'))).toEqual([]);
    expect(await readFile(join(dir, '.aip', 'HEAD'), 'utf8')).toBe(before);

    const moved = await aip(['head', root], { cwd: dir, ...justAfter('link', join('.aip', 'lock'), 'SIGTERM') });
    expect(moved.signal).toBe('SIGTERM');
    expect(await readdir(join(dir, '.aip'))).not.toContain('lock');
    expect((await readdir(join(dir, '.aip'))).filter((name) => name.startsWith('lock.'))).toEqual([]);
  });
});
