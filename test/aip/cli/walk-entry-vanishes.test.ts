// The working tree can change while `aip status`, `op` or `snapshot` walk it
// (spec 7.7): an editor's swap file or a build's temp file deleted between
// its folder's listing and its reading is absent, as Git treats it, instead
// of failing the command with `io` (D51). Every other read error still fails,
// and `aip run`'s inspection stays strict: an entry vanishing there leaves the
// workspace `unknown` (spec 8 step 7). A regular file replaced by a FIFO or a
// link after its type was checked is refused (`snapshot.invalid`) rather than
// read (a FIFO used to block the walk for ever); replaced by a folder it is
// walked, by another file it is recorded as read, executable bit included.
// The change is made by the aip process itself just before the chosen file
// operation (change-at.mjs), so it lands at the same point every time.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { AIP_BIN, aip, requireBuiltBin } from '../support/cli.js';
import { tempDir, writeTree } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const CHANGE_AT = resolve(dirname(fileURLToPath(import.meta.url)), '../support/change-at.mjs');

/** Node arguments and environment making `action` happen to `path` (default: the call's own) just before the 1st `call` naming `match`. */
function changeAt(call: string, match: string, action = 'remove', path = '') {
  return {
    nodeArgs: ['--import', CHANGE_AT],
    env: { AIP_TEST_CHANGE_AT: `${call}:1`, AIP_TEST_CHANGE_MATCH: match, AIP_TEST_CHANGE_DO: action, AIP_TEST_CHANGE_PATH: path },
  };
}

let template = '';

/** A repository whose HEAD holds a.txt, sub/b.txt and an executable run.sh, made once and copied for each test. */
beforeAll(async () => {
  template = await tempDir();
  expect((await aip(['init'], { cwd: template })).code).toBe(0);
  await writeTree(template, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n', 'run.sh': '#!/bin/sh\n' }, ['run.sh']);
  expect((await aip(['snapshot', '--title', 't', '--goal', 'g'], { cwd: template })).code).toBe(0);
});

/** A copy of the template with an unrecorded c.txt and the entries the test makes vanish. */
async function repository(): Promise<string> {
  const dir = await tempDir();
  await cp(template, dir, { recursive: true });
  await writeTree(dir, { 'c.txt': 'c\n', '.x.swp': 'swap\n', 'out/build.o': 'object\n' });
  return dir;
}

describe('an entry removed while the working tree is walked', () => {
  it('a file gone before its lstat or its open is absent from status and snapshot', async () => {
    const dir = await repository();
    const beforeLstat = await aip(['status'], { cwd: dir, ...changeAt('lstatSync', '.x.swp') });
    expect(beforeLstat.stderr).toBe('');
    expect(beforeLstat.code).toBe(0);
    expect(beforeLstat.text).toBe('A c.txt\nA out/build.o\n');

    await writeTree(dir, { '.x.swp': 'swap\n' });
    const beforeOpen = await aip(['snapshot', '--title', 'u', '--goal', 'g'], { cwd: dir, ...changeAt('openSync', '.x.swp') });
    expect(beforeOpen.stderr).toBe('');
    expect(beforeOpen.code).toBe(0);
    expect(existsSync(join(dir, '.x.swp'))).toBe(false);
    expect((await aip(['status'], { cwd: dir })).text).toBe('');
  });

  it('a folder removed or replaced by a file before it is read is absent, with its content', async () => {
    const dir = await repository();
    const removed = await aip(['status'], { cwd: dir, ...changeAt('readdirSync', '/out') });
    expect(removed.stderr).toBe('');
    expect(removed.text).toBe('A .x.swp\nA c.txt\n');

    expect(existsSync(join(dir, 'out'))).toBe(false);
    await writeTree(dir, { 'out/build.o': 'object\n' });
    const replaced = await aip(['status'], { cwd: dir, ...changeAt('readdirSync', '/out', 'file') });
    expect(replaced.stderr).toBe('');
    expect(replaced.text).toBe('A .x.swp\nA c.txt\n');
  });

  it('a file whose folder went after the listing is absent (ENOENT, or ENOTDIR for a folder now a file)', async () => {
    const dir = await repository();
    const folderGone = await aip(['status'], { cwd: dir, ...changeAt('lstatSync', 'out/build.o', 'remove', join(dir, 'out')) });
    expect(folderGone.stderr).toBe('');
    expect(folderGone.text).toBe('A .x.swp\nA c.txt\n');

    await writeTree(dir, { 'out/build.o': 'object\n' });
    const folderNowFile = await aip(['status'], { cwd: dir, ...changeAt('openSync', 'out/build.o', 'file', join(dir, 'out')) });
    expect(folderNowFile.stderr).toBe('');
    expect(folderNowFile.text).toBe('A .x.swp\nA c.txt\n');
  });

  it('the root folder gone is still an io error', async () => {
    const dir = await repository();
    // Run from elsewhere: the folder removed is the repository's, not the command's current one.
    const gone = await aip(['status', '--repo', dir], { cwd: await tempDir(), ...changeAt('readdirSync', dir, 'remove') });
    expect(gone.code).toBe(6);
    expect(gone.stderr).toBe('aip: io: cannot read folder .: ENOENT\n');
  });
});

describe('a file replaced after its type was checked', () => {
  it('by a FIFO is refused as snapshot.invalid instead of blocking the walk', async () => {
    const dir = await repository();
    const { env, nodeArgs } = changeAt('openSync', '.x.swp', 'fifo');
    // A blocked walk is killed by this guard; the test checks the outcome, not the time.
    const run = spawnSync(process.execPath, [...nodeArgs, AIP_BIN, 'status'], { cwd: dir, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
    expect(run.signal).toBeNull();
    expect(run.status).toBe(5);
    expect(run.stderr).toBe('aip: snapshot.invalid: .x.swp is not a regular file; a state holds regular files only (ignore it in .aipignore)\n');
  });

  it('by a folder is walked as the folder it now is', async () => {
    const dir = await repository();
    const folder = await aip(['status'], { cwd: dir, ...changeAt('openSync', '.x.swp', 'folder') });
    expect(folder.stderr).toBe('');
    expect(folder.text).toBe('A .x.swp/inside.txt\nA c.txt\nA out/build.o\n');
  });

  it('by another file records the bytes and executable bit of the file read', async () => {
    const dir = await repository();
    const made = await aip(['snapshot', '--format', 'json', '--title', 'u', '--goal', 'g'], { cwd: dir, ...changeAt('openSync', 'run.sh', 'file') });
    expect(made.stderr).toBe('');
    const { state } = JSON.parse(made.text) as { state: string };
    const shown = JSON.parse((await aip(['show', state], { cwd: dir })).text) as { data: { files: Record<string, { executable: boolean }> } };
    expect(shown.data.files['run.sh']?.executable).toBe(false);
  });

  it('by a symbolic link is refused as snapshot.invalid naming the link, not an io error', async () => {
    const dir = await repository();
    const linked = await aip(['status'], { cwd: dir, ...changeAt('openSync', '.x.swp', 'link') });
    expect(linked.code).toBe(5);
    expect(linked.stderr).toBe('aip: snapshot.invalid: .x.swp is a symbolic link; a state holds regular files only (ignore it in .aipignore)\n');
  });
});

describe('aip run inspection stays strict', () => {
  it('a file the command left that vanishes during the inspection makes the workspace unknown', async () => {
    const dir = await repository();
    const run = await aip(['run', '--format', 'json', '--', 'sh', '-c', 'echo x > left.tmp'], { cwd: dir, ...changeAt('lstatSync', 'left.tmp') });
    expect(run.code).toBe(4);
    const { id } = JSON.parse(run.text) as { id: string };
    const shown = JSON.parse((await aip(['show', id], { cwd: dir })).text) as { data: { workspace: string; workspace_error: string } };
    expect(shown.data.workspace).toBe('unknown');
    expect(shown.data.workspace_error).toBe('cannot inspect left.tmp: ENOENT');
  });
});
