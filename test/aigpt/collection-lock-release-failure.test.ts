// A removal that fails (EACCES, EIO) when a hold or a wait ends: the `.lock`
// or pending file left behind names this process but no live hold or wait of
// it, so this same process's next lock breaks or sweeps it instead of waiting
// for itself or keeping it for as long as it runs.
import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { listDir, makeTempMemoryFolder, type TempHome } from './support.js';

/** Paths starting with `path` fail to be removed. */
const failing: { path: string | undefined } = { path: undefined };

vi.mock('node:fs', async (original) => {
  const actual = await original<typeof import('node:fs')>();
  const rm: typeof actual.promises.rm = (path, options) =>
    failing.path !== undefined && String(path).startsWith(failing.path)
      ? Promise.reject(Object.assign(new Error(`EACCES: permission denied, rm '${String(path)}'`), { code: 'EACCES' }))
      : actual.promises.rm(path, options);
  const promises = { ...actual.promises, rm };
  return { ...actual, promises, default: { ...actual, promises } };
});

const { acquireCollectionLock, LOCK_FILE } = await import('../../src/aigpt/storage/collection-lock.js');

describe('collection lock after a failed removal', () => {
  let home: TempHome;
  let dir: string;
  beforeEach(async () => {
    ({ home, dir } = await makeTempMemoryFolder());
  });
  afterEach(() => {
    failing.path = undefined;
    home.cleanup();
  });

  it('the next acquisition by the same process breaks the lock it could not remove', async () => {
    const first = await acquireCollectionLock(dir);
    failing.path = join(dir, LOCK_FILE);
    await expect(first.release()).rejects.toThrow(/EACCES/);
    failing.path = undefined;
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
    let now = 0;
    const second = await acquireCollectionLock(dir, { now: () => now, sleep: async () => void (now += 20_000) });
    await second.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('a pending file that cannot be removed once the lock is taken does not fail the acquisition', async () => {
    failing.path = join(dir, `${LOCK_FILE}.${process.pid}.`);
    const handle = await acquireCollectionLock(dir);
    failing.path = undefined;
    await handle.release();
    // The pending file is left for the next holder's sweep; no `.lock` stays behind.
    expect((await listDir(dir)).filter((name) => !name.endsWith('.pending'))).toEqual([]);
  });

  it('the next hold by the same process sweeps the pending file of its own wait that timed out', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid: process.ppid, host: hostname(), started: new Date().toISOString() }));
    failing.path = join(dir, `${LOCK_FILE}.${process.pid}.`);
    let now = 0;
    await expect(acquireCollectionLock(dir, { now: () => now, sleep: async () => void (now += 20_000) })).rejects.toThrow(`Failed to lock ${dir}: held by pid ${process.ppid}`);
    failing.path = undefined;
    const left = (await listDir(dir)).filter((name) => name !== LOCK_FILE);
    expect(left).toEqual([expect.stringMatching(/\.pending$/) as unknown as string]);
    await fs.rm(join(dir, LOCK_FILE));
    const handle = await acquireCollectionLock(dir);
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });
});
