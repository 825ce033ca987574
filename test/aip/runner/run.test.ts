// Executed evidence with real child processes (spec 8): every termination
// kind, truncation at exactly output_limit, argv preserved without a shell,
// and clean/changed/unknown workspaces, each stored as a valid evidence v2.
import { Writable } from 'node:stream';
import { chmod, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AipError } from '../../../src/aip/core/errors.js';
import type { EvidenceV2, Id, IntentV1 } from '../../../src/aip/core/objects.js';
import { Repository } from '../../../src/aip/repository/repository.js';
import { commitSnapshot } from '../../../src/aip/repository/workflows.js';
import { runEvidence, type RunRequest } from '../../../src/aip/runner/evaluate.js';
import { TEE_BACKLOG_BYTES, execute, formatDuration, groupAlive } from '../../../src/aip/runner/execute.js';
import { tempDir, writeTree } from '../support/temp.js';

const NODE = process.execPath;
const intent: IntentV1 = {
  type: 'intent',
  version: 1,
  data: { goal: 'Run things', title: 'Runner test', context: [], parents: [], created_at: '2026-01-01T00:00:00.000000000Z', constraints: [] },
};

async function project(files: Record<string, string>, executable: string[] = []): Promise<{ repo: Repository; state: Id }> {
  const repo = await Repository.init(await tempDir());
  await writeTree(repo.root, files, executable);
  const made = await commitSnapshot(repo, { create: intent }, false);
  if (!made.ok) throw made.error;
  return { repo, state: made.value.state };
}

async function run(repo: Repository, state: Id, argv: string[], extra: Partial<RunRequest> = {}): Promise<EvidenceV2> {
  const outcome = await runEvidence(repo, { stateId: state, argv, kind: 'test', timeoutNs: 30_000_000_000n, outputLimit: 1024, withOperations: true, keep: false, ...extra });
  const report = await repo.verify([outcome.id]);
  expect(report.invalid).toEqual([]);
  return outcome.evidence;
}

async function content(repo: Repository, id: Id): Promise<string> {
  const bytes = await repo.artifactContent(id);
  if (!bytes.ok) throw bytes.error;
  return Buffer.from(bytes.value).toString('utf8');
}

describe('terminations', () => {
  it('exited 0 with a clean workspace is pass, and records the state and its operation', async () => {
    const { repo, state } = await project({ 'hello.txt': 'hello\n' });
    const e = await run(repo, state, ['cat', 'hello.txt']);
    expect(e.data).toMatchObject({ termination: 'exited', exit_code: 0, error: '', result: 'pass', workspace: 'clean', workspace_error: '', cwd: '.', environment: 'inherited', provenance: 'executed', kind: 'test' });
    expect(e.data.executable).toMatch(/^\/.*\/cat$/);
    expect(e.data.operations).toEqual((await repo.getTyped(state, 'state')).data.operations);
    expect(e.data.platform).toBe(`${process.platform}/${process.arch}`);
    expect(e.data.runner).toMatch(/^[^/]+\/\d+\.\d+\.\d+/);
    expect(await content(repo, e.data.stdout.artifact)).toBe('hello\n');
    expect(await repo.evidenceAbout(state)).toHaveLength(1);
  });

  it('exited non-zero is fail', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const e = await run(repo, state, ['sh', '-c', 'exit 3'], { withOperations: false });
    expect(e.data).toMatchObject({ termination: 'exited', exit_code: 3, result: 'fail', operations: [] });
  });

  it('signaled when the command dies by a signal', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const e = await run(repo, state, ['sh', '-c', 'kill -TERM $$']);
    expect(e.data).toMatchObject({ termination: 'signaled', exit_code: null, error: 'terminated by signal SIGTERM', result: 'unknown' });
  });

  it('timeout kills the whole process group', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const e = await run(repo, state, ['sh', '-c', 'sleep 30 & sleep 30; wait'], { timeoutNs: 300_000_000n });
    expect(e.data).toMatchObject({ termination: 'timeout', exit_code: null, error: 'command exceeded its 300ms timeout', result: 'unknown', timeout_ns: 300_000_000, workspace: 'clean' });
    // The run lasted its deadline at least (and far less than the 30 s sleep), measured from spawn to its end.
    expect(Number(e.data.duration_ns)).toBeGreaterThanOrEqual(300_000_000);
    expect(Number(e.data.duration_ns)).toBeLessThan(20_000_000_000);
    expect(Date.parse(e.data.finished_at) - Date.parse(e.data.started_at)).toBeGreaterThanOrEqual(299);
  });

  it('cancelled when aborted (Ctrl-C), and the evidence is still stored', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const controller = new AbortController();
    const tee = new Writable({ write: (_chunk, _enc, done) => { controller.abort('SIGINT'); done(); } });
    const e = await run(repo, state, ['sh', '-c', 'echo ready; exec sleep 30'], { signal: controller.signal, tee: { stdout: tee, stderr: tee } });
    expect(e.data).toMatchObject({ termination: 'cancelled', exit_code: null, error: 'cancelled by SIGINT', result: 'unknown' });
    expect(await content(repo, e.data.stdout.artifact)).toBe('ready\n');
  });

  it('cancelled before the folder is made: nothing runs, the folder is not read as the workspace, and the evidence is stored', async () => {
    const { repo, state } = await project({ 'a': 'a', 'b': 'b' });
    const controller = new AbortController();
    controller.abort('SIGTERM');
    const outcome = await runEvidence(repo, { stateId: state, argv: ['sh', '-c', 'echo ran'], kind: 'k', timeoutNs: 10_000_000_000n, outputLimit: 64, withOperations: true, keep: true, signal: controller.signal });
    expect(outcome.evidence.data).toMatchObject({
      termination: 'cancelled', error: 'cancelled by SIGTERM', exit_code: null, result: 'unknown', duration_ns: 0,
      workspace: 'unknown', workspace_error: 'cancelled before the evaluation folder was checked against the state; nothing was run',
    });
    expect(await content(repo, outcome.evidence.data.stdout.artifact)).toBe('');
    expect((await repo.verify([outcome.id])).invalid).toEqual([]);
    expect(await readdir(outcome.evaluationDir ?? '')).toEqual([]);
    await rm(outcome.evaluationDir ?? '', { recursive: true, force: true });
  });

  it('start_error when the executable is not found', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const e = await run(repo, state, ['no-such-command-aip-test', 'x']);
    expect(e.data).toMatchObject({ termination: 'start_error', executable: '', error: 'executable not found: no-such-command-aip-test', exit_code: null, result: 'unknown', workspace: 'clean' });
  });

  it('start_error when a path the system would not find only resolves by dropping parts of it', async () => {
    // `./ok.sh/` and `./missing/../ok.sh` name no file for the kernel (ENOTDIR, ENOENT); resolving them as text ran ok.sh.
    const { repo, state } = await project({ 'ok.sh': '#!/bin/sh\necho ran\n' }, ['ok.sh']);
    for (const program of ['./ok.sh/', './missing/../ok.sh']) {
      const e = await run(repo, state, [program]);
      expect(e.data).toMatchObject({ termination: 'start_error', executable: '', error: `executable not found: ${program}` });
    }
    expect((await run(repo, state, ['./ok.sh'])).data.termination).toBe('exited');
  });

  it('start_error with no executable for the root folder, which evidence cannot name as one (P9)', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    for (const program of ['/', '//', '/.', '/../']) {
      const e = await run(repo, state, [program]);
      expect(e.data, program).toMatchObject({ termination: 'start_error', executable: '', error: `executable not found: ${program}`, result: 'unknown' });
    }
  });

  it('start_error with the resolved path when the file cannot be executed', async () => {
    const { repo, state } = await project({ 'script.sh': 'echo hi\n' });
    const e = await run(repo, state, ['./script.sh']);
    expect(e.data.termination).toBe('start_error');
    expect(e.data.executable).toMatch(/\/aip-run-[^/]+\/script\.sh$/);
    expect(e.data.error).toContain('EACCES');
  });

  it.runIf(process.platform === 'linux')('start_error (ENOEXEC) for an executable the kernel cannot run, not a run under /bin/sh', async () => {
    // execvp would hand such a file to /bin/sh: the shebang-less script would "pass" under a shell the evidence does not name.
    const { repo, state } = await project({ 'no-shebang': 'echo ran\n', 'garbage': 'zz\n', 'empty': '', 'ok.sh': '#!/bin/sh\necho ran\n' }, ['no-shebang', 'garbage', 'empty', 'ok.sh']);
    let handlers: string[] = [];
    try {
      handlers = (await readdir('/proc/sys/fs/binfmt_misc')).filter((n) => n !== 'register' && n !== 'status');
    } catch {
      // not mounted
    }
    for (const name of ['no-shebang', 'garbage', 'empty']) {
      const e = await run(repo, state, [`./${name}`]);
      if (handlers.length > 0) continue; // registered handlers: the kernel decides, as before
      expect(e.data, name).toMatchObject({ termination: 'start_error', exit_code: null, result: 'unknown' });
      expect(e.data.error, name).toMatch(new RegExp(`^spawn /.*/aip-run-[^/]+/${name} ENOEXEC$`));
      expect(await content(repo, e.data.stdout.artifact)).toBe('');
    }
    const ok = await run(repo, state, ['./ok.sh']);
    expect(ok.data).toMatchObject({ termination: 'exited', exit_code: 0 });
    expect(await content(repo, ok.data.stdout.artifact)).toBe('ran\n');
  });

  it('capture_error when a pipe stays open after the command ends', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    // A grandchild in its own session keeps stdout open beyond the group kill; it exits by itself.
    const script = "require('child_process').spawn('sleep', ['2'], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] }).unref()";
    const e = await run(repo, state, [NODE, '-e', script], { graceMs: 200 });
    expect(e.data).toMatchObject({ termination: 'capture_error', exit_code: null, result: 'unknown' });
    expect(e.data.error).toMatch(/stdout and stderr did not reach end of file/);
  });

  it('a job in a group of its own (job control) is still a capture error, and does not outlive the run', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const pidFile = join(await tempDir(), 'job.pid');
    const e = await run(repo, state, ['bash', '-c', 'set -m; sleep 30 & echo $! > "$1"', 'job', pidFile], { graceMs: 200 });
    expect(e.data).toMatchObject({ termination: 'capture_error', result: 'unknown' });
    const job = Number(await readFile(pidFile, 'utf8'));
    const alive = await readFile(`/proc/${job}/stat`, 'utf8').then((text) => !/^\S+ \(.*\) [ZX] /s.test(text), () => false);
    if (alive) process.kill(job, 'SIGKILL'); // not left behind by this test either
    expect(alive).toBe(false);
  });

  it('stores the evidence after removing the evaluation folder when the first store is refused (a full disk)', async () => {
    // What the command wrote in its folder may be what filled the disk; the
    // folder went and the error was raised, so a command that ran left no record.
    const { repo, state } = await project({ 'a': 'a' });
    const putArtifact = repo.putArtifact.bind(repo);
    let refusals = 0;
    repo.putArtifact = async (bytes) => (refusals++ === 0 ? { ok: false, error: new AipError('io', 'cannot write object x: ENOSPC') } : putArtifact(bytes));
    const outcome = await runEvidence(repo, { stateId: state, argv: ['sh', '-c', 'echo hi; head -c 1000 /dev/zero > big'], kind: 'test', timeoutNs: 30_000_000_000n, outputLimit: 1024, withOperations: true, keep: false });
    expect(refusals).toBe(3); // refused once, then stdout and stderr stored
    expect(outcome.evidence.data).toMatchObject({ termination: 'exited', exit_code: 0, workspace: 'changed' });
    expect(await content(repo, outcome.evidence.data.stdout.artifact)).toBe('hi\n');
    expect((await repo.verify([outcome.id])).invalid).toEqual([]);
    expect(outcome.removalError).toBeUndefined();
    // A kept folder is the user's: it stays, and the refusal is the answer.
    refusals = 0;
    await expect(runEvidence(repo, { stateId: state, argv: ['true'], kind: 'test', timeoutNs: 30_000_000_000n, outputLimit: 1024, withOperations: true, keep: true })).rejects.toMatchObject({ code: 'io' });
  });

  it('a job that keeps starting children leaves none of them behind', async () => {
    // The leftovers were killed in one walk over /proc: a child started
    // between the walk's list and its parent's kill outlived the run.
    const { repo, state } = await project({ 'a': 'a' });
    const marker = `sleep 30.${process.pid}`;
    const loop = `set -m; (while :; do ${marker} & sleep 0.002; done) >/dev/null 2>&1 </dev/null & sleep 0.3; exit 0`;
    const survivors: number[] = [];
    for (let round = 0; round < 3; round++) {
      await run(repo, state, ['bash', '-c', loop], { graceMs: 200 });
      for (const name of await readdir('/proc')) {
        if (!/^\d+$/.test(name)) continue;
        const command = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
        const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
        if (command.replaceAll('\0', ' ').trim() === marker && !/^\S+ \(.*\) [ZX] /s.test(stat)) survivors.push(Number(name));
      }
    }
    for (const pid of survivors) process.kill(pid, 'SIGKILL'); // not left behind by this test either
    expect(survivors).toEqual([]);
  });

  it('a daemon that left the session (setsid) but still works in the folder makes the workspace unknown, and does not outlive the run', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const pidFile = join(await tempDir(), 'daemon.pid');
    const daemon = 'echo $$ > "$1"; sleep 1; echo late > a';
    const script = `setsid sh -c '${daemon}' daemon "$1" </dev/null >/dev/null 2>&1 & while [ ! -s "$1" ]; do sleep 0.05; done`;
    const e = await run(repo, state, ['sh', '-c', script, 'run', pidFile], { graceMs: 200 });
    expect(e.data).toMatchObject({ termination: 'exited', exit_code: 0, result: 'unknown', workspace: 'unknown' });
    expect(e.data.workspace_error).toMatch(/^\d+ process(es)? the command started outside its process group and session (was|were) still running in the evaluation folder$/);
    const pid = Number(await readFile(pidFile, 'utf8'));
    const alive = await readFile(`/proc/${pid}/stat`, 'utf8').then((text) => !/^\S+ \(.*\) [ZX] /s.test(text), () => false);
    if (alive) process.kill(pid, 'SIGKILL'); // not left behind by this test either
    expect(alive).toBe(false);
  });

  it('names one escaped process in the singular', async () => {
    // The daemon execs into sleep: one process, left in the folder after its group is gone.
    const { repo, state } = await project({ 'a': 'a' });
    const pidFile = join(await tempDir(), 'daemon.pid');
    const script = `setsid sh -c 'echo $$ > "$1"; exec sleep 5' daemon "$1" </dev/null >/dev/null 2>&1 & while [ ! -s "$1" ]; do sleep 0.05; done`;
    const e = await run(repo, state, ['sh', '-c', script, 'run', pidFile], { graceMs: 200 });
    const pid = Number(await readFile(pidFile, 'utf8'));
    const alive = await readFile(`/proc/${pid}/stat`, 'utf8').then((text) => !/^\S+ \(.*\) [ZX] /s.test(text), () => false);
    if (alive) process.kill(pid, 'SIGKILL'); // not left behind by this test either
    expect(e.data).toMatchObject({
      result: 'unknown',
      workspace: 'unknown',
      workspace_error: '1 process the command started outside its process group and session was still running in the evaluation folder',
    });
    expect(alive).toBe(false);
  });
});

describe('evidence size', () => {
  it('runs a request whose smallest evidence takes exactly max_object_bytes; one byte more is refused before anything runs', async () => {
    const { repo: made, state } = await project({ 'a': 'a' });
    await writeFile(join(made.aipDir, 'config.json'), '{"format":"aip-repository","version":1,"max_object_bytes":1048576}\n');
    const repo = await Repository.open(made.root);
    const marker = join(await tempDir(), 'ran');
    // Chunks stay between 65536 and 131071 bytes: one CBOR text header size, and within the kernel's bound on one argument.
    const argv = (last: number): string[] => ['sh', '-c', 'touch "$0"', marker, ...Array.from({ length: 10 }, () => 'x'.repeat(94_000)), 'x'.repeat(last)];
    const request = (last: number): RunRequest => ({ stateId: state, argv: argv(last), kind: 'test', timeoutNs: 30_000_000_000n, outputLimit: 1024, withOperations: false, keep: false });
    const refused = await runEvidence(repo, request(120_000)).then(() => undefined, (error: unknown) => error as AipError);
    const size = Number(/at least (\d+) bytes/.exec(refused?.message ?? '')?.[1]);
    const exact = 120_000 - (size - 1_048_576);
    expect(exact).toBeGreaterThan(65_536);
    await expect(runEvidence(repo, request(exact + 1))).rejects.toMatchObject({ code: 'cbor.too_large', message: expect.stringMatching(/at least 1048577 bytes .*nothing was run$/) });
    await expect(stat(marker)).rejects.toMatchObject({ code: 'ENOENT' });
    // At the limit the request is not refused: the command runs, and its real evidence (a longer executable) is what does not fit.
    await expect(runEvidence(repo, request(exact))).rejects.toMatchObject({ code: 'cbor.too_large' });
    expect((await stat(marker)).isFile()).toBe(true);
  });
});

describe('capture', () => {
  const print = (out: number, err: number) => `process.stdout.write('o'.repeat(${out})); process.stderr.write('e'.repeat(${err}))`;

  it('keeps exactly output_limit bytes and marks truncation only beyond it', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const exact = await run(repo, state, [NODE, '-e', print(5, 4)], { outputLimit: 5 });
    expect(exact.data.stdout.truncated).toBe(false);
    expect(await content(repo, exact.data.stdout.artifact)).toBe('ooooo');
    expect(exact.data.stderr.truncated).toBe(false);
    const over = await run(repo, state, [NODE, '-e', print(6, 200_000)], { outputLimit: 5 });
    expect(over.data.stdout).toMatchObject({ truncated: true });
    expect(await content(repo, over.data.stdout.artifact)).toBe('ooooo');
    expect(over.data.stderr.truncated).toBe(true);
    expect(await content(repo, over.data.stderr.artifact)).toBe('eeeee');
    expect(over.data).toMatchObject({ termination: 'exited', exit_code: 0, output_limit: 5 });
  });

  it('records timeout_ns exactly: a plain number up to 2^53-1, the bigint beyond it', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const safe = await run(repo, state, ['true'], { timeoutNs: BigInt(Number.MAX_SAFE_INTEGER) });
    expect(safe.data.timeout_ns).toBe(Number.MAX_SAFE_INTEGER);
    const largest = await run(repo, state, ['true'], { timeoutNs: 2n ** 64n - 1n });
    expect(largest.data.timeout_ns).toBe(2n ** 64n - 1n);
  });

  it('drains a large output so the child never blocks', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const e = await run(repo, state, [NODE, '-e', "process.stdout.write(Buffer.alloc(8 * 1024 * 1024, 120))"], { outputLimit: 1 });
    expect(e.data).toMatchObject({ termination: 'exited', exit_code: 0, stdout: { truncated: true } });
  });

  it('--tee skips output its reader does not take instead of buffering it without bound', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    let teed = 0;
    const stuck = new Writable({ write: (chunk: Buffer) => void (teed += chunk.length) }); // never calls back: a reader that stopped
    const notes: string[] = [];
    const stderr = new Writable({ write: (chunk: Buffer, _enc, done) => { notes.push(chunk.toString()); done(); } });
    const total = 3 * TEE_BACKLOG_BYTES;
    const e = await run(repo, state, [NODE, '-e', `process.stdout.write(Buffer.alloc(${total}, 120))`], { tee: { stdout: stuck, stderr } });
    expect(e.data).toMatchObject({ termination: 'exited', exit_code: 0, result: 'pass', stdout: { truncated: true } });
    expect(stuck.writableLength).toBeLessThanOrEqual(TEE_BACKLOG_BYTES + 1024 * 1024);
    expect(teed).toBeGreaterThan(0);
    expect(notes.join('')).toMatch(/^aip: warning: --tee skipped \d+ bytes of stdout /);
  });

  it('passes argv literally, without a shell', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const args = ['', ' two  spaces ', '$HOME', '"quoted"', "it's", 'a;b|c&&d', '*', 'é\u0301', '\u{1f600}', '-', '--x'];
    const e = await run(repo, state, [NODE, '-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', ...args], { outputLimit: 4096 });
    expect(JSON.parse(await content(repo, e.data.stdout.artifact))).toEqual(args);
    expect(e.data.argv).toEqual([NODE, '-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', ...args]);
  });
});

describe('working folder', () => {
  it('names the evaluation folder in PWD, not the folder aip was started in', async () => {
    // A Makefile's $(PWD) (and any tool that trusts PWD) wrote into the
    // working tree while the evidence said the state's folder was clean.
    const { repo, state } = await project({ 'a': 'a' });
    const before = process.env['PWD'];
    process.env['PWD'] = repo.root;
    try {
      const e = await run(repo, state, [NODE, '-e', "require('fs').writeFileSync(process.env.PWD + '/out.txt', ''); process.stdout.write(String(process.env.PWD === process.cwd()))"]);
      expect(await content(repo, e.data.stdout.artifact)).toBe('true');
      expect(e.data).toMatchObject({ workspace: 'changed', environment: 'inherited' });
      expect(await readdir(repo.root)).not.toContain('out.txt');
    } finally {
      if (before === undefined) delete process.env['PWD'];
      else process.env['PWD'] = before;
    }
  });
});

describe('workspace', () => {
  it('clean when the folder still equals the state, empty folders aside', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    expect((await run(repo, state, ['mkdir', '-p', 'x/y'])).data.workspace).toBe('clean');
  });

  it('changed on a new, modified, removed or re-moded file, or a link', async () => {
    const { repo, state } = await project({ 'a': 'a', 'b': 'b' });
    // The last one puts a link to an exact copy in the folder's place: the walk followed it and saw a clean tree.
    const spare = await tempDir();
    const replaced = `d=$PWD && cp -r "$d" ${spare}/copy && cd / && mv "$d" ${spare}/moved && ln -s ${spare}/copy "$d"`;
    for (const script of ['echo new > c', 'echo x > a', 'rm b', 'chmod +x a', 'ln -s a link', replaced]) {
      const e = await run(repo, state, ['sh', '-c', script]);
      expect(e.data, script).toMatchObject({ workspace: 'changed', result: 'pass', workspace_error: '' });
    }
  });

  it('changed does not override a failing exit', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    expect((await run(repo, state, ['sh', '-c', 'echo x > a; exit 1'])).data).toMatchObject({ workspace: 'changed', result: 'fail' });
  });

  it('unknown when the command creates a top-level .aip', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    for (const script of ['mkdir .aip', 'touch .aip']) {
      const e = await run(repo, state, ['sh', '-c', script]);
      expect(e.data, script).toMatchObject({ workspace: 'unknown', result: 'unknown', workspace_error: 'the command created .aip in the evaluation directory', termination: 'exited' });
    }
  });

  it("unknown when the folder cannot be read, using the state's own ignore rules", async () => {
    const { repo, state } = await project({ '.aipignore': 'scratch/\n', 'a': 'a' });
    expect((await run(repo, state, ['sh', '-c', 'mkdir scratch && echo x > scratch/f'])).data.workspace).toBe('clean');
    const removed = await run(repo, state, ['sh', '-c', 'rm -rf "$PWD"']);
    expect(removed.data).toMatchObject({ workspace: 'unknown', result: 'unknown', termination: 'exited' });
    expect(removed.data.workspace_error).toMatch(/cannot read folder/);
    if (process.getuid?.() !== 0) {
      // Root reads anything, so only an ordinary user sees this one.
      const e = await run(repo, state, ['sh', '-c', 'mkdir locked && chmod 000 locked']);
      expect(e.data).toMatchObject({ workspace: 'unknown', result: 'unknown' });
    }
  });

  it('runs executables of the state with their mode', async () => {
    const { repo, state } = await project({ 'tool.sh': '#!/bin/sh\necho tool "$@"\n' }, ['tool.sh']);
    const e = await run(repo, state, ['./tool.sh', 'x']);
    expect(await content(repo, e.data.stdout.artifact)).toBe('tool x\n');
    expect(e.data).toMatchObject({ workspace: 'clean', result: 'pass' });
  });

  it('removes the evaluation folder unless kept', async () => {
    const { repo, state } = await project({ 'a': 'a' });
    const kept = await runEvidence(repo, { stateId: state, argv: ['sh', '-c', 'chmod 000 .'], kind: 'k', timeoutNs: 10_000_000_000n, outputLimit: 10, withOperations: true, keep: true });
    // No pid in a kept folder's name: a later run's sweep of killed runs' folders never takes it.
    expect(kept.evaluationDir).toMatch(/\/aip-run-[A-Za-z0-9]{6}$/);
    await chmod(kept.evaluationDir ?? '', 0o755);
    await rm(kept.evaluationDir ?? '', { recursive: true, force: true });
    const gone = await runEvidence(repo, { stateId: state, argv: ['sh', '-c', 'pwd; chmod 000 .'], kind: 'k', timeoutNs: 10_000_000_000n, outputLimit: 4096, withOperations: true, keep: false });
    expect(gone.evaluationDir).toBeUndefined();
    const dir = (await content(repo, gone.evidence.data.stdout.artifact)).trim();
    await expect(stat(join(dir))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('process helpers', () => {
  it('formats durations with the largest exact unit', () => {
    expect(formatDuration(5_000_000_000n)).toBe('5s');
    expect(formatDuration(300_000_000n)).toBe('300ms');
    expect(formatDuration(90_000_000_000n)).toBe('90s');
    expect(formatDuration(120_000_000_000n)).toBe('2m');
    expect(formatDuration(1n)).toBe('1ns');
  });

  it('skips relative PATH entries, which would depend on where aip was started, and finds the same program by an absolute one', async () => {
    const dir = await tempDir();
    const bin = await tempDir();
    await writeTree(bin, { prog: '#!/bin/sh\nexit 0\n' }, ['prog']);
    const run = (path: string) => execute({ argv: ['prog'], cwd: dir, timeoutNs: 10_000_000_000n, outputLimit: 100, path });
    expect(await run(relative(process.cwd(), bin))).toMatchObject({ termination: 'start_error', error: 'executable not found: prog', executable: '' });
    expect(await run(`:${relative(process.cwd(), bin)}`)).toMatchObject({ termination: 'start_error' });
    expect(await run(bin)).toMatchObject({ termination: 'exited', exitCode: 0, executable: join(bin, 'prog') });
  });

  it('sees no live group after a command and its children are gone', async () => {
    const dir = await tempDir();
    const result = await execute({ argv: ['sh', '-c', 'sleep 0.1 & echo started'], cwd: dir, timeoutNs: 10_000_000_000n, outputLimit: 100 });
    expect(result.termination).toBe('exited');
    expect(result.groupLingered).toBe(false);
    expect(await groupAlive(999_999_999)).toBe(false);
  });

  it('records a command that ended before its deadline was acted on as exited, not timeout', async () => {
    // The live copy blocks the runner's thread past the deadline while the
    // command exits: the deadline's timer then runs before the exit is seen,
    // and the kill it sends reaches only a dead child. Only a child the kill
    // ended (SIGKILL) timed out.
    const blocking = new Writable({
      write: (_chunk, _encoding, done) => {
        const until = Date.now() + 600;
        while (Date.now() < until) {
          // hold the event loop: the child exits and the deadline passes meanwhile
        }
        done();
      },
    });
    const result = await execute({
      argv: ['sh', '-c', 'echo x; sleep 0.1'], cwd: await tempDir(), timeoutNs: 300_000_000n, outputLimit: 100,
      tee: { stdout: blocking, stderr: blocking },
    });
    expect(result).toMatchObject({ termination: 'exited', exitCode: 0, error: '' });
  });

  it('leaves no grace timer behind once the pipes have ended', async () => {
    // A pending grace timer kept the process alive, so every `aip run` took the full grace to exit.
    const timers = (): number => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
    const before = timers();
    const result = await execute({ argv: ['true'], cwd: await tempDir(), timeoutNs: 10_000_000_000n, outputLimit: 100, graceMs: 60_000 });
    expect(result.termination).toBe('exited');
    expect(timers()).toBeLessThanOrEqual(before);
  });
});
