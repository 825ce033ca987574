// A running `aigpt server` sees what changed on disk after it started: the
// instructions are built when initialize is answered (spec 5.2), and the
// config is read again for every operation (spec 2.4).

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { INITIAL_CONFIG_TEXT } from '../../src/aigpt/config/config.js';
import {
  INITIALIZE_REQUEST,
  INITIALIZED_NOTIFICATION,
  makeTempHome,
  runAigpt,
  type ServerChild,
  snapshotMemories,
  startServerChild,
  type TempHome,
  writeConfig,
} from './support.js';

describe('a running server and later changes on disk', () => {
  let home: TempHome;
  let server: ServerChild;
  let nextId = 100;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'first'), memory: 3 });
    server = startServerChild(home.childEnv);
    // Answered only once start-up is over.
    server.send({ jsonrpc: '2.0', id: 99, method: 'ping' });
    await server.response(99);
  });

  afterEach(async () => {
    server.child.stdin.end();
    await server.exited;
    home.cleanup();
  });

  const call = async (name: string, args: Record<string, unknown>): Promise<string[]> => {
    const id = nextId++;
    server.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    const result = (await server.response(id))['result'] as { content: { text: string }[] };
    return result.content.map((item) => item.text);
  };

  it('initialize carries a memory another process saved after the server started', async () => {
    const saved = await runAigpt(['save-memory', 'saved by the CLI meanwhile'], home.childEnv);
    expect(saved.stdout).toBe('Saved. (1 records)\n');
    server.send(INITIALIZE_REQUEST);
    const result = (await server.response(1))['result'] as { instructions: string };
    expect(result.instructions).toBe('saved by the CLI meanwhile\n\n[aigpt] memory records: 1/3');
  });

  it('save_memory follows an edited config: the new limit and the new location', async () => {
    server.send(INITIALIZE_REQUEST);
    await server.response(1);
    server.send(INITIALIZED_NOTIFICATION);
    expect(await call('save_memory', { content: 'one' })).toEqual(['{"count":1,"limit":3,"success":true}']);

    await writeConfig(home, { path: join(home.root, 'first'), memory: 7 });
    expect(await call('save_memory', { content: 'two' })).toEqual(['{"count":2,"limit":7,"success":true}']);

    const second = join(home.root, 'second');
    await writeConfig(home, { path: second, memory: 1 });
    expect(await call('save_memory', { content: 'elsewhere' })).toEqual(['{"count":1,"limit":1,"success":true}']);
    const texts = async (base: string): Promise<string[]> =>
      (await snapshotMemories(join(base, 'self', 'ai.syui.gpt.memory'))).map(
        ([, text]) => (JSON.parse(text) as { value: { content: { text: string } } }).value.content.text,
      );
    expect(await texts(join(home.root, 'first'))).toEqual(['one', 'two']);
    expect(await texts(second)).toEqual(['elsewhere']);

    // A config broken under the running server is reported, never replaced by defaults.
    await fs.writeFile(home.configFile, '{"bot":{"memory":"7"}}');
    expect(await call('save_memory', { content: 'lost?' })).toEqual([
      `{"error":"invalid config ${home.configFile}: bot.memory must be a non-negative integer"}`,
    ]);
    expect(await texts(second)).toEqual(['elsewhere']);
  });

  it('initialize under a config broken after start tells the agent in the instructions instead of failing', async () => {
    await fs.writeFile(home.configFile, '{"bot":{"memory":"7"}}');
    server.send(INITIALIZE_REQUEST);
    const result = (await server.response(1))['result'] as { instructions: string };
    expect(result.instructions).toBe(`[aigpt] invalid config ${home.configFile}: bot.memory must be a non-negative integer`);
    // Mended, the next initialize has the memory status again. (mutation review AM)
    await writeConfig(home, { path: join(home.root, 'first'), memory: 3 });
    server.send({ ...INITIALIZE_REQUEST, id: 2 });
    expect(((await server.response(2))['result'] as { instructions: string }).instructions).toBe('[aigpt] memory records: 0/3');
  });

  it('a config deleted under the running server is a first run: recreated, and the call goes on', async () => {
    server.send(INITIALIZE_REQUEST);
    await server.response(1);
    server.send(INITIALIZED_NOTIFICATION);
    expect(await call('save_memory', { content: 'kept where it was' })).toEqual(['{"count":1,"limit":3,"success":true}']);

    await fs.rm(home.appDir, { recursive: true });
    expect(await call('read_memory', {})).toEqual(['{"count":0,"records":[]}']);
    expect(await fs.readFile(home.configFile, 'utf8')).toBe(INITIAL_CONFIG_TEXT);
    expect(await call('save_memory', { content: 'after the reset' })).toEqual(['{"count":1,"limit":100,"success":true}']);
    server.send({ ...INITIALIZE_REQUEST, id: 2 });
    const result = (await server.response(2))['result'] as { instructions: string };
    expect(result.instructions).toBe('after the reset\n\n[aigpt] memory records: 1/100');
    // The memory of the old location is untouched.
    const old = await snapshotMemories(join(home.root, 'first', 'self', 'ai.syui.gpt.memory'));
    expect(old.map(([, text]) => (JSON.parse(text) as { value: { content: { text: string } } }).value.content.text)).toEqual(['kept where it was']);
  });
});
