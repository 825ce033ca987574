// Ctrl-C or a polite kill (SIGINT, SIGTERM, SIGHUP) in the middle of a write
// leaves no `.lock`, no temp file and no half-done compress (spec 7.2-7.5
// recover from those after a crash, but a signal can wait for the write).
// Before, the signal's default action ended the process on the spot: a
// save-memory stopped between its temp file and the link left both the
// temp file and `.lock` behind, and `aigpt server` died mid-session. Now a
// write under the lock finishes (lock released) before a signal takes its
// effect: the CLI then ends by that signal; the server answers the request
// it was serving and exits 0, as at the end of input. The signal is sent by
// the process itself at an exact fault point (AIGPT_TEST_FAULT_SIGNAL).

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, startServerChild, type TempHome, writeConfig } from './support.js';

const DID = 'did:plc:signals';
/** Fault preload shared with the AIP tests: a signal once fs/promises' Nth matching call completes. */
const CRASH_AT = join(dirname(fileURLToPath(import.meta.url)), '../aip/support/crash-at.mjs');

function memoryDir(home: TempHome): string {
  return join(home.appDir, DID, 'ai.syui.gpt.memory');
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [aigptBin(), ...args], { env, cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout }));
  });
}

describe('aigpt writes interrupted by a signal', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: DID, memory: 3 });
  });
  afterEach(() => home.cleanup());

  it('save-memory finishes the write and releases the lock, then ends by the signal', { timeout: 30_000 }, async () => {
    for (const [count, [signal, point]] of ([
      ['SIGTERM', 'write:*:opened'],
      ['SIGINT', 'write:*:linked'],
      ['SIGHUP', 'write:*:tmp-removed'],
    ] as const).entries()) {
      const ended = await run(['save-memory', point], { ...home.childEnv, AIGPT_TEST_FAULT_SIGNAL: `${signal}@${point}` });
      expect(ended.signal).toBe(signal);
      // The write is complete, so the user is told, or a retry would save it twice.
      expect(ended.stdout).toBe(`Saved. (${count + 1} records)\n`);
      expect(readdirSync(memoryDir(home)).filter((name) => name.startsWith('.'))).toEqual([]);
    }
    const listed = await run(['read-memory'], home.childEnv);
    for (const text of ['write:*:opened', 'write:*:linked', 'write:*:tmp-removed']) expect(listed.stdout).toContain(text);
  });

  it('a Ctrl-C while waiting for another writer\'s lock removes its own pending file, never the holder\'s lock', { timeout: 30_000 }, async () => {
    expect((await run(['save-memory', 'first'], home.childEnv)).code).toBe(0);
    // Held by this test's process: alive, on this host, and not the waiter.
    const held = JSON.stringify({ pid: process.pid, host: hostname(), started: new Date().toISOString() });
    writeFileSync(join(memoryDir(home), '.lock'), held);
    const child = spawn(process.execPath, [aigptBin(), 'save-memory', 'waiting'], { env: home.childEnv, cwd: tmpdir(), stdio: 'ignore' });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
    const pending = (): string[] => readdirSync(memoryDir(home)).filter((name) => name.endsWith('.pending'));
    while (pending().length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    child.kill('SIGINT');
    expect(await ended).toBe('SIGINT');
    expect(readdirSync(memoryDir(home)).filter((name) => name.startsWith('.'))).toEqual(['.lock']);
    expect(readFileSync(join(memoryDir(home), '.lock'), 'utf8')).toBe(held);
  });

  it('a Ctrl-C the moment the lock file is linked, before the write holds signals, leaves no .lock behind', { timeout: 30_000 }, async () => {
    // Before, only the waiter's pending file was registered for removal: the
    // freshly linked `.lock` stayed until a later writer broke it as stale.
    const ended = await run(['save-memory', 'interrupted'], {
      ...home.childEnv,
      NODE_OPTIONS: `--import=${pathToFileURL(CRASH_AT).href}`,
      AIP_TEST_CRASH_AT: 'link:1',
      AIP_TEST_CRASH_MATCH: '.lock.',
      AIP_TEST_CRASH_SIGNAL: 'SIGINT',
      AIP_TEST_CRASH_WHEN: 'after',
    });
    expect(ended.signal).toBe('SIGINT');
    expect(readdirSync(memoryDir(home)).filter((name) => name.startsWith('.'))).toEqual([]);
    expect((await run(['save-memory', 'next'], home.childEnv)).code).toBe(0);
  });

  it('the server answers the compress it is running, finishes it and exits 0', { timeout: 30_000 }, async () => {
    expect((await run(['save-memory', 'old'], home.childEnv)).code).toBe(0);
    const server = startServerChild({ ...home.childEnv, AIGPT_TEST_FAULT_SIGNAL: 'SIGTERM@compress:staged' });
    server.send(INITIALIZE_REQUEST);
    server.send(INITIALIZED_NOTIFICATION);
    server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'compress', arguments: { items: ['new a', 'new b'] } } });
    // Read after the signal: not served. The client keeps stdin open.
    server.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'save_memory', arguments: { content: 'late' } } });
    const answer = await server.response(2);
    expect(JSON.stringify(answer)).toContain('success');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toBe('');
    expect(readdirSync(memoryDir(home)).filter((name) => name.startsWith('.'))).toEqual([]);
    const listed = await run(['read-memory'], home.childEnv);
    expect(listed.stdout).toContain('new a');
    expect(listed.stdout).toContain('new b');
    expect(listed.stdout).not.toContain('old');
  });
});
