import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireCollectionLock, LOCK_FILE } from '../../src/aigpt/collection-lock.js';
import { listDir, makeTempHome, type TempHome } from './support.js';

describe('collection lock', () => {
  let home: TempHome;
  let dir: string;
  beforeEach(async () => {
    home = makeTempHome();
    dir = join(home.root, 'memory');
    await fs.mkdir(dir);
  });
  afterEach(() => home.cleanup());

  const lockText = (pid: number, host = hostname(), started = new Date().toISOString()): string =>
    JSON.stringify({ pid, host, started, nonce: 'x' });

  it('is exclusive: a second writer waits until the first releases', async () => {
    const first = await acquireCollectionLock(dir);
    const content = JSON.parse(await fs.readFile(join(dir, LOCK_FILE), 'utf8')) as Record<string, unknown>;
    expect(content).toMatchObject({ pid: process.pid, host: hostname() });
    const order: string[] = [];
    const second = acquireCollectionLock(dir, {
      // The waiter's first back-off is where the holder finishes.
      sleep: async () => {
        order.push('waiting');
        await first.release();
        order.push('released');
      },
    });
    const handle = await second;
    order.push('acquired');
    expect(order).toEqual(['waiting', 'released', 'acquired']);
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('gives up after the timeout naming the holder', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(process.pid));
    let now = 1_000_000;
    const error = await acquireCollectionLock(dir, {
      now: () => now,
      sleep: async (ms) => {
        now += ms + 1000;
      },
    }).catch((e: unknown) => e);
    expect(String(error)).toContain(`Failed to lock ${dir}: held by pid ${process.pid}`);
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
  });

  it('never breaks a lock held on another host', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(1, 'elsewhere'));
    let now = 0;
    const error = await acquireCollectionLock(dir, { now: () => now, sleep: async () => void (now += 20_000), isProcessAlive: () => false }).catch(
      (e: unknown) => e,
    );
    expect(String(error)).toContain('held by pid 1 on elsewhere');
  });

  it('breaks the lock of a dead process on this host', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(424242));
    const handle = await acquireCollectionLock(dir, { isProcessAlive: (pid) => pid !== 424242 });
    expect(JSON.parse(await fs.readFile(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('breaks a lock taken before the last boot even if its pid is alive again', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(process.pid, hostname(), '2000-01-01T00:00:00.000Z'));
    const handle = await acquireCollectionLock(dir, { bootTimeMs: () => Date.parse('2020-01-01T00:00:00Z') });
    await handle.release();
  });

  it('release leaves a lock that is no longer ours alone', async () => {
    const handle = await acquireCollectionLock(dir);
    await fs.writeFile(join(dir, LOCK_FILE), lockText(process.pid));
    await handle.release();
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
  });
});
