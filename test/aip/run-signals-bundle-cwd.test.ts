// A black-box walk through spec sections 5-9 of aip-objects.md with
// the built `aip` bin, as an independent test writer would read them. Each
// case here is a difference the walk found between the spec and what the
// command did; everything else the walk checked already agreed.

import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeCanonical, type CborValue } from '../../src/aip/core/cbor-profile.js';
import { makeArtifact, mustEncode } from '../../src/aip/core/codec.js';
import { ROOT_STATE_ID as ROOT_ID } from '../../src/aip/core/objects.js';
import { execute } from '../../src/aip/runner/execute.js';
import { AIP_BIN, aip, requireBuiltBin } from './support/cli.js';
import { tempDir } from './support/temp.js';

beforeAll(() => {
  requireBuiltBin();
});

/** Kills a process this test made escape the runner's process group (setsid), if it is still there. */
async function killEscaped(pidFile: string): Promise<void> {
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (Number.isInteger(pid) && pid > 0) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

describe('8 step 5: a signal to the runner cancels the run while it still waits for the pipes', () => {
  it('SIGINT after the command exited, while a process outside its group holds stdout open, is cancelled (exit 130) without waiting out the grace period', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const pidFile = join(await tempDir(), 'escaped.pid');
    // The shell starts a process in a session of its own (outside the group the
    // runner kills), which inherits stdout, then exits: the runner now waits up
    // to 2 s for an EOF that will not come (spec 8 step 6). It says "started"
    // only once that process has left the session (it writes its pid after
    // setsid): on a loaded machine the signal came while it was still a
    // session member, killed as the command's own, and nothing had escaped.
    const script = `setsid sh -c 'echo $$ > "$1"; exec sleep 30' escaped "$1" & while [ ! -s "$1" ]; do sleep 0.01; done; echo started`;
    const child = spawn(process.execPath, [AIP_BIN, 'run', '--tee', '--', 'sh', '-c', script, 'sh', pidFile], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const closed = new Promise<number | null>((settle) => child.on('close', (code) => settle(code)));
      await new Promise<void>((settle) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString('utf8');
          if (stdout.includes('started\n')) settle();
        });
      });
      // Let the shell exit, so the runner is past the command's end and in its EOF wait.
      await new Promise((settle) => setTimeout(settle, 400));
      child.kill('SIGINT');
      const code = await closed;

      expect(stderr).toBe('aip: warning: workspace unknown: 1 process the command started outside its process group and session was still running in the evaluation folder\n');
      expect(code).toBe(130);
      // The escaped process still works in the evaluation folder: killed, and the workspace is unknown (D61).
      expect(stdout).toMatch(/^started\nevidence [0-9a-f]{64}\nresult unknown \(termination cancelled, exit -, workspace unknown\)\n$/);
      // Before, the signal was ignored: the run went on to the end of the grace
      // period and was recorded as capture_error, exit 4 (the result line above).
      const id = /evidence ([0-9a-f]{64})/.exec(stdout)?.[1] as string;
      const shown = await aip(['--format', 'json', 'show', id], { cwd: dir });
      const data = (JSON.parse(shown.text) as { data: Record<string, unknown> }).data;
      expect(data).toMatchObject({ termination: 'cancelled', error: 'cancelled by SIGINT', exit_code: null, result: 'unknown', workspace: 'unknown' });
      expect(data['workspace_error']).toMatch(/still running in the evaluation folder$/);
    } finally {
      child.kill('SIGKILL');
      await killEscaped(pidFile);
    }
  });
});

describe('7.8: every import failure names its item', () => {
  it('bytes after the announced objects are reported as item N + 2', async () => {
    const artifact = mustEncode(makeArtifact(Buffer.from('kept\n')));
    const header = encodeCanonical(new Map<string, CborValue>([['format', 'aip-bundle'], ['objects', 1], ['version', 1]]));
    const item = encodeCanonical(artifact.bytes);
    if (!header.ok || !item.ok) throw new Error('cannot encode the bundle');
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);

    const imported = await aip(['import'], { cwd: dir, input: Buffer.concat([header.value, item.value, Buffer.from([0x00])]) });
    expect(imported.code).toBe(5);
    expect(imported.stderr).toBe('aip: bundle.format: item 3: bytes after the 1 objects the header announced\n');
    // The object before the failure stays (each stored object is valid).
    expect((await aip(['cat', '--content', artifact.id], { cwd: dir })).text).toBe('kept\n');
  });
});

describe('7.1 / 9.2: the current folder is the one the command runs in, or an io error', () => {
  /** Runs `aip ARGS` through sh after `cd` into `folder` (printf text, so it can hold raw bytes), from `parent`. */
  function aipFromShell(parent: string, prelude: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((settle, reject) => {
      const child = spawn('sh', ['-c', `${prelude} && exec "$0" "$@"`, process.execPath, AIP_BIN, ...args], { cwd: parent, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) => settle({ code, stdout, stderr }));
    });
  }

  it('a folder whose path is not UTF-8 is refused (io, exit 6); before, init made its repository in another folder (U+FFFD in place of the byte)', async () => {
    const parent = await tempDir();
    const enter = `mkdir "$(printf 'proj\\377')" && cd "$(printf 'proj\\377')"`;
    const init = await aipFromShell(parent, enter, ['init']);
    expect(init.stdout).toBe('');
    expect(init.stderr).toMatch(/^aip: io: the current folder's path is not valid UTF-8, and aip names folders as text: as text it reads "[^\n]*proj\uFFFD", which is another folder; [^\n]*\n$/);
    expect(init.code).toBe(6);
    // Nothing was made: not in the folder, and no look-alike folder beside it.
    const names = await readdir(parent, { encoding: 'buffer' });
    expect(names.map((name) => name.toString('hex'))).toEqual([Buffer.from('proj\xff', 'latin1').toString('hex')]);
    expect(await readdir(Buffer.concat([Buffer.from(`${parent}/proj`), Buffer.from([0xff])]))).toEqual([]);

    // An absolute --repo does not need the current folder, nor does --help.
    const repo = await tempDir();
    expect((await aip(['init'], { cwd: repo })).code).toBe(0);
    const head = await aipFromShell(parent, `cd "$(printf 'proj\\377')"`, ['--repo', repo, 'head']);
    expect(head).toEqual({ code: 0, stdout: `${ROOT_ID}\n`, stderr: '' });
  });

  it('a deleted current folder is an io error (exit 6) instead of a crash with exit 1; --help and an absolute --repo still work', async () => {
    const parent = await tempDir();
    const enter = 'mkdir gone && cd gone && rmdir ../gone';
    const status = await aipFromShell(parent, enter, ['--format', 'json', 'status']);
    const message = 'cannot tell the current folder (ENOENT; was it deleted?): change to an existing folder, or give --repo and paths as absolute paths';
    expect(status.stderr).toBe(`aip: io: ${message}\n`);
    expect(JSON.parse(status.stdout)).toEqual({ error: { code: 'io', message } });
    expect(status.code).toBe(6);

    const help = await aipFromShell(parent, enter, ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: aip /);

    const repo = await tempDir();
    expect((await aip(['init'], { cwd: repo })).code).toBe(0);
    expect(await aipFromShell(parent, enter, ['--repo', repo, 'head'])).toEqual({ code: 0, stdout: `${ROOT_ID}\n`, stderr: '' });
  });
});

describe('8 step 5 (library): a run leaves no listener on the caller\'s AbortSignal', () => {
  it('three runs with one signal leave it as they found it', async () => {
    const controller = new AbortController();
    const cwd = await tempDir();
    for (let i = 0; i < 3; i++) {
      const result = await execute({ argv: ['true'], cwd, timeoutNs: 10_000_000_000n, outputLimit: 16, signal: controller.signal });
      expect(result.termination).toBe('exited');
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
