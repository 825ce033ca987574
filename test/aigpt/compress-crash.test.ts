// Crash safety of compress (spec 7.4/7.5): a crash between any two file
// operations, in-process (fault hook) or as a real kill -9 of `aigpt server`,
// must recover to exactly the old set or exactly the new set.

import { watch } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FILE_BATCH } from '../../src/aigpt/storage/fs-atomic.js';
import { InjectedFault, JOURNAL_FILE, MemoryStore } from '../../src/aigpt/storage/memory-store.js';
import { recordTree } from '../../src/aigpt/core/record-paths.js';
import { isValidTid, TidGenerator } from '../../src/aigpt/core/tid.js';
import {
  INITIALIZE_REQUEST,
  INITIALIZED_NOTIFICATION,
  listDir,
  makeTempHome,
  runAigpt,
  snapshotMemories,
  startServerChild,
  type TempHome,
  writeConfig,
} from './support.js';

const NOON_US = Date.parse('2026-03-01T12:00:00Z') * 1000;
const OLD_TEXTS = ['old 0', 'old 1', 'old 2', 'old 3'];
const NEW_TEXTS = ['new 0', 'new 1', 'new 2', 'new 3', 'new 4'];
const COMMIT_POINT = `replace:${JOURNAL_FILE}:renamed`;

function storeIn(home: TempHome, fault?: (point: string) => void): MemoryStore {
  return new MemoryStore({
    did: 'did:plc:xxx',
    handle: 'ai.syui.ai',
    tree: recordTree(join(home.root, 'content'), 'did:plc:xxx'),
    memoryLimit: 1000n,
    clock: () => new Date(NOON_US / 1000),
    tids: new TidGenerator({ nowMicros: () => NOON_US, clockId: 3 }),
    ...(fault === undefined ? {} : { fault }),
  });
}

async function seedOldSet(home: TempHome): Promise<[string, string][]> {
  const store = storeIn(home);
  await store.ensureLayout();
  for (const text of OLD_TEXTS) await store.saveMemory(text);
  return snapshotMemories(store.tree.memoryDir);
}

/** A hook that throws at the n-th fault point (0-based), like a crash there. */
function crashAt(n: number): { hook: (point: string) => void; seen: () => string | undefined } {
  let count = 0;
  let at: string | undefined;
  return {
    hook: (point) => {
      if (count++ === n) {
        at = point;
        throw new InjectedFault(point);
      }
    },
    seen: () => at,
  };
}

describe('compress crash safety, in-process fault injection', () => {
  let homes: TempHome[] = [];
  const fresh = (): TempHome => {
    const home = makeTempHome();
    homes.push(home);
    return home;
  };
  afterEach(() => {
    for (const home of homes) home.cleanup();
    homes = [];
  });

  async function referenceRun(): Promise<{ points: string[]; oldSet: [string, string][]; newSet: [string, string][] }> {
    const home = fresh();
    const oldSet = await seedOldSet(home);
    const points: string[] = [];
    const store = storeIn(home, (point) => points.push(point));
    await store.compress(NEW_TEXTS);
    return { points, oldSet, newSet: await snapshotMemories(store.tree.memoryDir) };
  }

  it('the clean run has many fault points and produces the new set', async () => {
    const { points, oldSet, newSet } = await referenceRun();
    expect(points.length).toBeGreaterThan(20);
    expect(points).toContain(COMMIT_POINT);
    expect(oldSet.map(([, text]) => JSON.parse(text).value.content.text)).toEqual(OLD_TEXTS);
    expect(newSet.map(([, text]) => JSON.parse(text).value.content.text)).toEqual(NEW_TEXTS);
    expect(newSet.every(([name]) => name > oldSet[oldSet.length - 1]![0])).toBe(true);
  });

  it('a crash between any two file operations recovers to exactly the old or exactly the new set', async () => {
    const { points, oldSet, newSet } = await referenceRun();
    const commitIndex = points.indexOf(COMMIT_POINT);
    for (let i = 0; i < points.length; i++) {
      const home = fresh();
      expect(await seedOldSet(home)).toEqual(oldSet);
      const crash = crashAt(i);
      await expect(storeIn(home, crash.hook).compress(NEW_TEXTS)).rejects.toBeInstanceOf(InjectedFault);
      expect(crash.seen()).toBe(points[i]);
      const dir = storeIn(home).tree.memoryDir;
      if (i < commitIndex) {
        // Before the commit point readers already see the complete old set: staged files are hidden.
        expect(await snapshotMemories(dir), `before recovery, crash at ${points[i]}`).toEqual(oldSet);
      }
      await storeIn(home).ensureLayout();
      const expected = i < commitIndex ? oldSet : newSet;
      expect(await snapshotMemories(dir), `crash at #${i} ${points[i]}`).toEqual(expected);
      expect((await listDir(dir)).filter((name) => name.startsWith('.') && name !== '.lock'), `helpers after #${i}`).toEqual([]);
    }
  });

  it('a crash during recovery itself is recovered by the next start', async () => {
    const { points, newSet } = await referenceRun();
    const firstPublish = points.indexOf('compress:published');
    // Crash right after the commit, then count recovery's own fault points.
    const probeHome = fresh();
    await seedOldSet(probeHome);
    await expect(storeIn(probeHome, crashAt(firstPublish - 1).hook).compress(NEW_TEXTS)).rejects.toBeInstanceOf(InjectedFault);
    const recoveryPoints: string[] = [];
    await storeIn(probeHome, (point) => recoveryPoints.push(point)).ensureLayout();
    expect(recoveryPoints.length).toBeGreaterThan(5);

    for (let j = 0; j < recoveryPoints.length; j++) {
      const home = fresh();
      await seedOldSet(home);
      await expect(storeIn(home, crashAt(firstPublish - 1).hook).compress(NEW_TEXTS)).rejects.toBeInstanceOf(InjectedFault);
      await expect(storeIn(home, crashAt(j).hook).ensureLayout()).rejects.toBeInstanceOf(InjectedFault);
      await storeIn(home).ensureLayout();
      expect(await snapshotMemories(storeIn(home).tree.memoryDir), `recovery crash at ${recoveryPoints[j]}`).toEqual(newSet);
    }
  });

  it('the next save recovers first, so an interrupted compress is never mixed with new records', async () => {
    const { points, newSet } = await referenceRun();
    const home = fresh();
    await seedOldSet(home);
    await expect(storeIn(home, crashAt(points.indexOf('compress:removed-old')).hook).compress(NEW_TEXTS)).rejects.toBeInstanceOf(InjectedFault);
    const saved = await storeIn(home).saveMemory('later');
    const after = await snapshotMemories(storeIn(home).tree.memoryDir);
    expect(after.slice(0, -1)).toEqual(newSet);
    expect(after[after.length - 1]![0]).toBe(`${saved.tid}.json`);
    expect(saved.count).toBe(NEW_TEXTS.length + 1);
  });

  // On POSIX a backslash is an ordinary character of a file name (3.2 reads `notes\\old.json` as a memory).
  it('a crash after the commit rolls forward even when an old name holds a backslash', async () => {
    const { points } = await referenceRun();
    const home = fresh();
    await seedOldSet(home);
    const dir = storeIn(home).tree.memoryDir;
    await writeFile(join(dir, 'notes\\old.json'), '{"value":{"content":{"text":"old note"}}}');
    await expect(storeIn(home, crashAt(points.indexOf('compress:removed-old')).hook).compress(NEW_TEXTS)).rejects.toBeInstanceOf(InjectedFault);
    const recovery = await storeIn(home).ensureLayout();
    const after = await snapshotMemories(dir);
    expect(after.map(([, text]) => JSON.parse(text).value.content.text)).toEqual(NEW_TEXTS);
    expect(recovery?.rolledForward).toBe(true);
  });

  // Compress writes, renames and unlinks files in batches (FILE_BATCH); a crash
  // at the last point of one batch or the first of the next is no different.
  it('a crash at a batch boundary of a compress of many files recovers to exactly the old or exactly the new set', async () => {
    const manyOld = Array.from({ length: FILE_BATCH + 1 }, (_, i) => `many old ${i}`);
    const manyNew = Array.from({ length: FILE_BATCH + 2 }, (_, i) => `many new ${i}`);
    const seed = async (home: TempHome): Promise<[string, string][]> => {
      const store = storeIn(home);
      await store.ensureLayout();
      for (const text of manyOld) await store.saveMemory(text);
      return snapshotMemories(store.tree.memoryDir);
    };
    const probe = fresh();
    const oldSet = await seed(probe);
    const points: string[] = [];
    await storeIn(probe, (point) => points.push(point)).compress(manyNew);
    const newSet = await snapshotMemories(storeIn(probe).tree.memoryDir);
    const commitIndex = points.indexOf(COMMIT_POINT);
    const perFile = ['compress:stage:opened', 'compress:stage:synced', 'compress:published', 'compress:removed-old'];
    const boundaries = perFile.flatMap((label) => {
      const at = points.flatMap((point, index) => (point === label ? [index] : []));
      return [at[FILE_BATCH - 1]!, at[FILE_BATCH]!];
    });
    for (const i of boundaries) {
      const home = fresh();
      expect(await seed(home)).toEqual(oldSet);
      await expect(storeIn(home, crashAt(i).hook).compress(manyNew)).rejects.toBeInstanceOf(InjectedFault);
      await storeIn(home).ensureLayout();
      const dir = storeIn(home).tree.memoryDir;
      expect(await snapshotMemories(dir), `crash at #${i} ${points[i]}`).toEqual(i < commitIndex ? oldSet : newSet);
      expect((await listDir(dir)).filter((name) => name.startsWith('.') && name !== '.lock'), `helpers after #${i}`).toEqual([]);
    }
  });
});

describe('compress crash safety, kill -9 of a real server process', () => {
  let home: TempHome;
  let memoryDir: string;
  let oldSet: [string, string][];
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: join(home.root, 'content'), memory: 1000 });
    oldSet = await seedOldSet(home);
    memoryDir = storeIn(home).tree.memoryDir;
  });
  afterEach(() => home.cleanup());

  async function classify(): Promise<'old' | 'new' | 'mixed'> {
    const now = await snapshotMemories(memoryDir);
    if (JSON.stringify(now) === JSON.stringify(oldSet)) return 'old';
    const texts = now.map(([, text]) => (JSON.parse(text) as { value: { content: { text: string } } }).value.content.text);
    const oldNames = new Set(oldSet.map(([name]) => name));
    const newest = oldSet[oldSet.length - 1]![0];
    const isNew =
      JSON.stringify(texts) === JSON.stringify(NEW_TEXTS) &&
      now.every(([name]) => !oldNames.has(name) && name > newest && isValidTid(name.slice(0, -5)));
    return isNew ? 'new' : 'mixed';
  }

  /** Recovery runs when a server starts (spec 7.5); stdin closed at once ends it. */
  async function recoverByServerStart(): Promise<void> {
    const server = startServerChild(home.childEnv);
    server.child.stdin.end();
    expect((await server.exited).code, server.stderr()).toBe(0);
  }

  /** Starts a server, asks it to compress `items`, and returns the child. */
  function compressInChild(items: readonly string[], pause?: string): ReturnType<typeof startServerChild> {
    const env = { ...home.childEnv, ...(pause === undefined ? {} : { AIGPT_TEST_FAULT_PAUSE: pause }) };
    const server = startServerChild(env);
    server.send(INITIALIZE_REQUEST);
    server.send(INITIALIZED_NOTIFICATION);
    server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'compress', arguments: { items } } });
    return server;
  }

  // Each label is a fault point of the clean run; `#n` picks its n-th occurrence.
  const cases: [string, 'old' | 'new'][] = [
    ['compress:stage:opened#1', 'old'],
    ['compress:stage:synced#3', 'old'],
    ['compress:stage:opened#5', 'old'],
    ['compress:staged#1', 'old'],
    [`replace:${JOURNAL_FILE}:opened#1`, 'old'],
    [`replace:${JOURNAL_FILE}:synced#1`, 'old'],
    [`${COMMIT_POINT}#1`, 'new'],
    [`replace:${JOURNAL_FILE}:dir-synced#1`, 'new'],
    ['compress:published#1', 'new'],
    ['compress:published#4', 'new'],
    ['compress:removed-old#2', 'new'],
    ['compress:switched#1', 'new'],
    ['compress:journal-removed#1', 'new'],
  ];

  for (const [pause, expected] of cases) {
    it(`kill -9 paused at ${pause} recovers to the ${expected} set`, async () => {
      const server = compressInChild(NEW_TEXTS, pause);
      await server.waitForStderr(/aigpt: paused at .*\n/);
      server.child.kill('SIGKILL');
      expect((await server.exited).signal).toBe('SIGKILL');
      // A reader takes no lock and changes nothing (spec 7.3, 7.5).
      const left = await listDir(memoryDir);
      expect((await runAigpt(['read-memory'], home.childEnv)).code).toBe(0);
      expect(await listDir(memoryDir)).toEqual(left);
      // The next writer's start recovers (and breaks the dead process's lock).
      await recoverByServerStart();
      const read = await runAigpt(['read-memory'], home.childEnv);
      expect(read.code).toBe(0);
      expect(await classify()).toBe(expected);
      const texts = expected === 'old' ? OLD_TEXTS : NEW_TEXTS;
      expect(read.stdout.match(/"text": "[^"]*"/g)).toEqual(texts.map((t) => `"text": "${t}"`));
      expect((await listDir(memoryDir)).filter((name) => name.startsWith('.') && name !== '.lock')).toEqual([]);
    });
  }

  it('read_memory of a server already running says when a compress killed past its commit left the folder mixed', async () => {
    const reader = startServerChild(home.childEnv);
    reader.send(INITIALIZE_REQUEST);
    await reader.response(1);
    const busy = compressInChild(NEW_TEXTS, 'compress:published#2');
    await busy.waitForStderr(/aigpt: paused at .*\n/);
    busy.child.kill('SIGKILL');
    await busy.exited;
    reader.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'read_memory', arguments: {} } });
    const answer = (await reader.response(5))['result'] as { content: { text: string }[] };
    const payload = JSON.parse(answer.content[0]?.text ?? '{}') as { skipped?: { path: string; reason: string }[] };
    expect(payload.skipped).toEqual([{ path: join(memoryDir, JOURNAL_FILE), reason: 'a compress is in progress or was interrupted (the next write finishes it); records may be mixed' }]);
    reader.child.stdin.end();
    await reader.exited;
  });

  it('a server started while another process is inside its compress starts at once, leaving recovery to the next write', async () => {
    // Its staged files look like an interrupted write; the live writer holds the lock.
    const busy = compressInChild(NEW_TEXTS, 'compress:staged#1');
    await busy.waitForStderr(/aigpt: paused at .*\n/);
    try {
      const second = startServerChild(home.childEnv);
      second.send(INITIALIZE_REQUEST);
      const answer = await second.response(1);
      expect(answer['result']).toBeDefined();
      expect(second.stderr()).toMatch(/another process is writing the memory folder \(Failed to lock .*: held by pid \d+\); recovery, if any is needed, is left to the next write/);
      second.child.stdin.end();
      expect((await second.exited).code).toBe(0);
    } finally {
      busy.child.kill('SIGKILL');
      await busy.exited;
    }
    await recoverByServerStart();
    expect(await classify()).toBe('old');
  });

  it('kill -9 at an unplanned moment (as soon as the journal appears) still recovers to a whole set', async () => {
    const items = Array.from({ length: 200 }, (_, i) => `bulk ${i}`);
    let killed = false;
    const watcher = watch(memoryDir, (_event, name) => {
      if (!killed && name === JOURNAL_FILE) {
        killed = true;
        server.child.kill('SIGKILL');
      }
    });
    const server = compressInChild(items);
    const outcome = await Promise.race([server.exited, server.response(2).then(() => 'finished' as const)]);
    watcher.close();
    if (outcome === 'finished') server.child.kill('SIGKILL');
    await server.exited;
    await recoverByServerStart();
    const now = await snapshotMemories(memoryDir);
    const texts = now.map(([, text]) => (JSON.parse(text) as { value: { content: { text: string } } }).value.content.text);
    // The journal was published before the kill, so the new set must win.
    expect(killed).toBe(true);
    expect(texts).toEqual(items);
  });

  it('a roll-forward that cannot restore a staged record says the new set is incomplete, not complete', async () => {
    const oldNames = oldSet.map(([name]) => name);
    // Committed (the journal parses) but its one staged record is gone.
    await writeFile(join(memoryDir, JOURNAL_FILE), JSON.stringify({ version: 1, create: ['3mfyouuy6zzzz'], delete: oldNames }));
    const saved = await runAigpt(['save-memory', 'next'], home.childEnv);
    expect(saved.code).toBe(0);
    expect(saved.stderr).toContain('finished an interrupted compress, but the new memory set is incomplete:');
    expect(saved.stderr).toContain('staged record 3mfyouuy6zzzz is missing; it cannot be restored');
    expect(saved.stderr).not.toContain('the new memory set is complete');
  });
});
