// The repository write lock `.aip/lock` (spec 7.6): exclusive create, stale
// detection for dead processes on this host, bounded waiting. It guards HEAD
// moves and index rebuilds only; object writes need no lock.
import { hostname } from 'node:os';
import { open, readFile, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { constants } from 'node:fs';
import { AipError } from '../core/errors.js';
import { errorCode } from './object-store.js';

export interface LockOptions {
  /** How long to wait for another holder (default 10 s). */
  readonly waitMs?: number;
  readonly pollMs?: number;
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) !== 'ESRCH';
  }
}

async function isStale(lockPath: string): Promise<boolean> {
  let text: string;
  try {
    text = await readFile(lockPath, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
  let holder: unknown;
  try {
    holder = JSON.parse(text);
  } catch {
    return false; // being written right now, or damaged: wait rather than steal
  }
  if (typeof holder !== 'object' || holder === null) return false;
  const { pid, host } = holder as { pid?: unknown; host?: unknown };
  return typeof pid === 'number' && host === hostname() && !processExists(pid);
}

export async function withLock<T>(lockPath: string, work: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? 10_000);
  const poll = options.pollMs ?? 50;
  for (;;) {
    try {
      const handle = await open(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
      try {
        await handle.write(JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }));
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      if (await isStale(lockPath)) {
        await rm(lockPath, { force: true });
        continue;
      }
      if (Date.now() >= deadline) throw new AipError('lock.timeout', 'the repository is locked by another aip process (.aip/lock)');
      await sleep(poll);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lockPath, { force: true });
  }
}
