// A save lists the memory folder once, under the lock: on a folder of a
// million files each pass takes seconds, and the five a save made (one
// before the lock, four under it) kept a second writer waiting past its
// 10 s lock timeout. The listings are counted by a preload that logs every
// opendir/readdir of the real bin.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, runToEnd, type TempHome, writeConfig } from './support.js';

const PRELOAD = fileURLToPath(new URL('./count-listings.mjs', import.meta.url));

describe('save lists the memory folder once', () => {
  let home: TempHome;
  let memoryDir: string;
  let log: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', path: join(home.root, 'content'), memory: 100 });
    memoryDir = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    log = join(home.root, 'listings.log');
    env = { ...(Object.fromEntries(Object.entries(home.childEnv).filter((e): e is [string, string] => e[1] !== undefined))), AIGPT_TEST_LISTINGS_LOG: log };
  });

  afterEach(() => home.cleanup());

  const passes = async (): Promise<number> => {
    const text = await fs.readFile(log, 'utf8').catch(() => '');
    return text.split('\n').filter((path) => path === memoryDir).length;
  };
  const aigpt = (args: readonly string[]) => runToEnd(process.execPath, ['--import', PRELOAD, aigptBin(), ...args], { env, cwd: home.root });

  it('aigpt save-memory makes one pass over the memory folder, and still counts, orders, and clears dead waiters', async () => {
    expect((await aigpt(['save-memory', 'first'])).code).toBe(0);
    // A waiter killed before writing its pending file, long ago: the holder's sweep removes it.
    const deadWaiter = join(memoryDir, '.lock.424242.0123456789abcdef.pending');
    await fs.writeFile(deadWaiter, '');
    await fs.utimes(deadWaiter, new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'));
    await fs.rm(log, { force: true });
    const saved = await aigpt(['save-memory', 'second']);
    expect(saved).toMatchObject({ code: 0, stdout: 'Saved. (2 records)\n', stderr: '' });
    expect(await passes()).toBe(1);
    const names = (await fs.readdir(memoryDir)).sort();
    expect(names).toHaveLength(2);
    const texts = await Promise.all(names.map(async (name) => (JSON.parse(await fs.readFile(join(memoryDir, name), 'utf8')) as { value: { content: { text: string } } }).value.content.text));
    expect(texts).toEqual(['first', 'second']);
  });

  it('aigpt save-memory still recovers first, and reports it on stderr', async () => {
    expect((await aigpt(['save-memory', 'first'])).code).toBe(0);
    await fs.writeFile(join(memoryDir, '.3mfyouuy62222.json.tmp-compress'), '{"half');
    const saved = await aigpt(['save-memory', 'second']);
    expect(saved).toMatchObject({ code: 0, stdout: 'Saved. (2 records)\n', stderr: 'aigpt: removed 1 leftover temporary file(s) of interrupted writes\n' });
    expect((await fs.readdir(memoryDir)).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('save_memory over MCP makes one pass over the memory folder per call', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: ['--import', PRELOAD, aigptBin(), 'server'], env, cwd: home.root, stderr: 'pipe' });
    const client = new Client({ name: 'aigpt-passes', version: '1.0.0' });
    await client.connect(transport);
    try {
      for (const [content, count] of [['one', 1n], ['two', 2n]] as const) {
        const before = await passes();
        const result = (await client.callTool({ name: 'save_memory', arguments: { content } })) as { content: { text: string }[]; isError?: boolean };
        expect(result.isError).toBeUndefined();
        expect(JSON.parse(result.content[0]!.text)).toEqual({ count: Number(count), limit: 100, success: true });
        expect(await passes()).toBe(before + 1);
      }
    } finally {
      await client.close();
    }
  });
});
