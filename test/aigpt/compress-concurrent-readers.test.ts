// Readers racing a compress (spec 7.4/7.5, decisions "Readers never lock"):
// a reader may see a mix of old and new records while the old set is being
// unlinked, but a record file removed between the listing and its read is
// gone, not "unreadable". It was reported as an unreadable file (ENOENT)
// in read_memory, the status line and the instructions, telling the agent
// its memory was damaged. A dangling link named *.json is still reported.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore, type ScanItem } from '../../src/aigpt/memory-store.js';
import { recordTree } from '../../src/aigpt/record-paths.js';
import { TidGenerator } from '../../src/aigpt/tid.js';
import {
  INITIALIZE_REQUEST,
  INITIALIZED_NOTIFICATION,
  makeTempHome,
  runAigpt,
  startServerChild,
  type TempHome,
  writeConfig,
} from './support.js';

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
    });
    expect(items.filter((item) => 'skipped' in item)).toEqual([]);
    expect(items).toHaveLength(39);
    expect(listing.selected).toBe(39);
  });
});
