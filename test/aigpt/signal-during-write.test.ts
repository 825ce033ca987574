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
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, startServerChild, type TempHome, writeConfig } from './support.js';

const DID = 'did:plc:signals';

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
    for (const [signal, point] of [
      ['SIGTERM', 'write:*:opened'],
      ['SIGINT', 'write:*:linked'],
      ['SIGHUP', 'write:*:tmp-removed'],
    ] as const) {
      const ended = await run(['save-memory', point], { ...home.childEnv, AIGPT_TEST_FAULT_SIGNAL: `${signal}@${point}` });
      expect(ended.signal).toBe(signal);
      expect(readdirSync(memoryDir(home)).filter((name) => name.startsWith('.'))).toEqual([]);
    }
    const listed = await run(['read-memory'], home.childEnv);
    for (const text of ['write:*:opened', 'write:*:linked', 'write:*:tmp-removed']) expect(listed.stdout).toContain(text);
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
