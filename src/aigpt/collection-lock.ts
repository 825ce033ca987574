// The writers' lock of one collection folder (spec 7.3): a `.lock` file whose
// content names the holder. Published by hard link so it is never seen empty;
// a holder that died on this host (or before the last boot) is stale and is
// broken. Owns only `.lock` and its own `.lock.*` helper files.

import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { hostname as osHostname, uptime } from 'node:os';
import { join } from 'node:path';
import { AigptError, errnoCode } from './errors.js';
import { LOCK_TIMEOUT_MS } from './limits.js';

export const LOCK_FILE = '.lock';

export interface LockOptions {
  readonly timeoutMs?: number;
  readonly pid?: number;
  readonly hostname?: string;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly isProcessAlive?: (pid: number) => boolean;
  /** Milliseconds since the epoch when this machine booted; locks older than that are stale. */
  readonly bootTimeMs?: () => number;
}

interface LockContent {
  readonly pid: number;
  readonly host: string;
  readonly started: string;
  readonly nonce: string;
}

export interface LockHandle {
  release(): Promise<void>;
}

export function defaultIsProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errnoCode(error) !== 'ESRCH';
  }
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function acquireCollectionLock(dir: string, options: LockOptions = {}): Promise<LockHandle> {
  const pid = options.pid ?? process.pid;
  const host = options.hostname ?? osHostname();
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? defaultSleep;
  const timeoutMs = options.timeoutMs ?? LOCK_TIMEOUT_MS;
  const nonce = randomBytes(8).toString('hex');
  const content: LockContent = { pid, host, started: new Date(now()).toISOString(), nonce };
  const text = JSON.stringify(content);
  const lockPath = join(dir, LOCK_FILE);
  // Not `.*.tmp-*`: recovery, which runs under the lock, must not delete a
  // waiter's pending file.
  const pending = join(dir, `${LOCK_FILE}.${pid}.${nonce}.pending`);
  const deadline = now() + timeoutMs;
  let delay = 1;
  let holder: LockContent | undefined;

  await fs.writeFile(pending, text, { flag: 'wx' });
  try {
    for (;;) {
      if (await tryPublish(pending, lockPath, text)) {
        return { release: () => releaseLock(lockPath, nonce) };
      }
      const seen = await readLock(lockPath);
      if (seen === 'gone') continue;
      holder = seen === 'unreadable' ? undefined : seen.content;
      if (seen !== 'unreadable' && isStale(seen.content, host, options)) {
        await breakStaleLock(dir, lockPath, seen.raw, nonce);
        continue;
      }
      if (now() >= deadline) {
        const who = holder === undefined ? 'an unknown process' : `pid ${holder.pid}${holder.host === host ? '' : ` on ${holder.host}`}`;
        throw new AigptError('lock_timeout', `Failed to lock ${dir}: held by ${who}`, { retryable: true });
      }
      await sleep(delay + Math.random() * delay);
      delay = Math.min(delay * 2, 16);
    }
  } finally {
    await fs.rm(pending, { force: true });
  }
}

async function tryPublish(pending: string, lockPath: string, text: string): Promise<boolean> {
  try {
    await fs.link(pending, lockPath);
    return true;
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
  }
  // No hard links here: exclusive create; a reader may briefly see it empty.
  try {
    await fs.writeFile(lockPath, text, { flag: 'wx' });
    return true;
  } catch (error) {
    if (errnoCode(error) === 'EEXIST') return false;
    throw error;
  }
}

type SeenLock = { readonly raw: string; readonly content: LockContent } | 'gone' | 'unreadable';

async function readLock(lockPath: string): Promise<SeenLock> {
  let raw: string;
  try {
    raw = await fs.readFile(lockPath, 'utf8');
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return 'gone';
    throw error;
  }
  const content = parseLockContent(raw);
  return content === undefined ? 'unreadable' : { raw, content };
}

function parseLockContent(raw: string): LockContent | undefined {
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value !== 'object' || value === null) return undefined;
    const { pid, host, started, nonce } = value as Record<string, unknown>;
    if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
    if (typeof host !== 'string' || typeof started !== 'string' || typeof nonce !== 'string') return undefined;
    return { pid, host, started, nonce };
  } catch {
    return undefined;
  }
}

function isStale(content: LockContent, host: string, options: LockOptions): boolean {
  if (content.host !== host) return false;
  const bootTime = options.bootTimeMs?.() ?? Date.now() - uptime() * 1000;
  const started = Date.parse(content.started);
  // A lock from before the last boot names a pid that may have been reused.
  if (Number.isFinite(started) && started < bootTime - 60_000) return true;
  return !(options.isProcessAlive ?? defaultIsProcessAlive)(content.pid);
}

/**
 * Moves the stale lock aside and checks that what was moved is the lock we
 * judged stale; if another waiter broke it first and took a fresh lock in
 * between, that fresh lock is put back.
 */
async function breakStaleLock(dir: string, lockPath: string, judgedRaw: string, nonce: string): Promise<void> {
  const aside = join(dir, `${LOCK_FILE}.${nonce}.stale`);
  try {
    await fs.rename(lockPath, aside);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return;
    throw error;
  }
  const moved = await fs.readFile(aside, 'utf8').catch(() => judgedRaw);
  if (moved !== judgedRaw) {
    await fs.link(aside, lockPath).catch(() => undefined);
  }
  await fs.rm(aside, { force: true });
}

async function releaseLock(lockPath: string, nonce: string): Promise<void> {
  const seen = await readLock(lockPath);
  // Only remove the lock if it is still ours (it could have been judged stale and broken).
  if (seen !== 'gone' && seen !== 'unreadable' && seen.content.nonce === nonce) {
    await fs.rm(lockPath, { force: true });
  }
}
