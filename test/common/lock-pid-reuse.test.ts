// A lock left by a process killed with kill -9 names a pid that a later,
// unrelated process may hold (a restarted container numbers its processes
// again from 1; a reboot reuses pids too). Both repository locks record the
// holder's start mark (boot id and start time, /proc/{pid}/stat) and judge a
// lock whose pid now runs a process with another mark stale, so such a lock
// does not block aigpt's writers or wedge an aip repository for as long as
// the unrelated process lives. A lock whose mark is the live process's own
// is still respected. Linux only (elsewhere /proc gives no mark).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireCollectionLock, LOCK_FILE } from '../../src/aigpt/storage/collection-lock.js';
import { withLock } from '../../src/aip/repository/lock.js';
import { processStartMark } from '../../src/common/process.js';

const onLinux = process.platform === 'linux' && processStartMark(process.pid) !== undefined;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A live process of this host that is not a lock holder (it stands for the later owner of a reused pid). */
async function unrelatedProcess(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
  children.push(child);
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child.pid as number;
}

async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lock-pid-reuse-'));
  dirs.push(dir);
  return dir;
}

/** The mark of a process that ran under `pid` earlier in this boot: same boot id, another start time. */
function earlierMark(pid: number): string {
  const [boot, ticks] = (processStartMark(pid) as string).split('/') as [string, string];
  return `${boot}/${BigInt(ticks) > 0n ? BigInt(ticks) - 1n : 1n}`;
}

const outcome = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'acquired',
    (error: unknown) => String((error as { code?: unknown }).code),
  );

describe.runIf(onLinux)('aigpt collection lock whose pid was reused', () => {
  it('breaks a lock whose pid now runs another process', async () => {
    const dir = await freshDir();
    const pid = await unrelatedProcess();
    await writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid, host: hostname(), started: new Date().toISOString(), nonce: '00', proc: earlierMark(pid) }));
    expect(await outcome(acquireCollectionLock(dir, { timeoutMs: 1_000 }).then((held) => held.release()))).toBe('acquired');
  });

  it('keeps a lock whose mark is the live process its pid names', async () => {
    const dir = await freshDir();
    const pid = await unrelatedProcess();
    await writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid, host: hostname(), started: new Date().toISOString(), nonce: '00', proc: processStartMark(pid) }));
    expect(await outcome(acquireCollectionLock(dir, { timeoutMs: 300 }))).toBe('lock_timeout');
  });

  it('records its own start mark in the locks it takes', async () => {
    const dir = await freshDir();
    const held = await acquireCollectionLock(dir);
    const content = JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8')) as Record<string, unknown>;
    await held.release();
    expect(content['proc']).toBe(processStartMark(process.pid));
  });
});

describe.runIf(onLinux)('aip repository lock whose pid was reused', () => {
  async function lockPath(): Promise<string> {
    const aip = join(await freshDir(), '.aip');
    await mkdir(aip);
    return join(aip, 'lock');
  }

  it('breaks a lock whose pid now runs another process', async () => {
    const lock = await lockPath();
    const pid = await unrelatedProcess();
    await writeFile(lock, JSON.stringify({ pid, host: hostname(), since: new Date().toISOString(), proc: earlierMark(pid) }));
    expect(await outcome(withLock(lock, async () => undefined, { waitMs: 1_000, pollMs: 10 }))).toBe('acquired');
  });

  it('keeps a lock whose mark is the live process its pid names', async () => {
    const lock = await lockPath();
    const pid = await unrelatedProcess();
    await writeFile(lock, JSON.stringify({ pid, host: hostname(), since: new Date().toISOString(), proc: processStartMark(pid) }));
    expect(await outcome(withLock(lock, async () => undefined, { waitMs: 300, pollMs: 10 }))).toBe('lock.timeout');
  });

  it('records its own start mark in the lock it holds', async () => {
    const lock = await lockPath();
    const content = await withLock(lock, async () => JSON.parse(await readFile(lock, 'utf8')) as Record<string, unknown>);
    expect(content['proc']).toBe(processStartMark(process.pid));
  });
});
