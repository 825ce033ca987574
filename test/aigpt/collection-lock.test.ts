import { promises as fs, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireCollectionLock, BREAK_FILE, LOCK_FILE, type LockOptions } from '../../src/aigpt/storage/collection-lock.js';
import { LOCK_TIMEOUT_MS } from '../../src/aigpt/core/limits.js';
import { processStartMark } from '../../src/common/process.js';
import { listDir, makeTempMemoryFolder, type TempHome } from './support.js';

describe('collection lock', () => {
  let home: TempHome;
  let dir: string;
  beforeEach(async () => {
    ({ home, dir } = await makeTempMemoryFolder());
  });
  afterEach(() => home.cleanup());

  // A live process on this host that is not us (a lock naming our own pid is
  // ours or left by an earlier process with our pid, see below).
  const LIVE = process.ppid;
  // Spec 7.3's format: no nonce (that is an extra of our own locks).
  const lockText = (pid: number, host = hostname(), started = new Date().toISOString()): string => JSON.stringify({ pid, host, started });
  /** Options whose clock jumps past the timeout at the first back-off. */
  const impatient = (extra: LockOptions = {}): LockOptions => {
    let now = 1_000_000;
    return { now: () => now, sleep: async () => void (now += 20_000), ...extra };
  };
  const failure = (options: LockOptions): Promise<string> =>
    acquireCollectionLock(dir, options).then(
      () => 'acquired',
      (e: unknown) => (e as Error).message,
    );

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
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE));
    let now = 1_000_000;
    const error = await acquireCollectionLock(dir, {
      now: () => now,
      sleep: async (ms) => {
        now += ms + 1000;
      },
    }).catch((e: unknown) => e);
    expect(String(error)).toContain(`Failed to lock ${dir}: held by pid ${LIVE}`);
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
  });

  it('waits for a live holder exactly waitMs, not the whole timeout; a wait of 0 tries once', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE));
    let now = 0;
    const waited = await acquireCollectionLock(dir, { waitMs: 3_000, now: () => now, sleep: async () => void (now += 1_000) }).catch((e: unknown) => e);
    expect((waited as Error).message).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    expect(now).toBe(3_000);
    let sleeps = 0;
    const once = await acquireCollectionLock(dir, { waitMs: 0, now: () => 5, sleep: async () => void sleeps++ }).catch((e: unknown) => e);
    expect((once as Error).message).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    expect(sleeps).toBe(0);
  });

  it('backs off between attempts, never spinning and never for more than a few milliseconds at a time', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE));
    let now = 0;
    const sleeps: number[] = [];
    const error = await acquireCollectionLock(dir, {
      now: () => now,
      sleep: async (ms) => {
        sleeps.push(ms);
        now += 500;
      },
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    // The delay doubles from 1 ms up to 16 ms, and a random part up to as much again.
    expect(sleeps.length).toBe(20);
    expect(Math.min(...sleeps)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...sleeps)).toBeLessThan(32);
    expect(sleeps.slice(4).every((ms) => ms >= 16)).toBe(true);
  });

  it('never breaks a lock held on another host', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(1, 'elsewhere'));
    let now = 0;
    const error = await acquireCollectionLock(dir, { now: () => now, sleep: async () => void (now += 20_000), isProcessAlive: () => false }).catch(
      (e: unknown) => e,
    );
    expect((error as Error).message).toBe(`Failed to lock ${dir}: held by pid 1`);
  });

  it('accepts the spec format and fails with exactly the spec message while its holder lives', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE));
    expect(await failure(impatient())).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    // A lock that names its pid but no host cannot be judged; the pid is still named.
    await fs.writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid: 7 }));
    expect(await failure(impatient({ isProcessAlive: () => false }))).toBe(`Failed to lock ${dir}: held by pid 7`);
    // Pid 0 names no process (kill(0, 0) signals our own group): unknown, never judged.
    await fs.writeFile(join(dir, LOCK_FILE), JSON.stringify({ pid: 0, host: hostname() }));
    expect(await failure(impatient({ isProcessAlive: () => false }))).toBe(`Failed to lock ${dir}: held by an unknown process`);
    await fs.writeFile(join(dir, LOCK_FILE), 'not json');
    expect(await failure(impatient())).toBe(`Failed to lock ${dir}: held by an unknown process`);
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
  });

  it('never removes a lock that another process took after this one judged the old lock stale', async () => {
    const lockPath = join(dir, LOCK_FILE);
    await fs.writeFile(lockPath, lockText(424242));
    const fresh = lockText(LIVE);
    const message = await failure(
      impatient({
        isProcessAlive: (pid) => {
          // Between judging 424242 dead and breaking its lock, someone else broke it and took the lock.
          if (pid === 424242) writeFileSync(lockPath, fresh);
          return pid !== 424242;
        },
      }),
    );
    expect(message).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    expect(await fs.readFile(lockPath, 'utf8')).toBe(fresh);
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
  });

  it('breakers take turns: a live breaker is waited for, a dead one is cleared', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(424242));
    await fs.writeFile(join(dir, BREAK_FILE), lockText(LIVE));
    const alive = (pid: number): boolean => pid !== 424242 && pid !== 525252;
    expect(await failure(impatient({ isProcessAlive: alive }))).toBe(`Failed to lock ${dir}: held by pid 424242`);
    expect(await listDir(dir)).toEqual([LOCK_FILE, BREAK_FILE].sort());
    await fs.writeFile(join(dir, BREAK_FILE), lockText(525252));
    const handle = await acquireCollectionLock(dir, { isProcessAlive: alive });
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('breaks the lock of a dead process on this host (spec format, no nonce)', async () => {
    await fs.writeFile(join(dir, LOCK_FILE), lockText(424242));
    const handle = await acquireCollectionLock(dir, { isProcessAlive: (pid) => pid !== 424242 });
    expect(JSON.parse(await fs.readFile(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('breaks a lock naming our own pid that this process does not hold (a restarted container is pid 1 again), never one it holds', async () => {
    // Spec format and our own format with someone else's nonce: an earlier process with our pid left them.
    for (const text of [lockText(process.pid), JSON.stringify({ pid: process.pid, host: hostname(), started: new Date().toISOString(), nonce: 'aa' })]) {
      await fs.writeFile(join(dir, LOCK_FILE), text);
      const handle = await acquireCollectionLock(dir, impatient());
      await handle.release();
      expect(await listDir(dir)).toEqual([]);
    }
    const held = await acquireCollectionLock(dir);
    expect(await failure(impatient())).toBe(`Failed to lock ${dir}: held by pid ${process.pid}`);
    await held.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('breaks a lock taken before the last boot even if its pid is alive again', async () => {
    // Another live pid (not ours, which a rule of its own breaks), with no start mark to tell it apart.
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE, hostname(), '2000-01-01T00:00:00.000Z'));
    const handle = await acquireCollectionLock(dir, impatient({ bootTimeMs: () => Date.parse('2020-01-01T00:00:00Z'), isProcessAlive: () => true }));
    expect(JSON.parse(await fs.readFile(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    await handle.release();
    // Taken after the boot, the same lock holds.
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE, hostname(), new Date().toISOString()));
    expect(await failure(impatient({ bootTimeMs: () => Date.parse('2020-01-01T00:00:00Z'), isProcessAlive: () => true }))).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    // The boot time is read from an uptime in whole seconds: a minute before it still counts as this boot.
    const boot = Date.parse('2020-01-01T00:00:00Z');
    const options = impatient({ bootTimeMs: () => boot, isProcessAlive: () => true });
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE, hostname(), new Date(boot - 30_000).toISOString()));
    expect(await failure(options)).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE, hostname(), new Date(boot - 61_000).toISOString()));
    await (await acquireCollectionLock(dir, options)).release();
  });

  // The boot rule is for pids reused since; a start mark naming this boot and the live process rules that out.
  it.skipIf(processStartMark(LIVE) === undefined)('never breaks the lock of a live holder whose start mark matches, however old its started time looks', async () => {
    const text = JSON.stringify({ pid: LIVE, host: hostname(), started: '2000-01-01T00:00:00.000Z', proc: processStartMark(LIVE) });
    await fs.writeFile(join(dir, LOCK_FILE), text);
    expect(await failure(impatient({ bootTimeMs: () => Date.parse('2020-01-01T00:00:00Z') }))).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
    expect(await fs.readFile(join(dir, LOCK_FILE), 'utf8')).toBe(text);
  });

  it('a started time without a zone does not make a live holder\'s lock stale, whatever TZ says', async () => {
    // Written by a clock without zone: "now" in UTC. Read in +14:00 it would be 14 hours old, before a boot an hour ago.
    const naiveNow = new Date().toISOString().slice(0, 19);
    const zone = process.env['TZ'];
    process.env['TZ'] = 'Pacific/Kiritimati';
    try {
      await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE, hostname(), naiveNow));
      expect(await failure(impatient({ bootTimeMs: () => Date.now() - 3_600_000 }))).toBe(`Failed to lock ${dir}: held by pid ${LIVE}`);
      expect(await listDir(dir)).toEqual([LOCK_FILE]);
    } finally {
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    }
  });

  // Where hard links are unavailable a lock is created, then written: a holder killed in between leaves it empty.
  it('breaks an empty lock or break file once it is older than twice the timeout, never a fresh one', async () => {
    const hourAgo = new Date(Date.now() - 3_600_000);
    await fs.writeFile(join(dir, LOCK_FILE), '');
    expect(await failure(impatient())).toBe(`Failed to lock ${dir}: held by an unknown process`);
    // Older than the timeout but not twice it: a holder may still be about to write it.
    const between = new Date(Date.now() - 1.5 * LOCK_TIMEOUT_MS);
    await fs.utimes(join(dir, LOCK_FILE), between, between);
    expect(await failure(impatient())).toBe(`Failed to lock ${dir}: held by an unknown process`);
    await fs.utimes(join(dir, LOCK_FILE), hourAgo, hourAgo);
    await fs.writeFile(join(dir, BREAK_FILE), '');
    await fs.utimes(join(dir, BREAK_FILE), hourAgo, hourAgo);
    const handle = await acquireCollectionLock(dir, impatient());
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });

  it('release leaves a lock that is no longer ours alone', async () => {
    const handle = await acquireCollectionLock(dir);
    await fs.writeFile(join(dir, LOCK_FILE), lockText(process.pid));
    await handle.release();
    expect(await listDir(dir)).toEqual([LOCK_FILE]);
  });

  it('the holder clears the pending files of waiters that died, never a live waiter\'s', async () => {
    // A waiter killed with -9 leaves its `.lock.{pid}.{nonce}.pending` behind; nothing else removes it.
    const dead = `.lock.424242.0123456789abcdef.pending`;
    const live = `.lock.${LIVE}.fedcba9876543210.pending`;
    const foreign = `.lock.434343.00000000000000aa.pending`;
    // Only `.lock.*` names are the lock's: a file merely ending like a pending one is someone else's.
    const notOurs = `notes.lock.424242.0123456789abcdef.pending`;
    await fs.writeFile(join(dir, notOurs), lockText(424242));
    await fs.writeFile(join(dir, dead), lockText(424242));
    await fs.writeFile(join(dir, live), lockText(LIVE));
    await fs.writeFile(join(dir, foreign), lockText(434343, 'another-host'));
    const handle = await acquireCollectionLock(dir, { isProcessAlive: (pid) => pid !== 424242 && pid !== 434343 });
    await handle.release();
    expect(await listDir(dir)).toEqual([foreign, live, notOurs].sort());
  });

  it('the holder clears an empty pending file (a waiter killed before writing it) once it is older than twice the timeout', async () => {
    const old = `.lock.424242.0123456789abcdef.pending`;
    const fresh = `.lock.434343.00000000000000aa.pending`;
    // JSON that is no object names nobody either: judged by age like an empty file.
    const oldArray = `.lock.454545.00000000000000bb.pending`;
    await fs.writeFile(join(dir, old), '');
    await fs.writeFile(join(dir, fresh), '');
    await fs.writeFile(join(dir, oldArray), JSON.stringify([424242, hostname()]));
    const hourAgo = new Date(Date.now() - 3_600_000);
    await fs.utimes(join(dir, old), hourAgo, hourAgo);
    await fs.utimes(join(dir, oldArray), hourAgo, hourAgo);
    const handle = await acquireCollectionLock(dir);
    await handle.release();
    expect(await listDir(dir)).toEqual([fresh]);
  });

  it('a waiter whose pending file is removed while it waits writes it again and still gets the lock', async () => {
    // A holder whose wall clock runs ahead of the file system's (another host of a
    // shared folder, a faked clock) reads a waiter's pending file in the moment
    // between its creation and its write: empty and, by that clock, old enough to be a dead waiter's.
    await fs.writeFile(join(dir, LOCK_FILE), lockText(LIVE));
    const handle = await acquireCollectionLock(dir, {
      sleep: async () => {
        for (const name of await listDir(dir)) await fs.rm(join(dir, name));
      },
    });
    expect(JSON.parse(await fs.readFile(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    await handle.release();
    expect(await listDir(dir)).toEqual([]);
  });
});
