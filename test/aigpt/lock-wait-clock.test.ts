// The collection lock's wait (spec 7.3: "wait with backoff up to 10 s") is
// measured on a monotonic clock: a wall clock stepped forwards must not end
// it at once, one stepped back must not stretch it by the size of the step.

import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { acquireCollectionLock, LOCK_FILE } from '../../src/aigpt/storage/collection-lock.js';
import { makeTempMemoryFolder, type TempHome } from './support.js';
import { steppableWallClock } from '../support/wall-clock.js';

describe('the collection lock wait while the wall clock steps', () => {
  let home: TempHome;
  let dir: string;
  beforeEach(async () => {
    ({ home, dir } = await makeTempMemoryFolder());
  });
  afterEach(() => {
    vi.restoreAllMocks();
    home.cleanup();
  });

  // A live process on this host that is not us, so its lock is never stale.
  const holderLock = (): string => JSON.stringify({ pid: process.ppid, host: hostname(), started: new Date().toISOString() });
  const outcome = (timeoutMs?: number): Promise<string> =>
    acquireCollectionLock(dir, timeoutMs === undefined ? {} : { timeoutMs }).then(
      async (handle) => {
        await handle.release();
        return 'acquired';
      },
      (e: unknown) => (e as Error).message,
    );

  it('keeps waiting after a forward step and takes the lock once the holder releases it', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), holderLock());
    const wall = steppableWallClock(3_600_000);
    const waiting = outcome(5_000);
    wall.step();
    const lock = join(dir, LOCK_FILE);
    setTimeout(() => void fs.rm(lock, { force: true }), 150);
    expect(await waiting).toBe('acquired');
  });

  it('still gives up within its timeout after a backward step', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), holderLock());
    const wall = steppableWallClock(-3_600_000);
    const waiting = outcome(300);
    wall.step();
    expect(await waiting).toBe(`Failed to lock ${dir}: held by pid ${process.ppid}`);
  }, 10_000);
});
