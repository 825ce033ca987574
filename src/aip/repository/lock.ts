// The repository write lock `.aip/lock` (spec 7.6): exclusive create (a hard
// link of a finished record), stale detection for dead processes on this
// host, bounded waiting. It guards HEAD moves and index rebuilds; object
// writes take it only in the rare case a rebuild overlapped them.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { link, open, readdir, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { constants } from 'node:fs';
import { AipError, notWritten } from '../core/errors.js';
import { removeOnInterrupt } from '../../common/interrupt-cleanup.js';
import { inOwnPidNamespace, lockHolderAlive, ownPidNamespace, processStartMark } from '../../common/process.js';
import { ownReadFailureText, readRegularText, readSmallTextNow, SMALL_METADATA_MAX_BYTES } from '../../common/regular-file.js';
import { errorCode } from '../../common/errors.js';

export interface LockOptions {
  /** How long to wait for another holder (default 10 s). */
  readonly waitMs?: number;
  readonly pollMs?: number;
}

async function readText(path: string): Promise<string | null> {
  try {
    return await readRegularText(path, SMALL_METADATA_MAX_BYTES);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    // A FIFO or an outsized file in the lock's place: no aip process made it, so it waits for a person.
    const refused = ownReadFailureText(error);
    if (refused !== undefined) throw new AipError('io', `cannot read .aip/${basename(path)}: ${refused} (remove it if no aip process is running)`, { cause: error });
    throw error;
  }
}

/** The lock file's text when its holder is a process gone from this host, else null. */
async function staleText(lockPath: string): Promise<string | null> {
  const text = await readText(lockPath);
  if (text === null) return null;
  let holder: unknown;
  try {
    holder = JSON.parse(text);
  } catch {
    return null; // being written right now, or damaged: wait rather than steal
  }
  if (typeof holder !== 'object' || holder === null) return null;
  const { pid, host, proc, pidns } = holder as { pid?: unknown; host?: unknown; proc?: unknown; pidns?: unknown };
  if (typeof pid !== 'number' || host !== hostname()) return null;
  // A pid of another PID namespace under the same host name (a container on the host's network) names another process here.
  if (!inOwnPidNamespace(typeof pidns === 'string' ? pidns : undefined)) return null;
  // Gone, or its pid now belongs to a later process (reused after a kill -9 and a restart).
  return lockHolderAlive(pid, typeof proc === 'string' ? proc : undefined) ? null : text;
}

/** Removes `path` only while it still holds `text` (never a lock someone has taken since); true when it did. */
async function removeIfUnchanged(path: string, text: string): Promise<boolean> {
  if ((await readText(path)) !== text) return false;
  await rm(path, { force: true });
  return true;
}

/**
 * Breaks the stale lock judged from `judged`, one breaker at a time: the
 * breaker holds `lock.break` (published like the lock itself) while it
 * re-reads the lock and removes it only if unchanged. A stale lock admits no
 * new holder, so an unchanged text is still the dead holder's lock.
 */
async function breakStaleLock(lockPath: string, judged: string, draft: string): Promise<boolean> {
  const breakPath = `${lockPath}.break`;
  try {
    await createLock(breakPath, draft);
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
    // Another breaker is at work, or died at it: clear its file only if it is gone.
    const deadBreaker = await staleText(breakPath);
    return deadBreaker !== null && (await removeIfUnchanged(breakPath, deadBreaker));
  }
  try {
    return await removeIfUnchanged(lockPath, judged);
  } finally {
    await rm(breakPath, { force: true });
  }
}

export async function withLock<T>(lockPath: string, work: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  // Monotonic: a wall-clock step must neither end the wait at once nor stretch it.
  const deadline = performance.now() + (options.waitMs ?? 10_000);
  const poll = options.pollMs ?? 50;
  // The holder's record is written to a private file first and then linked
  // to the lock path, which fails if the lock exists: the lock appears with its
  // content, so a crash can never leave an empty lock that looks "being written".
  const draft = `${lockPath}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  // Spec 7.6's record; pid and the millisecond make it unique among live holders.
  // `proc` (where /proc tells) names this process beyond its pid, so a later
  // process that reuses the pid does not keep a dead holder's lock alive.
  const proc = processStartMark(process.pid);
  const pidns = ownPidNamespace();
  const record = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString(), ...(proc === undefined ? {} : { proc }), ...(pidns === undefined ? {} : { pidns }) });
  // Ctrl-C, SIGTERM or SIGHUP ends the process as a crash would (HEAD moves
  // and index builds are crash-safe), minus the draft and the lock file. Both
  // are registered before they exist, so a signal the moment one is created
  // still removes it; the lock only while it holds our record.
  const releaseLockOnInterrupt = removeOnInterrupt(lockPath, () => readSmallTextNow(lockPath) === record);
  try {
    const releaseDraftOnInterrupt = removeOnInterrupt(draft);
    try {
      const handle = await open(draft, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
      try {
        await handle.write(record);
      } catch (error) {
        throw notWritten(`the lock record ${draft}`, error);
      } finally {
        await handle.close();
      }
      await takeLock(lockPath, draft, deadline, poll);
    } finally {
      await rm(draft, { force: true });
      releaseDraftOnInterrupt();
    }
    await removeDeadDrafts(lockPath);
    try {
      return await work();
    } finally {
      // Only our own lock: had it been broken (we were judged gone), another holder's stays.
      await removeIfUnchanged(lockPath, record);
    }
  } finally {
    releaseLockOnInterrupt();
  }
}

/**
 * Removes the drafts (`lock.{pid}.{hex}.tmp`) of waiters that died, e.g.
 * killed while waiting, which nothing else would ever remove. Run by the
 * holder; a draft goes only when it names a process gone from this host (the
 * staleness rule of the lock), so a live waiter's draft stays. Best effort.
 */
async function removeDeadDrafts(lockPath: string): Promise<void> {
  const dir = dirname(lockPath);
  const prefix = `${basename(lockPath)}.`;
  try {
    for (const name of await readdir(dir)) {
      if (!name.startsWith(prefix) || !/^[0-9]+\.[0-9a-f]+\.tmp$/.test(name.slice(prefix.length))) continue;
      const path = join(dir, name);
      const dead = await staleText(path);
      if (dead !== null) await removeIfUnchanged(path, dead);
    }
  } catch {
    // Left for the next holder.
  }
}

const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/** Creates the lock with the draft's content, failing with EEXIST if it exists. */
async function createLock(lockPath: string, draft: string): Promise<void> {
  try {
    await link(draft, lockPath);
    return;
  } catch (error) {
    if (!NO_HARD_LINKS.has(errorCode(error) ?? '')) throw error;
  }
  // A file system without hard links: exclusive create, then write (a crash in
  // between leaves an empty lock, which waiters do not steal; see D9).
  const handle = await open(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    await handle.writeFile(await readFile(draft));
  } catch (error) {
    throw notWritten(`the lock ${lockPath}`, error);
  } finally {
    await handle.close();
  }
}

async function takeLock(lockPath: string, draft: string, deadline: number, poll: number): Promise<void> {
  for (;;) {
    try {
      await createLock(lockPath, draft);
      return;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      // Retried at once only when a file went; a break file that cannot be
      // cleared (a live breaker, or one this host cannot judge) waits like a
      // held lock, deadline included, instead of spinning for ever.
      const stale = await staleText(lockPath);
      if (stale !== null && (await breakStaleLock(lockPath, stale, draft))) continue;
      if (performance.now() >= deadline) throw new AipError('lock.timeout', 'the repository is locked by another aip process (.aip/lock)');
      await sleep(poll);
    }
  }
}
