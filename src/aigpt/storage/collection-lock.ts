// The writers' lock of one collection folder (spec 7.3): a `.lock` file whose
// content names the holder. Published by hard link so it is never seen empty;
// a holder that died on this host (or before the last boot) is stale and is
// broken, one breaker at a time; the holder clears the pending files of
// waiters that died. Owns only `.lock` and its `.lock.*` helpers.

import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { hostname as osHostname, uptime } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { holdSignals, removeOnInterrupt } from '../../common/interrupt-cleanup.js';
import { inOwnPidNamespace, lockHolderAlive, ownPidNamespace, processExists, processStartMark } from '../../common/process.js';
import { readRegularText, readSmallTextNow, SMALL_METADATA_MAX_BYTES } from '../../common/regular-file.js';
import { AigptError, errnoCode } from '../core/errors.js';
import { LOCK_TIMEOUT_MS } from '../core/limits.js';

export const LOCK_FILE = '.lock';
/**
 * Held for the few system calls it takes to break a stale lock, so breakers
 * take turns: while a stale `.lock` exists nobody can publish a new one, so a
 * breaker that re-reads it and finds the content it judged stale can remove
 * it without ever removing a lock someone else just took.
 */
export const BREAK_FILE = '.lock.break';

export interface LockOptions {
  readonly timeoutMs?: number;
  /** How long this acquisition waits for a live holder (default timeoutMs, which also judges empty lock files). */
  readonly waitMs?: number;
  readonly pid?: number;
  readonly hostname?: string;
  /** Milliseconds on a monotonic clock, for the wait's deadline (a wall-clock step must not move it). */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly isProcessAlive?: (pid: number) => boolean;
  /** Milliseconds since the epoch when this machine booted; locks older than that are stale. */
  readonly bootTimeMs?: () => number;
}

/**
 * What a lock file says. Spec 7.3's format is `{"pid","host","started"}`; we
 * add a `nonce` to our own locks but never require one, and a member of the
 * wrong type is simply unknown.
 */
interface LockContent {
  readonly pid?: number;
  readonly host?: string;
  readonly started?: string;
  readonly nonce?: string;
  /** The holder's start mark (see processStartMark); aigpt's own locks carry it where /proc tells. */
  readonly proc?: string;
  /** The holder's PID namespace (see ownPidNamespace); a pid from another one is not judged here. */
  readonly pidns?: string;
}

export interface LockHandle {
  release(): Promise<void>;
  /**
   * Removes the pending files of dead waiters among `names` (entries of the
   * lock's folder), for a holder that took the lock with `sweepWaiters: false`
   * because its own pass over the folder finds them (see removeDeadWaitersFiles).
   */
  removeDeadWaiters(names: readonly string[]): Promise<void>;
}

/** Whether an entry of the lock's folder is a waiter's pending file (see acquireCollectionLock). */
export function isPendingLockName(name: string): boolean {
  return PENDING_NAME.test(name);
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Nonces of this process's lock attempts and holds. A lock or pending file
 * naming our own pid on our host with none of them was left by an earlier
 * process that had our pid (a container restarted after a kill -9 is pid 1
 * again under the same host name), so its process is gone although
 * `kill(pid, 0)` says alive: without this every write would wait for
 * ourselves and fail.
 */
const ownNonces = new Set<string>();

/**
 * With `sweepWaiters: false` the holder does not list the folder for dead
 * waiters' files: the caller lists it anyway and hands the names to
 * removeDeadWaiters (one pass of a folder of a million files takes seconds).
 */
export async function acquireCollectionLock(dir: string, options: LockOptions = {}, { sweepWaiters = true }: { readonly sweepWaiters?: boolean } = {}): Promise<LockHandle> {
  const pid = options.pid ?? process.pid;
  const host = options.hostname ?? osHostname();
  const now = options.now ?? (() => performance.now());
  const sleep = options.sleep ?? defaultSleep;
  const timeoutMs = options.timeoutMs ?? LOCK_TIMEOUT_MS;
  const nonce = randomBytes(8).toString('hex');
  // The start mark only for a lock naming this very process (tests may name another pid).
  const proc = pid === process.pid ? processStartMark(pid) : undefined;
  const pidns = pid === process.pid ? ownPidNamespace() : undefined;
  const text = JSON.stringify({ pid, host, started: new Date().toISOString(), nonce, ...(proc === undefined ? {} : { proc }), ...(pidns === undefined ? {} : { pidns }) });
  const lockPath = join(dir, LOCK_FILE);
  // Not `.*.tmp-*`: recovery, which runs under the lock, must not delete a
  // waiter's pending file.
  const pending = join(dir, `${LOCK_FILE}.${pid}.${nonce}.pending`);
  const deadline = now() + (options.waitMs ?? timeoutMs);
  let delay = 1;
  let goneInARow = 0;
  let acquired = false;

  ownNonces.add(nonce);
  // Ctrl-C or a polite kill while waiting removes the pending file; once the
  // lock is held, such a signal waits until the lock is released, so the
  // write it guards is never cut in half and no `.lock` stays behind.
  const releasePending = removeOnInterrupt(pending);
  // The lock too, registered before it can exist: a signal landing the moment
  // it is linked, before the hold below begins, still removes it (only while
  // it holds our record, never a lock another process took).
  const releaseLockOnInterrupt = removeOnInterrupt(lockPath, () => readSmallTextNow(lockPath) === text);
  try {
    await fs.writeFile(pending, text, { flag: 'wx' });
    for (;;) {
      if (await tryPublish(pending, lockPath, text)) {
        acquired = true;
        const releaseHold = holdSignals();
        // Never throws (best effort), so the handle below always goes out with the hold.
        if (sweepWaiters) await removeDeadWaitersFiles(dir, pending, host, options);
        return {
          removeDeadWaiters: (names) => removeDeadWaitersAmong(dir, names, pending, host, options),
          release: async () => {
            try {
              await releaseLock(lockPath, nonce);
            } finally {
              ownNonces.delete(nonce);
              releaseHold();
            }
          },
        };
      }
      const seen = await readLock(lockPath);
      // 'gone': released since our attempt, so retried at once; gone again
      // means a `.lock` that exists but reads as nothing (a dangling
      // symbolic link), waited for like a held lock rather than spun on.
      let holder: LockContent | undefined;
      if (seen === 'gone') {
        if (goneInARow++ === 0) continue;
      } else {
        goneInARow = 0;
        holder = seen.content;
        if ((await isAbandoned(lockPath, seen, host, options)) && (await breakStaleLock(dir, lockPath, seen.raw, { pending, text, host, options }))) continue;
      }
      if (now() >= deadline) {
        const who = holder?.pid === undefined ? 'an unknown process' : `pid ${holder.pid}`;
        throw new AigptError('lock_timeout', `Failed to lock ${dir}: held by ${who}`, { retryable: true });
      }
      await sleep(delay + Math.random() * delay);
      delay = Math.min(delay * 2, 16);
    }
  } finally {
    if (!acquired) ownNonces.delete(nonce);
    // Best effort: a throw here would lose a lock just taken (never released,
    // signals held) or hide the timeout; a leftover is swept by a later holder.
    await fs.rm(pending, { force: true }).catch(() => undefined);
    releasePending();
    // Held: the hold now defers any signal until the lock is released.
    releaseLockOnInterrupt();
  }
}

async function tryPublish(pending: string, target: string, text: string): Promise<boolean> {
  try {
    await fs.link(pending, target);
    return true;
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'EEXIST') return false;
    if (code === 'ENOENT') {
      // Our pending file is gone: a holder whose wall clock runs ahead of the file
      // system's saw it empty, just created, and took it for a dead waiter's
      // (removeDeadWaitersAmong). Written again; the caller looks at the lock and retries.
      await fs.writeFile(pending, text, { flag: 'wx' });
      return false;
    }
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
  }
  // No hard links here: exclusive create; a reader may briefly see it empty.
  try {
    await fs.writeFile(target, text, { flag: 'wx' });
    return true;
  } catch (error) {
    if (errnoCode(error) === 'EEXIST') return false;
    throw error;
  }
}

/** The raw text and, when it is a JSON object, what it says. */
type SeenLock = { readonly raw: string; readonly content: LockContent | undefined } | 'gone';

async function readLock(path: string): Promise<SeenLock> {
  let raw: string;
  try {
    // Never blocks: a FIFO named like a lock file fails the write instead of hanging every writer.
    raw = await readRegularText(path, SMALL_METADATA_MAX_BYTES);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return 'gone';
    throw error;
  }
  return { raw, content: parseLockContent(raw) };
}

function parseLockContent(raw: string): LockContent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { pid, host, started, nonce, proc, pidns } = value as Record<string, unknown>;
  return {
    ...(typeof pid === 'number' && Number.isSafeInteger(pid) && pid > 0 ? { pid } : {}),
    ...(typeof host === 'string' ? { host } : {}),
    ...(typeof started === 'string' ? { started } : {}),
    ...(typeof nonce === 'string' ? { nonce } : {}),
    ...(typeof proc === 'string' ? { proc } : {}),
    ...(typeof pidns === 'string' ? { pidns } : {}),
  };
}

/**
 * `started` as an instant, only when it says its zone (`Z` or `±hh:mm`):
 * Date.parse reads a time without one (`2026-12-01T04:00:00`, a writer's
 * naive local clock) in this process's TZ, so under TZ=Pacific/Kiritimati a
 * live holder's fresh lock looked 14 hours old, from before the last boot,
 * and was broken. Such a lock is judged by its process alone.
 */
function instantOf(started: string): number {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i.test(started) ? Date.parse(started) : NaN;
}

/**
 * Spec 7.3: same host and the process is gone. A lock naming no pid or no
 * host is never stale, nor is one taken in another PID namespace under the
 * same host name (a container on the host's network): its pid means another
 * process here, and breaking it let a live compress lose its staged records.
 */
function isStale(content: LockContent, host: string, options: LockOptions): boolean {
  if (content.pid === undefined || content.host !== host || !inOwnPidNamespace(content.pidns)) return false;
  // Another process now runs under the holder's pid (reused after a kill -9 and a restart): the holder is gone.
  if (content.proc !== undefined && !lockHolderAlive(content.pid, content.proc, options.isProcessAlive ?? processExists)) return true;
  if (content.pid === (options.pid ?? process.pid)) return content.nonce === undefined || !ownNonces.has(content.nonce);
  // The very process that took it, in this boot (the mark holds the boot id): alive, whatever
  // `started` says; a wall clock stepped forward during the hold made it look older than the boot.
  if (content.proc !== undefined && processStartMark(content.pid) === content.proc) return false;
  const bootTime = options.bootTimeMs?.() ?? Date.now() - uptime() * 1000;
  const started = content.started === undefined ? NaN : instantOf(content.started);
  // A lock from before the last boot names a pid that may have been reused.
  if (Number.isFinite(started) && started < bootTime - 60_000) return true;
  return !(options.isProcessAlive ?? processExists)(content.pid);
}

/**
 * Whether the holder of a lock or break file is gone: judged by what the
 * file says (isStale) or, when it is empty, by its age. Where hard links
 * are unavailable such a file is created and then written (tryPublish), so
 * a holder killed (or out of space) in between leaves it empty, naming
 * nobody, and every writer would wait for it for ever; no live holder
 * leaves it empty for twice the lock timeout.
 */
async function isAbandoned(path: string, seen: { readonly raw: string; readonly content: LockContent | undefined }, host: string, options: LockOptions): Promise<boolean> {
  if (seen.content !== undefined) return isStale(seen.content, host, options);
  if (seen.raw !== '') return false;
  try {
    return (await fs.lstat(path)).mtimeMs < Date.now() - 2 * (options.timeoutMs ?? LOCK_TIMEOUT_MS);
  } catch {
    return false;
  }
}

interface Breaker {
  readonly pending: string;
  readonly text: string;
  readonly host: string;
  readonly options: LockOptions;
}

/**
 * Removes the lock judged stale, if it is still that lock, while holding
 * BREAK_FILE. Returns false when another waiter holds BREAK_FILE (its holder
 * finishes within a few system calls, or died and its file is cleared here).
 */
async function breakStaleLock(dir: string, lockPath: string, judgedRaw: string, self: Breaker): Promise<boolean> {
  const breakPath = join(dir, BREAK_FILE);
  if (!(await tryPublish(self.pending, breakPath, self.text))) {
    const other = await readLock(breakPath);
    if (other !== 'gone' && (await isAbandoned(breakPath, other, self.host, self.options))) {
      await removeIfUnchanged(breakPath, other.raw);
    }
    return false;
  }
  try {
    await removeIfUnchanged(lockPath, judgedRaw);
  } finally {
    await fs.rm(breakPath, { force: true });
  }
  return true;
}

/** `.lock.{pid}.{nonce}.pending`: a waiter's lock content (see acquireCollectionLock). */
const PENDING_NAME = /^\.lock\.[0-9]+\.[0-9a-f]+\.pending$/;

/**
 * Removes the pending files of waiters that died (kill -9 while waiting),
 * which nothing else would ever remove. Run by the lock's holder: a pending
 * file is removed only when its content names this host and a process that
 * is gone (the staleness rule of a lock), so a live waiter's is never
 * touched. A waiter killed between creating its file and writing it leaves
 * it empty, naming nobody: such a file is removed once it is older than
 * twice the lock timeout, which no live waiter outlasts. Best effort: the
 * lock is held either way.
 */
async function removeDeadWaitersFiles(dir: string, own: string, host: string, options: LockOptions): Promise<void> {
  const pending: string[] = [];
  try {
    // Streamed: the lock's folder is the memory folder, which may hold millions of names.
    for await (const dirent of await fs.opendir(dir, { bufferSize: 256 })) {
      if (PENDING_NAME.test(dirent.name)) pending.push(dirent.name);
    }
  } catch {
    // A folder that cannot be listed now is left for the next holder.
    return;
  }
  await removeDeadWaitersAmong(dir, pending, own, host, options);
}

/** The sweep of removeDeadWaitersFiles over names already listed; best effort, never throws. */
async function removeDeadWaitersAmong(dir: string, names: readonly string[], own: string, host: string, options: LockOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? LOCK_TIMEOUT_MS;
  try {
    for (const name of names) {
      if (!PENDING_NAME.test(name) || join(dir, name) === own) continue;
      const path = join(dir, name);
      const seen = await readLock(path);
      if (seen === 'gone') continue;
      const dead =
        seen.content === undefined ? (await fs.lstat(path)).mtimeMs < Date.now() - 2 * timeoutMs : isStale(seen.content, host, options);
      if (dead) await removeIfUnchanged(path, seen.raw);
    }
  } catch {
    // A file that cannot be read now is left for the next holder.
  }
}

async function removeIfUnchanged(path: string, raw: string): Promise<void> {
  const seen = await readLock(path);
  if (seen !== 'gone' && seen.raw === raw) await fs.rm(path, { force: true });
}

async function releaseLock(lockPath: string, nonce: string): Promise<void> {
  const seen = await readLock(lockPath);
  // Only remove the lock if it is still ours (it could have been judged stale and broken).
  if (seen !== 'gone' && seen.content?.nonce === nonce) {
    await fs.rm(lockPath, { force: true });
  }
}
