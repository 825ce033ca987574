// The runner's execute() on edges the evidence tests did not reach (mutation
// review BD): output arriving in several reads, the live copy of each pipe
// going to its own stream, and how the process group is killed.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { execute } from '../../../src/aip/runner/execute.js';
import { tempDir, writeTree } from '../support/temp.js';

const NODE = process.execPath;

describe('aip runner: capture over several reads', () => {
  it('counts every read toward the limit and keeps the first output_limit bytes across reads', async () => {
    // A pause of a second between the writes makes them two reads; were they
    // ever read as one (a stalled runner), the expectations below hold all the same.
    const script = "process.stdout.write('abc'); setTimeout(() => process.stdout.write('def'), 1000)";
    const over = await execute({ argv: [NODE, '-e', script], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 5 });
    expect(over.termination).toBe('exited');
    expect(Buffer.from(over.stdout.bytes).toString()).toBe('abcde');
    expect(over.stdout.truncated).toBe(true);
    // Six bytes in reads of one: the last read alone is not what decides truncation.
    const tail = "process.stdout.write('abcdef'); setTimeout(() => process.stdout.write('g'), 1000)";
    const longer = await execute({ argv: [NODE, '-e', tail], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 5 });
    expect(Buffer.from(longer.stdout.bytes).toString()).toBe('abcde');
    expect(longer.stdout.truncated).toBe(true);
  });
});

describe('aip runner: --tee', () => {
  it('copies stdout to the stdout stream and stderr to the stderr stream', async () => {
    const seen = { out: '', err: '' };
    const sink = (name: 'out' | 'err'): Writable => new Writable({ write: (chunk: Buffer, _enc, done) => { seen[name] += chunk.toString(); done(); } });
    const result = await execute({
      argv: [NODE, '-e', "process.stdout.write('to-out'); process.stderr.write('to-err')"], cwd: await tempDir(), timeoutNs: 30_000_000_000n,
      outputLimit: 100, tee: { stdout: sink('out'), stderr: sink('err') },
    });
    expect(result.termination).toBe('exited');
    expect(seen).toEqual({ out: 'to-out', err: 'to-err' });
  });
});

describe('aip runner: argv[0] and termination', () => {
  it('gives the command argv[0] as written, not the resolved path', async () => {
    const result = await execute({ argv: ['sh', '-c', 'cat /proc/$$/cmdline'], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 100 });
    expect(result).toMatchObject({ termination: 'exited', exitCode: 0 });
    expect(result.executable).toMatch(/^\/.*\/sh$/);
    expect(Buffer.from(result.stdout.bytes).toString().split('\0')[0]).toBe('sh');
  });

  it('a command that kills itself with SIGKILL before its deadline is signaled, not timeout', async () => {
    const result = await execute({ argv: ['sh', '-c', 'kill -KILL $$'], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 100 });
    expect(result).toMatchObject({ termination: 'signaled', exitCode: null, error: 'terminated by signal SIGKILL' });
  });
});

describe('aip runner: a deadline beyond one timer', () => {
  it('does not expire when the first 24.8-day timer step runs out', async () => {
    // setTimeout holds at most 2^31-1 ms; a longer deadline is re-armed for the
    // rest. Only the global setTimeout is faked, so the command itself, and the
    // runner's own waits (timers/promises), stay real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const controller = new AbortController();
    let running: Promise<Awaited<ReturnType<typeof execute>>>;
    try {
      running = execute({ argv: ['sleep', '30'], cwd: await tempDir(), timeoutNs: 30n * 86_400_000_000_000n, outputLimit: 16, signal: controller.signal, graceMs: 200 });
      while (vi.getTimerCount() === 0) await sleep(10); // the deadline is armed once the command started
      vi.advanceTimersByTime(2_147_483_647);
    } finally {
      vi.useRealTimers();
    }
    await sleep(1000); // an expired deadline would have killed the command by now
    controller.abort('SIGINT');
    expect(await running).toMatchObject({ termination: 'cancelled', error: 'cancelled by SIGINT' });
  });
});

describe('aip runner: the deadline after the command ended', () => {
  it('is cleared: no timer of the run is left to keep aip alive or to kill a group later', async () => {
    // A deadline left armed held `aip run` open until it expired, then sent
    // SIGKILL to a process group id that may have been reused by then.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const result = await execute({ argv: ['true'], cwd: await tempDir(), timeoutNs: 600_000_000_000n, outputLimit: 16, graceMs: 200 });
      expect(result.termination).toBe('exited');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

async function living(pid: number): Promise<boolean> {
  return readFile(`/proc/${pid}/stat`, 'utf8').then((text) => !/^\S+ \(.*\) [ZX] /s.test(text), () => false);
}

describe('aip runner: what the command leaves behind', () => {
  it('waits for both pipes: stdout held a moment longer than stderr by a process outside the group is still captured', async () => {
    // The holder left the group (setsid) so the group kill misses it; it
    // closes stdout by itself well within the grace period.
    // The command waits until the holder has left, or the group kill could reach it first.
    const pidFile = join(await tempDir(), 'holder.pid');
    const holder = 'echo $$ > "$1"; sleep 0.5; echo late';
    const script = `setsid sh -c '${holder}' holder "$1" 2>/dev/null </dev/null & while [ ! -s "$1" ]; do sleep 0.05; done`;
    const result = await execute({ argv: ['sh', '-c', script, 'run', pidFile], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 100, graceMs: 10_000 });
    expect(result).toMatchObject({ termination: 'exited', exitCode: 0, error: '' });
    expect(Buffer.from(result.stdout.bytes).toString()).toBe('late\n');
  });

  it('kills a background member of the group at once instead of waiting out the grace period for it', async () => {
    const began = performance.now();
    const result = await execute({ argv: ['sh', '-c', 'sleep 30 >/dev/null 2>&1 </dev/null &'], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 16, graceMs: 8000 });
    expect(result).toMatchObject({ termination: 'exited', exitCode: 0, groupLingered: false });
    expect(performance.now() - began).toBeLessThan(6000);
  });

  it('kills a job of the session in a group of its own that works outside the folder, without counting it as escaped', async () => {
    const pidFile = join(await tempDir(), 'job.pid');
    const script = 'set -m; cd /; sleep 30 >/dev/null 2>&1 </dev/null & echo $! > "$1"';
    const result = await execute({ argv: ['bash', '-c', script, 'job', pidFile], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 16, graceMs: 200 });
    const job = Number(await readFile(pidFile, 'utf8'));
    const alive = await living(job);
    if (alive) process.kill(job, 'SIGKILL'); // not left behind by this test either
    expect(alive).toBe(false);
    expect(result).toMatchObject({ termination: 'exited', exitCode: 0, escaped: 0 });
  });
});

describe('aip runner: PATH lookup', () => {
  it('passes over a folder of the program\'s name in an earlier PATH entry, as execvp does', async () => {
    const early = await tempDir();
    const late = await tempDir();
    await mkdir(join(early, 'prog'), { mode: 0o755 });
    await writeTree(late, { prog: '#!/bin/sh\nexit 0\n' }, ['prog']);
    const result = await execute({ argv: ['prog'], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 16, path: `${early}:${late}` });
    expect(result).toMatchObject({ termination: 'exited', exitCode: 0, executable: join(late, 'prog') });
  });
});

describe('aip runner: a cancel after the deadline', () => {
  it('is cancelled, not timeout, when the signal comes while the pipes are still awaited (spec 8 step 8 order)', async () => {
    // The deadline kills the group; a holder outside it keeps stdout open, so
    // the runner is still waiting when the cancel arrives.
    const files = await tempDir();
    const holderFile = join(files, 'holder.pid');
    const leaderFile = join(files, 'leader.pid');
    const script = `echo $$ > "$2"; setsid sh -c 'echo $$ > "$1"; exec sleep 30' holder "$1" 2>/dev/null </dev/null & exec sleep 30`;
    const controller = new AbortController();
    const running = execute({
      argv: ['sh', '-c', script, 'run', holderFile, leaderFile], cwd: await tempDir(), timeoutNs: 500_000_000n, outputLimit: 16,
      signal: controller.signal, graceMs: 30_000,
    });
    const pidIn = async (file: string): Promise<number> => Number(await readFile(file, 'utf8').catch(() => '0'));
    // Cancel only once the deadline's kill ended the command and the holder is alive.
    for (;;) {
      const leader = await pidIn(leaderFile);
      const holder = await pidIn(holderFile);
      if (leader > 0 && holder > 0 && !(await living(leader)) && (await living(holder))) break;
      await sleep(20);
    }
    controller.abort('SIGINT');
    const result = await running;
    const holder = await pidIn(holderFile);
    if (await living(holder)) process.kill(holder, 'SIGKILL'); // not left behind by this test either
    expect(result).toMatchObject({ termination: 'cancelled', error: 'cancelled by SIGINT' });
  });
});

describe('aip runner: a zombie left in the group', () => {
  it('is no live member: the group is not reported as lingering', async () => {
    // A member of the command's group whose parent (a job in another group,
    // which the group kill does not reach) never reaps it stays a zombie; it
    // holds no pipe and changes no file, so the workspace is still judged.
    const perl = 'if (fork() == 0) { setpgrp(0, $ARGV[0]); exit 0 } close STDOUT; close STDERR; sleep 30';
    const script = `set -m; perl -e '${perl}' $$ & sleep 1`;
    const result = await execute({ argv: ['bash', '-c', script], cwd: await tempDir(), timeoutNs: 30_000_000_000n, outputLimit: 16, graceMs: 1000 });
    expect(result).toMatchObject({ termination: 'exited', exitCode: 0, groupLingered: false });
  });
});
