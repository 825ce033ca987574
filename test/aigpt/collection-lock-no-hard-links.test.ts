// Where hard links are refused (EPERM on FAT and several FUSE file systems)
// the lock is published by exclusive create: it must stay exclusive, never
// replacing a live holder's `.lock`.
import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { listDir, makeTempMemoryFolder, type TempHome } from './support.js';

vi.mock('node:fs', async (original) => {
  const actual = await original<typeof import('node:fs')>();
  const link = (): Promise<void> => Promise.reject(Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' }));
  const promises = { ...actual.promises, link };
  return { ...actual, promises, default: { ...actual, promises } };
});

const { acquireCollectionLock, LOCK_FILE } = await import('../../src/aigpt/storage/collection-lock.js');

describe('collection lock where hard links are refused', () => {
  let home: TempHome;
  let dir: string;
  beforeEach(async () => {
    ({ home, dir } = await makeTempMemoryFolder());
  });
  afterEach(() => home.cleanup());

  it('takes a free lock by exclusive create and removes it on release', async () => {
    const handle = await acquireCollectionLock(dir);
    expect(JSON.parse(await fs.readFile(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('waits for a live holder and leaves its lock as it was', async () => {
    const held = JSON.stringify({ pid: process.ppid, host: hostname(), started: new Date().toISOString() });
    await fs.writeFile(join(dir, LOCK_FILE), held);
    let now = 0;
    const error = await acquireCollectionLock(dir, { now: () => now, sleep: async () => void (now += 20_000) }).catch((e: unknown) => e);
    expect((error as Error).message).toBe(`Failed to lock ${dir}: held by pid ${process.ppid}`);
    expect(await fs.readFile(join(dir, LOCK_FILE), 'utf8')).toBe(held);
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
  });
});
