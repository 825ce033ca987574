// The repository lock's bounded wait (spec 7.6) is measured on a monotonic
// clock: a wall clock stepped forwards must not end it at once, one stepped
// back must not stretch it by the size of the step.

import { mkdir, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withLock } from '../../src/aip/repository/lock.js';
import { tempDir } from './support/temp.js';
import { steppableWallClock } from '../support/wall-clock.js';

/** A lock held by a live process of this host that is not us, so it is never stale. */
async function heldLock(): Promise<string> {
  const dir = join(await tempDir(), '.aip');
  await mkdir(dir);
  const lock = join(dir, 'lock');
  await writeFile(lock, JSON.stringify({ pid: process.ppid, host: hostname(), since: new Date().toISOString() }));
  return lock;
}

const outcome = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'done',
    (error: unknown) => String((error as { code?: unknown }).code),
  );

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the repository lock wait while the wall clock steps', () => {
  it('keeps waiting after a forward step and runs once the holder releases the lock', async () => {
    const lock = await heldLock();
    const wall = steppableWallClock(3_600_000);
    const waiting = outcome(withLock(lock, async () => undefined, { waitMs: 5_000, pollMs: 10 }));
    wall.step();
    setTimeout(() => void rm(lock, { force: true }), 150);
    expect(await waiting).toBe('done');
  });

  it('still gives up within its wait after a backward step', async () => {
    const lock = await heldLock();
    const wall = steppableWallClock(-3_600_000);
    const waiting = outcome(withLock(lock, async () => undefined, { waitMs: 300, pollMs: 10 }));
    wall.step();
    expect(await waiting).toBe('lock.timeout');
  }, 10_000);
});
