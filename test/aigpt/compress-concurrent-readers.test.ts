// Readers racing a compress (spec 7.4/7.5, decisions "Readers never lock"):
// a reader may see a mix of old and new records while the old set is being
// unlinked, but a record file removed between the listing and its read is
// gone, not "unreadable". It was reported as an unreadable file (ENOENT)
// in read_memory, the status line and the instructions, telling the agent
// its memory was damaged. A dangling link named *.json is still reported.
// A read whose listing caught the old set being replaced reads again, so that
// it answers a whole set, not the part of the old one that was left.

import { promises as fs, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore, type ScanItem } from '../../src/aigpt/storage/memory-store.js';
import { recordTree } from '../../src/aigpt/core/record-paths.js';
import { TidGenerator } from '../../src/aigpt/core/tid.js';
import {
  INITIALIZE_REQUEST,
  INITIALIZED_NOTIFICATION,
  makeTempHome,
  runAigpt,
  startServerChild,
  type TempHome,
  writeConfig,
} from './support.js';
import { MAX_READ_MEMORY_BYTES } from '../../src/aigpt/core/limits.js';

/** Reads as the read_memory tool does: every file of these small folders fits its bound. */
const WHOLE_READ = { maxBytes: MAX_READ_MEMORY_BYTES };

const ITEMS = Array.from({ length: 40 }, (_, i) => `item ${i}`);

describe('readers racing a compress', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: join(home.root, 'content'), memory: 1000 });
  });
  afterEach(() => home.cleanup());

  it('never report a record removed by the compress as unreadable', async () => {
    const compressor = startServerChild(home.childEnv);
    const reader = startServerChild(home.childEnv);
    for (const server of [compressor, reader]) {
      server.send(INITIALIZE_REQUEST);
      await server.response(1);
      server.send(INITIALIZED_NOTIFICATION);
    }
    const COMPRESSES = 30;
    for (let i = 0; i < COMPRESSES; i++) {
      compressor.send({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: 'compress', arguments: { items: ITEMS } } });
    }
    const reports: string[] = [];
    // Read until the compressor is done, and at least 100 times.
    let done = false;
    void compressor.response(10 + COMPRESSES - 1).then(() => (done = true));
    for (let i = 0; i < 100 || !done; i++) {
      reader.send({ jsonrpc: '2.0', id: 1000 + i, method: 'tools/call', params: { name: 'read_memory', arguments: {} } });
      const response = await reader.response(1000 + i);
      const content = (response['result'] as { content: { text: string }[]; isError?: boolean }).content;
      const payload = JSON.parse(content[0]!.text) as { skipped?: unknown };
      if (payload.skipped !== undefined || content.length !== 1) reports.push(content.map((item) => item.text.slice(-200)).join(' | '));
    }
    for (let i = 0; i < COMPRESSES; i++) {
      const result = (await compressor.response(10 + i))['result'] as { isError?: boolean };
      expect(result.isError).toBeUndefined();
    }
    compressor.child.stdin.end();
    reader.child.stdin.end();
    expect((await compressor.exited).code).toBe(0);
    expect((await reader.exited).code).toBe(0);
    expect(reports.slice(0, 2)).toEqual([]);
  });

  it('still reports a dangling link named like a record', async () => {
    expect((await runAigpt(['save-memory', 'kept'], home.childEnv)).code).toBe(0);
    const memoryDir = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    await fs.symlink(join(home.root, 'nowhere'), join(memoryDir, '3zzzzzzzzzzzz.json'));
    const result = await runAigpt(['read-memory'], home.childEnv);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/skipped .*3zzzzzzzzzzzz\.json: .*ENOENT/);
    const status = await runAigpt([], home.childEnv);
    expect(status.stdout).toContain('records: 2/1000');
    expect(status.stdout).toContain('warning: 1 unreadable memory file(s)');
  });

  /** A store over the test's tree; `fault` sees every fault point of it. */
  function storeOf(did: string, clockId: number, fault?: (point: string) => void): MemoryStore {
    return new MemoryStore({
      did,
      handle: 'ai.syui.ai',
      tree: recordTree(join(home.root, 'content'), did),
      memoryLimit: 1000n,
      tids: new TidGenerator({ clockId }),
      ...(fault ? { fault } : {}),
    });
  }

  /** Records saved in another identity's folder, to be moved in as a compress's new set. */
  async function stagedSet(texts: readonly string[]): Promise<string[]> {
    const staging = storeOf('did:plc:staging', 4);
    await staging.ensureLayout();
    for (const text of texts) await staging.saveMemory(text);
    return (await staging.listMemoryNames()).map((name) => join(staging.tree.memoryDir, name));
  }

  /** Compress step 5, as another process would run it: publish the new set, then unlink the old one. */
  function switchSets(memoryDir: string, staged: readonly string[]): void {
    const old = readdirSync(memoryDir).filter((name) => name.endsWith('.json'));
    for (const path of staged) renameSync(path, join(memoryDir, path.slice(path.lastIndexOf('/') + 1)));
    for (const name of old) unlinkSync(join(memoryDir, name));
  }

  it('reads again when the listing caught the old set being replaced, and answers the new set whole', async () => {
    const newSet = await stagedSet(['new 1', 'new 2', 'new 3']);
    let listings = 0;
    const store = storeOf('did:plc:xxx', 3, (point) => {
      if (point !== 'read:listed') return;
      // The first listing names the 40 old records; they are all gone by the time they are read.
      if (++listings === 1) switchSets(store.tree.memoryDir, newSet);
    });
    await store.ensureLayout();
    for (let i = 0; i < 40; i++) await store.saveMemory(`old ${i}`);
    const read = await store.readMemories(WHOLE_READ);
    expect(listings).toBe(2);
    expect(read.records.map((record) => record.text)).toEqual(['new 1', 'new 2', 'new 3']);
    expect(read.skipped).toEqual([]);
    expect(read.selected).toBe(3);
  });

  it('answers after a bounded number of reads when the set keeps changing under it', async () => {
    let listings = 0;
    const store = storeOf('did:plc:xxx', 3, (point) => {
      if (point !== 'read:listed') return;
      listings++;
      // Each listing loses its newest record before it is read.
      const names = readdirSync(store.tree.memoryDir).filter((name) => name.endsWith('.json')).sort();
      unlinkSync(join(store.tree.memoryDir, names.at(-1)!));
    });
    await store.ensureLayout();
    for (let i = 0; i < 10; i++) await store.saveMemory(`m${i}`);
    const read = await store.readMemories(WHOLE_READ);
    expect(listings).toBe(4);
    expect(read.records.map((record) => record.text)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    expect(read.selected).toBe(6);
  });

  it('the CLI dump lists again when its listing caught the old set being replaced, and ends with the new set; the status counts what it listed', async () => {
    // `aigpt read-memory` printed "No memory records found" (exit 0) here, and
    // `aigpt` said records: 0 while the folder held the new set.
    const newSet = await stagedSet(['new 1', 'new 2', 'new 3']);
    let listings = 0;
    const store = storeOf('did:plc:xxx', 3, (point) => {
      if (point === 'scan:listed' && ++listings === 1) switchSets(store.tree.memoryDir, newSet);
    });
    await store.ensureLayout();
    for (let i = 0; i < 40; i++) await store.saveMemory(`old ${i}`);
    const items: ScanItem[] = [];
    const dump = await store.scanMemories((item) => void items.push(item), undefined, { readAll: true });
    expect(listings).toBe(2);
    expect(items.map((item) => ('record' in item ? item.record.text : item))).toEqual(['new 1', 'new 2', 'new 3']);
    expect([dump.selected, dump.gone]).toEqual([3, 0]);

    const again = await stagedSet(['newer 1']);
    listings = 0;
    const counting = storeOf('did:plc:xxx', 3, (point) => {
      if (point === 'scan:listed' && ++listings === 1) switchSets(counting.tree.memoryDir, again);
    });
    const status = await counting.scanMemories(() => undefined, undefined, { readAll: false });
    expect([listings, status.selected, status.gone]).toEqual([1, 3, 3]);
  });

  it('the CLI dump says how many files went when the set keeps changing through every listing', async () => {
    let listings = 0;
    const store = storeOf('did:plc:xxx', 3, (point) => {
      if (point !== 'scan:listed') return;
      listings++;
      // Each listing's newest file (not yet handed over) is gone when read,
      // and arrives under a later name for the next listing to miss again.
      const names = readdirSync(store.tree.memoryDir).filter((name) => name.endsWith('.json')).sort();
      renameSync(join(store.tree.memoryDir, names.at(-1)!), join(store.tree.memoryDir, `3zzzzzzzzzz${'abcdefgh'[listings]}2.json`));
    });
    await store.ensureLayout();
    for (let i = 0; i < 10; i++) await store.saveMemory(`m${i}`);
    const visited: string[] = [];
    const dump = await store.scanMemories((item) => void visited.push('record' in item ? item.record.name : item.skipped.path), undefined, { readAll: true });
    // Four listings; each file is handed over once.
    expect(listings).toBe(4);
    expect(new Set(visited).size).toBe(visited.length);
    expect(visited).toHaveLength(9);
    expect(dump.gone).toBe(1);
  });

  it('the CLI scan leaves out a file removed after the listing and does not count it', async () => {
    const store = new MemoryStore({
      did: 'did:plc:xxx',
      handle: 'ai.syui.ai',
      tree: recordTree(join(home.root, 'content'), 'did:plc:xxx'),
      memoryLimit: 1000n,
      tids: new TidGenerator({ clockId: 3 }),
    });
    await store.ensureLayout();
    for (let i = 0; i < 40; i++) await store.saveMemory(`m${i}`);
    const names = await store.listMemoryNames();
    const items: ScanItem[] = [];
    // Files are read 32 at a time: removing the last one while the first
    // batch is visited is a removal between the listing and its read.
    const listing = await store.scanMemories(async (item) => {
      if (items.length === 0) await fs.unlink(join(store.tree.memoryDir, names[39]!));
      items.push(item);
    }, undefined, { readAll: true });
    expect(items.filter((item) => 'skipped' in item)).toEqual([]);
    expect(items).toHaveLength(39);
    expect(listing.selected).toBe(39);
  });
});
