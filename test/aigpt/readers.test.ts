// Readers never take the collection lock and never recover (spec 7.3, 7.5):
// with a live writer holding the lock and an interrupted write in the
// folder, every read-only command and tool answers at once and changes
// nothing; writers still wait for the lock.

import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  GOLDEN_MEMORY,
  INITIALIZE_REQUEST,
  listDir,
  makeTempHome,
  runAigpt,
  startServerChild,
  type TempHome,
  writeConfig,
} from './support.js';

describe('readers with the lock held and a write interrupted', () => {
  let home: TempHome;
  let memoryDir: string;
  let leftovers: string[];

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', path: join(home.root, 'content') });
    expect((await runAigpt([], home.childEnv)).code).toBe(0);
    memoryDir = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    await fs.writeFile(join(memoryDir, '3mfyouuy62222.json'), GOLDEN_MEMORY);
  });
  afterEach(() => home.cleanup());

  /** A live writer (this test process, in the spec's lock format) and what an interrupted save left. */
  async function holdLockWithLeftovers(): Promise<void> {
    await fs.writeFile(join(memoryDir, '.lock'), JSON.stringify({ pid: process.pid, host: hostname(), started: new Date().toISOString() }));
    await fs.writeFile(join(memoryDir, '.3mfyouuy6222a.json.tmp-999-abc'), '{"partial"');
    await fs.writeFile(join(memoryDir, '.compress-journal'), '{"version":1,"create":[],"delete":[]}');
    leftovers = await listDir(memoryDir);
  }

  it('status, read-core and read-memory answer without locking or recovering', async () => {
    await holdLockWithLeftovers();
    const started = Date.now();
    const status = await runAigpt([], home.childEnv);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('\nrecords: 1/100\n');
    expect(status.stdout).toContain('warning: a compress is in progress or was interrupted');
    const core = await runAigpt(['read-core'], home.childEnv);
    expect(core.code, core.stderr).toBe(0);
    expect(core.stdout).toContain('"uri": "at://did:plc:xxx/ai.syui.gpt.core/self"');
    const memory = await runAigpt(['read-memory'], home.childEnv);
    expect(memory.code, memory.stderr).toBe(0);
    expect(memory.stdout).toBe(`${GOLDEN_MEMORY}\n`);
    expect(memory.stderr).toBe('aigpt: a compress is in progress or was interrupted (the next write finishes it); records may be mixed\n');
    // Well below the 10 s a lock wait would take.
    expect(Date.now() - started).toBeLessThan(8000);
    expect(await listDir(memoryDir)).toEqual(leftovers);
  });

  it('a writer still waits for the lock and then names its holder exactly', async () => {
    await holdLockWithLeftovers();
    const save = await runAigpt(['save-memory', 'x'], home.childEnv);
    expect(save.code).toBe(1);
    expect(save.stderr).toBe(`aigpt: Failed to lock ${memoryDir}: held by pid ${process.pid}\n`);
    expect(await listDir(memoryDir)).toEqual(leftovers);
  }, 30_000);

  it('a running server answers initialize and the read tools without locking or recovering', async () => {
    const server = startServerChild(home.childEnv);
    // Answered only once start-up (and its recovery) is over.
    server.send({ jsonrpc: '2.0', id: 99, method: 'ping' });
    await server.response(99);
    await holdLockWithLeftovers();
    server.send(INITIALIZE_REQUEST);
    const init = (await server.response(1))['result'] as { instructions: string };
    expect(init.instructions).toBe('syuiはRustを好む\n\n[aigpt] memory records: 1/100');
    server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    for (const [id, name] of [[2, 'read_core'], [3, 'read_memory']] as const) {
      server.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
      const result = (await server.response(id))['result'] as { isError?: boolean; content: { text: string }[] };
      expect(result.isError, result.content[0]?.text).toBeUndefined();
    }
    expect(await listDir(memoryDir)).toEqual(leftovers);
    server.child.stdin.end();
    expect((await server.exited).code).toBe(0);
  });
});
