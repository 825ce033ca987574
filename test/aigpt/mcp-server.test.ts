// End to end: the built `aigpt server` driven by the MCP SDK's stdio client.
// initialize delivers core + every memory as instructions; each tool works
// and rejects bad arguments with the spec's payloads, writing nothing.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_READ_MEMORY_BYTES } from '../../src/aigpt/core/limits.js';
import { memoryRecordJson } from '../../src/aigpt/core/record-format.js';
import { aigptBin, GOLDEN_MEMORY, makeTempHome, seedOrderMemory, snapshotMemories, type TempHome, writeConfig } from './support.js';

const CORE_BY_HAND = `{
  "uri": "at://did:plc:xxx/ai.syui.gpt.core/self",
  "value": {
    "$type": "ai.syui.gpt.core",
    "did": "did:plc:xxx",
    "handle": "ai.syui.ai",
    "content": { "$type": "ai.syui.gpt.core#markdown", "text": "I am the core." },
    "createdAt": "2025-01-01T00:00:00Z"
  }
}`;

interface TextResult {
  content: { type: string; text: string }[];
  isError?: boolean;
}

describe('aigpt server over stdio (SDK client)', () => {
  let home: TempHome;
  let client: Client;
  let transport: StdioClientTransport;
  let memoryDir: string;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: join(home.root, 'content'), memory: 3 });
    const identity = join(home.root, 'content', 'did:plc:xxx');
    memoryDir = join(identity, 'ai.syui.gpt.memory');
    await fs.mkdir(join(identity, 'ai.syui.gpt.core'), { recursive: true });
    await fs.mkdir(memoryDir, { recursive: true });
    await fs.writeFile(join(identity, 'ai.syui.gpt.core', 'self.json'), CORE_BY_HAND);
    await fs.writeFile(join(memoryDir, '3mfyouuy62222.json'), GOLDEN_MEMORY);
    await fs.writeFile(join(memoryDir, '3mfyouuy6222a.json'), seedOrderMemory('did:plc:xxx', '3mfyouuy6222a', 'ATProto設計に詳しい'));
    await fs.writeFile(join(memoryDir, '3mfyouuy6222b.json'), '{"broken": ');
    await fs.writeFile(join(memoryDir, 'notes.json'), seedOrderMemory('did:plc:xxx', 'notes', '原神プレイヤー'));

    const env = Object.fromEntries(Object.entries(home.childEnv).filter((e): e is [string, string] => e[1] !== undefined));
    transport = new StdioClientTransport({ command: process.execPath, args: [aigptBin(), 'server'], env, cwd: home.root, stderr: 'pipe' });
    client = new Client({ name: 'aigpt-e2e', version: '1.0.0' });
    await client.connect(transport);
  });

  afterEach(async () => {
    await client.close();
    home.cleanup();
  });

  const call = async (name: string, args?: Record<string, unknown>): Promise<TextResult> =>
    (await client.callTool({ name, ...(args === undefined ? {} : { arguments: args }) })) as TextResult;

  it('initialize names the server and delivers the core and every memory as instructions', async () => {
    expect(client.getServerVersion()).toMatchObject({ name: 'aigpt', version: '0.1.0' });
    expect(client.getServerCapabilities()).toEqual({ tools: {} });
    expect(client.getInstructions()).toBe(
      'I am the core.\n\nsyuiはRustを好む\n\nATProto設計に詳しい\n\n原神プレイヤー\n\n' +
        '[aigpt] memory records: 4/3. Over the limit: call compress with at most 3 consolidated items. 1 unreadable memory file(s) were skipped.',
    );
    await expect(client.ping()).resolves.toBeDefined();
  });

  it('lists the four tools with the reference input schemas', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['read_core', 'read_memory', 'save_memory', 'compress']);
    const schemas = Object.fromEntries(
      tools.map((t) => {
        const schema = JSON.parse(JSON.stringify(t.inputSchema)) as { properties?: Record<string, { description?: string }> };
        for (const property of Object.values(schema.properties ?? {})) {
          expect(typeof property.description).toBe('string');
          delete property.description;
        }
        return [t.name, schema];
      }),
    );
    expect(schemas).toEqual({
      read_core: { type: 'object', properties: {} },
      read_memory: { type: 'object', properties: {} },
      save_memory: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
      compress: { type: 'object', properties: { items: { type: 'array', items: { type: 'string' } } }, required: ['items'] },
    });
    // Spec 5.3: the descriptions say what compress does and when to call it.
    const compress = tools.find((t) => t.name === 'compress')?.description;
    expect(compress).toMatch(/deletes every existing memory/);
    expect(compress).toMatch(/writes the given items, in order, as the new set/);
    expect(compress).toMatch(/when the record count exceeds the memory limit/);
    expect(tools.find((t) => t.name === 'save_memory')?.description).toMatch(/when count exceeds limit you should call compress/);
  });

  it('read_core returns the core record, compact with sorted keys', async () => {
    const result = await call('read_core');
    expect(result.isError).toBeUndefined();
    expect(result.content[0]?.text).toBe(
      '{"uri":"at://did:plc:xxx/ai.syui.gpt.core/self","value":{"$type":"ai.syui.gpt.core","content":{"$type":"ai.syui.gpt.core#markdown","text":"I am the core."},"createdAt":"2025-01-01T00:00:00Z","did":"did:plc:xxx","handle":"ai.syui.ai"}}',
    );
    expect(result.content).toHaveLength(1);
  });

  it('read_memory returns the good records in order and reports the bad file', async () => {
    const result = await call('read_memory');
    const payload = JSON.parse(result.content[0]!.text) as { count: number; records: { value: { content: { text: string } } }[]; skipped: { path: string; reason: string }[] };
    expect(payload.count).toBe(3);
    expect(payload.records.map((r) => r.value.content.text)).toEqual(['syuiはRustを好む', 'ATProto設計に詳しい', '原神プレイヤー']);
    expect(payload.skipped).toEqual([{ path: join(memoryDir, '3mfyouuy6222b.json'), reason: 'Failed to parse: The JSON document is malformed.' }]);
    expect(result.content[0]!.text.startsWith('{"count":3,"records":[{"uri":"at://did:plc:xxx/ai.syui.gpt.memory/3mfyouuy62222","value":{"$type"')).toBe(true);
    // One text item, the spec's result shape (5.4): the skipped file is in the payload.
    expect(result.content).toHaveLength(1);
  });

  it('read_memory returns the newest memories that fit its byte bound and reports the older ones as skipped', async () => {
    // 600 records of 16 KiB each: about 10 MB of files, beyond the 6 MiB read
    // bound. Without the bound a big enough folder made one result larger than
    // a JavaScript string can be, and read_memory failed with "internal error";
    // well before that, the MCP SDK client closes the connection on an answer
    // line above 10 MiB.
    const text = (i: number): string => `${String(i).padStart(4, '0')} ${'x'.repeat(16_000)}`;
    const tids = Array.from({ length: 600 }, (_, i) => `3mg${String(i).padStart(4, '0').replace(/\d/g, (d) => 'abcdefghij'[Number(d)]!)}aaaaaa`);
    for (const [i, tid] of tids.entries()) {
      await fs.writeFile(join(memoryDir, `${tid}.json`), memoryRecordJson({ did: 'did:plc:xxx', tid, text: text(i), createdAt: '2026-01-01T00:00:00Z' }));
    }
    const result = await call('read_memory');
    const payload = JSON.parse(result.content[0]!.text) as { count: number; records: { value: { content: { text: string } } }[]; skipped: { path: string; reason: string }[] };
    expect(Buffer.byteLength(result.content[0]!.text)).toBeLessThanOrEqual(MAX_READ_MEMORY_BYTES + 64 * 1024);
    const returned = payload.records.map((r) => r.value.content.text);
    // The newest ones, in file-name order, ending with notes.json (it sorts last).
    expect(returned.at(-1)).toBe('原神プレイヤー');
    expect(returned.at(-2)).toBe(text(599));
    const kept = returned.length - 1;
    // About 6 MiB of 16 KiB records: more than 200 maximum-size memories, twice the default limit.
    expect(kept).toBeGreaterThan(350);
    expect(kept).toBeLessThan(400);
    expect(returned.slice(0, -1)).toEqual(Array.from({ length: kept }, (_, i) => text(600 - kept + i)));
    // Everything older (the broken file among them, unread) is reported as one entry naming the folder.
    const beyond = 604 - 1 - kept;
    expect(payload.skipped).toEqual([
      { path: memoryDir, reason: `${beyond} oldest memory file(s) not read: beyond the read bound (10000 files, ${MAX_READ_MEMORY_BYTES} bytes, newest first)` },
    ]);
    expect(result.content).toHaveLength(1);
  });

  it('save_memory adds one record and reports count and limit', async () => {
    const result = await call('save_memory', { content: 'likes tea' });
    expect(result.isError).toBeUndefined();
    expect(result.content[0]?.text).toBe('{"count":5,"limit":3,"success":true}');
    expect(result.content).toHaveLength(1);
    const read = JSON.parse((await call('read_memory')).content[0]!.text) as { records: { value: { content: { text: string } } }[] };
    // File-name order: the new TID sorts after the other TIDs and before notes.json.
    expect(read.records.map((r) => r.value.content.text)).toEqual(['syuiはRustを好む', 'ATProto設計に詳しい', 'likes tea', '原神プレイヤー']);
    // An explicit empty string is accepted, as in the reference.
    expect((await call('save_memory', { content: '' })).content[0]?.text).toBe('{"count":6,"limit":3,"success":true}');
  });

  it('save_memory rejects a missing, mistyped or oversized content and writes nothing', async () => {
    const before = await snapshotMemories(memoryDir);
    for (const args of [undefined, {}, { content: 5 }, { content: null }, { content: ['x'] }]) {
      const result = await call('save_memory', args);
      expect(result.isError).toBe(true);
      expect(result.content[0]?.text).toBe('{"error":"content must be a string"}');
      expect(result.content).toHaveLength(1);
    }
    const big = await call('save_memory', { content: 'x'.repeat(16 * 1024 + 1) });
    expect(big.isError).toBe(true);
    expect(big.content[0]?.text).toBe('{"error":"content exceeds 16384 bytes"}');
    expect(await snapshotMemories(memoryDir)).toEqual(before);
  });

  it('compress rejects missing or mistyped items and lists above the limit, changing nothing', async () => {
    const before = await snapshotMemories(memoryDir);
    for (const args of [undefined, {}, { items: 'x' }, { items: null }, { items: ['ok', 1] }, { items: [['nested']] }]) {
      const result = await call('compress', args);
      expect(result.isError).toBe(true);
      expect(result.content[0]?.text).toBe('{"error":"items must be an array of strings"}');
    }
    const over = await call('compress', { items: ['a', 'b', 'c', 'd'] });
    expect(over.isError).toBe(true);
    expect(over.content[0]?.text).toBe('{"error":"compress got 4 items but the memory limit is 3"}');
    expect(over.content).toHaveLength(1);
    // Spec 8 fixes this text exactly, whichever item is too large.
    const big = await call('compress', { items: ['ok', 'x'.repeat(16 * 1024 + 1)] });
    expect(big.isError).toBe(true);
    expect(big.content[0]?.text).toBe('{"error":"content exceeds 16384 bytes"}');
    expect(await snapshotMemories(memoryDir)).toEqual(before);
  });

  it('compress replaces the whole set', async () => {
    const result = await call('compress', { items: ['syui likes Rust', 'plays Genshin'] });
    expect(result.isError).toBeUndefined();
    expect(result.content[0]?.text).toBe('{"count":2,"limit":3,"success":true}');
    expect(result.content).toHaveLength(1);
    const after = await snapshotMemories(memoryDir);
    expect(after.map(([, text]) => (JSON.parse(text) as { value: { content: { text: string } } }).value.content.text)).toEqual([
      'syui likes Rust',
      'plays Genshin',
    ]);
    expect((await fs.readdir(memoryDir)).sort()).toEqual(after.map(([name]) => name));
    expect((await call('compress', { items: [] })).content[0]?.text).toBe('{"count":0,"limit":3,"success":true}');
    expect(await fs.readdir(memoryDir)).toEqual([]);
    // Spec 5.4/5.5: nothing skipped, so no skipped member at all.
    expect((await call('read_memory')).content[0]?.text).toBe('{"count":0,"records":[]}');
  });

  it('ignores extra arguments like the reference and answers unknown tools with an error payload', async () => {
    expect((await call('read_core', { extra: 1 })).isError).toBeUndefined();
    const unknown = await call('nope');
    expect(unknown.isError).toBe(true);
    expect(unknown.content[0]?.text).toBe('{"error":"Unknown tool: nope"}');
  });

  it('reports storage failures after start as the spec 5.5 payloads, with isError and the cause after ": "', async () => {
    const coreFile = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.core', 'self.json');
    const payload = async (name: string, args?: Record<string, unknown>): Promise<string> => {
      const result = await call(name, args);
      expect(result.isError, name).toBe(true);
      expect(result.content, name).toHaveLength(1);
      const parsed = JSON.parse(result.content[0]?.text ?? '') as Record<string, unknown>;
      expect(Object.keys(parsed), name).toEqual(['error']);
      return String(parsed['error']);
    };
    await fs.writeFile(coreFile, '{"uri": ');
    expect(await payload('read_core')).toMatch(new RegExp(`^Failed to parse ${escapeRegExp(coreFile)}: .+`));
    await fs.rm(memoryDir, { recursive: true });
    await fs.writeFile(memoryDir, 'not a folder');
    expect(await payload('read_memory')).toBe(`Failed to read ${memoryDir}: ENOTDIR: not a directory`);
    expect(await payload('save_memory', { content: 'x' })).toBe(`Failed to create ${memoryDir}: EEXIST: file already exists`);
    expect(await payload('compress', { items: [] })).toBe(`Failed to create ${memoryDir}: EEXIST: file already exists`);
    expect(await fs.readFile(memoryDir, 'utf8')).toBe('not a folder');
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
