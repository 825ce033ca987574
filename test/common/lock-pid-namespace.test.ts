// Pids compare only within one PID namespace. Containers that share the host
// name (docker's host network, one Kubernetes pod, `unshare -p`) number their
// processes from 1 each, so a lock taken in another namespace names, by its
// pid, an unrelated process here (or none): judged stale, a live holder's
// lock was broken and aigpt's recovery removed the live compress's staged
// records. Such a lock is judged like one from another host (never stale).
// A holder that died but was not reaped (a zombie) answered kill(pid, 0) and
// blocked every writer until its parent called wait; it is gone. A `.lock`
// that exists but reads as nothing (a dangling symbolic link) made aigpt's
// writers spin at full CPU for ever; they now time out. Linux only.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireCollectionLock, LOCK_FILE } from '../../src/aigpt/storage/collection-lock.js';
import { withLock } from '../../src/aip/repository/lock.js';
import { OWNER_TAG_PATTERN, ownerTag, ownerTagGone, ownPidNamespace, processExists, processStartMark } from '../../src/common/process.js';

const onLinux = process.platform === 'linux' && ownPidNamespace() !== undefined && processStartMark(process.pid) !== undefined;

/** A PID namespace that is not ours (namespace ids are inode numbers; this one is made up). */
const OTHER_NAMESPACE = 'pid:[1]';
/** A pid no process has here: far above any pid_max in use. */
const NO_SUCH_PID = 4_194_000;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lock-pid-namespace-'));
  dirs.push(dir);
  return dir;
}

async function aipLockPath(): Promise<string> {
  const aip = join(await freshDir(), '.aip');
  await mkdir(aip);
  return join(aip, 'lock');
}

/** The pid of a process that has exited and is never reaped: its parent (`sleep`, after exec) never waits. */
async function zombie(): Promise<number> {
  // The child outlives the shell's own bookkeeping (a shell may reap a job that ended before its next command).
  const parent = spawn('/bin/sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(parent);
  const line = await new Promise<string>((resolve, reject) => {
    parent.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1').trim()));
    parent.once('error', reject);
  });
  const pid = Number(line);
  // Wait until /proc shows it as a zombie.
  for (let i = 0; i < 200; i++) {
    const state = await readFile(`/proc/${pid}/stat`, 'latin1').then((stat) => stat.charAt(stat.lastIndexOf(')') + 2), () => '');
    if (state === 'Z') return pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`process ${pid} did not become a zombie`);
}

const outcome = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'acquired',
    (error: unknown) => String((error as { code?: unknown }).code),
  );

const aigptLock = (pid: number, extra: Record<string, string> = {}): string => JSON.stringify({ pid, host: hostname(), started: new Date().toISOString(), nonce: '00', ...extra });
const aipLock = (pid: number, extra: Record<string, string> = {}): string => JSON.stringify({ pid, host: hostname(), since: new Date().toISOString(), ...extra });

describe.runIf(onLinux)('aigpt collection lock across PID namespaces', () => {
  it('never breaks a lock from another namespace, whatever its pid names here', async () => {
    const dir = await freshDir();
    const text = aigptLock(NO_SUCH_PID, { pidns: OTHER_NAMESPACE });
    await writeFile(join(dir, LOCK_FILE), text);
    expect(await outcome(acquireCollectionLock(dir, { timeoutMs: 300 }))).toBe('lock_timeout');
    expect(await readFile(join(dir, LOCK_FILE), 'utf8')).toBe(text);
  });

  it('still breaks a dead holder of its own namespace, and one that recorded none', async () => {
    for (const extra of [{ pidns: ownPidNamespace() as string }, {}]) {
      const dir = await freshDir();
      await writeFile(join(dir, LOCK_FILE), aigptLock(NO_SUCH_PID, extra));
      expect(await outcome(acquireCollectionLock(dir, { timeoutMs: 1_000 }).then((held) => held.release()))).toBe('acquired');
    }
  });

  it('records its own namespace in the locks it takes', async () => {
    const dir = await freshDir();
    const held = await acquireCollectionLock(dir);
    const content = JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8')) as Record<string, unknown>;
    await held.release();
    expect(content['pidns']).toBe(ownPidNamespace());
  });

  it('breaks the lock of a holder that died unreaped (a zombie)', async () => {
    const pid = await zombie();
    expect(processExists(pid)).toBe(false);
    const dir = await freshDir();
    await writeFile(join(dir, LOCK_FILE), aigptLock(pid, { proc: processStartMark(pid) as string, pidns: ownPidNamespace() as string }));
    expect(await outcome(acquireCollectionLock(dir, { timeoutMs: 1_000 }).then((held) => held.release()))).toBe('acquired');
  });

  it('times out on a `.lock` that is a dangling symbolic link instead of spinning', async () => {
    const dir = await freshDir();
    await symlink(join(dir, 'nowhere'), join(dir, LOCK_FILE));
    const started = process.cpuUsage();
    expect(await outcome(acquireCollectionLock(dir, { timeoutMs: 300 }))).toBe('lock_timeout');
    const used = process.cpuUsage(started);
    // Spinning burnt the whole wait on the CPU; waiting with back-off uses a small part of it.
    expect((used.user + used.system) / 1000).toBeLessThan(200);
  });
});

describe.runIf(onLinux)('aip repository lock across PID namespaces', () => {
  it('never breaks a lock from another namespace, whatever its pid names here', async () => {
    const lock = await aipLockPath();
    const text = aipLock(NO_SUCH_PID, { pidns: OTHER_NAMESPACE });
    await writeFile(lock, text);
    expect(await outcome(withLock(lock, async () => undefined, { waitMs: 300, pollMs: 10 }))).toBe('lock.timeout');
    expect(await readFile(lock, 'utf8')).toBe(text);
  });

  it('still breaks a dead holder of its own namespace, and one that recorded none', async () => {
    for (const extra of [{ pidns: ownPidNamespace() as string }, {}]) {
      const lock = await aipLockPath();
      await writeFile(lock, aipLock(NO_SUCH_PID, extra));
      expect(await outcome(withLock(lock, async () => undefined, { waitMs: 1_000, pollMs: 10 }))).toBe('acquired');
    }
  });

  it('records its own namespace in the lock it holds', async () => {
    const lock = await aipLockPath();
    const content = await withLock(lock, async () => JSON.parse(await readFile(lock, 'utf8')) as Record<string, unknown>);
    expect(content['pidns']).toBe(ownPidNamespace());
  });

  it('breaks the lock of a holder that died unreaped (a zombie)', async () => {
    const pid = await zombie();
    const lock = await aipLockPath();
    await writeFile(lock, aipLock(pid, { proc: processStartMark(pid) as string }));
    expect(await outcome(withLock(lock, async () => undefined, { waitMs: 1_000, pollMs: 10 }))).toBe('acquired');
  });
});

describe('owner tags of temp names', () => {
  it.runIf(onLinux)('carry the pid and namespace; only a gone owner of this namespace (or of none) is gone', () => {
    const namespace = /^pid:\[([0-9]+)\]$/.exec(ownPidNamespace() ?? '')?.[1];
    expect(ownerTag()).toBe(`${process.pid}.${namespace}`);
    const match = new RegExp(`^${OWNER_TAG_PATTERN}$`).exec(ownerTag());
    expect([match?.[1], match?.[2]]).toEqual([String(process.pid), namespace]);
    expect(ownerTagGone(String(process.pid), namespace)).toBe(false);
    expect(ownerTagGone(String(NO_SUCH_PID), namespace)).toBe(true);
    expect(ownerTagGone(String(NO_SUCH_PID), undefined)).toBe(true);
    expect(ownerTagGone(String(NO_SUCH_PID), '1')).toBe(false);
  });
});
