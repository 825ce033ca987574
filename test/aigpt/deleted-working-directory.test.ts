// aigpt started in a working directory that has been deleted (a shell left in
// a removed folder, a service whose folder was cleaned up). Every path aigpt
// needs is absolute when HOME is, so the commands must work as anywhere else;
// only a relative path (a relative bot.path) needs the folder, and then the
// message says so. Node's process.cwd() throws ENOENT there, which aigpt used
// to report as "unexpected error: ENOENT: no such file or directory, uv_cwd"
// with exit 1 for every command.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, runToEnd, type RunResult, type TempHome, writeConfig } from './support.js';

const homes: TempHome[] = [];
const parents: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) home.cleanup();
  for (const parent of parents.splice(0)) rmSync(parent, { recursive: true, force: true });
});

/** Runs aigpt from a shell that entered a folder and removed it. */
function aigptInDeletedFolder(args: readonly string[], env: NodeJS.ProcessEnv, input = ''): Promise<RunResult> {
  const parent = mkdtempSync(join(tmpdir(), 'aigpt-gone-'));
  parents.push(parent);
  const script = '/bin/mkdir gone && cd gone && /bin/rmdir ../gone && exec "$@"';
  return runToEnd('/bin/sh', ['-c', script, 'sh', process.execPath, aigptBin(), ...args], { cwd: parent, env }, input);
}

describe('aigpt in a deleted working directory', () => {
  it('works when every path is absolute: status, save-memory, read-memory, the server and setup', async () => {
    const home = makeTempHome();
    homes.push(home);
    // A relative PATH entry names nothing while the folder is gone; setup skips it.
    const env = { ...home.childEnv, PATH: `relative-bin:${process.env['PATH'] ?? ''}` };

    const status = await aigptInDeletedFolder([], env);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`config: ${home.configFile}`);

    const saved = await aigptInDeletedFolder(['save-memory', 'kept'], env);
    expect(saved).toEqual({ code: 0, stdout: 'Saved. (1 records)\n', stderr: '' });

    const read = await aigptInDeletedFolder(['read-memory'], env);
    expect(read.code).toBe(0);
    expect(JSON.parse(read.stdout).value.content.text).toBe('kept');

    const request = `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })}\n`;
    const server = await aigptInDeletedFolder(['server'], env, request);
    expect(server.code).toBe(0);
    expect(JSON.parse(server.stdout).result.instructions).toContain('kept');

    const setup = await aigptInDeletedFolder(['setup'], { ...env, PATH: 'relative-bin:/nonexistent-bin' });
    expect(setup.stderr).toBe('');
    expect(setup.code).toBe(0);
    expect(setup.stdout).toContain('skip claude mcp add (claude not found)');
  });

  it('a relative bot.path needs the folder: the message says it is gone, not "unexpected error"', async () => {
    const home = makeTempHome();
    homes.push(home);
    await writeConfig(home, { path: 'relative/records' });
    const read = await aigptInDeletedFolder(['read-memory'], home.childEnv);
    expect(read.code).toBe(1);
    expect(read.stdout).toBe('');
    expect(read.stderr).toBe('aigpt: cannot tell the current folder (ENOENT: no such file or directory; was it deleted?): change to an existing folder, or use absolute paths\n');
  });
});
