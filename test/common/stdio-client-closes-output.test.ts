// A stdio client that closes its end of the server's stdout but keeps stdin
// open (a host that stopped reading, a crashed reader in a pipeline) ends
// the session, and the process exits 0 instead of waiting for good. Before,
// `aipcs serve` ended its session but never exited (stdin was still being
// read) and `aigpt server` did not even notice (its answer gate swallowed
// the write error).

import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aipcsBin } from '../support/bins.js';
import { aigptBin, makeTempHome, type TempHome, writeConfig } from '../aigpt/support.js';

const line = (message: Record<string, unknown>): string => `${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`;
const INITIALIZE = line({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'closer', version: '1' } } });

/** Starts the server, reads its initialize answer, closes its stdout, sends one more request; resolves with how it ended. */
async function closeOutput(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'pipe'], timeout: 30_000 });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  child.stdin.on('error', () => undefined);
  child.stdin.write(INITIALIZE);
  await new Promise((resolve) => child.stdout.once('data', resolve));
  child.stdout.destroy();
  child.stdin.write(line({ id: 2, method: 'tools/list' }));
  return { ...(await exited), stderr };
}

describe('a stdio client that closes the server stdout and keeps stdin open', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:closer' });
  });
  afterEach(() => home.cleanup());

  it('aipcs serve exits 0', { timeout: 30_000 }, async () => {
    const ended = await closeOutput([aipcsBin(), 'serve'], { PATH: process.env['PATH'] ?? '' });
    expect(ended).toEqual({ code: 0, signal: null, stderr: '' });
  });

  it('aigpt server exits 0', { timeout: 30_000 }, async () => {
    const ended = await closeOutput([aigptBin(), 'server'], home.childEnv);
    expect(ended).toEqual({ code: 0, signal: null, stderr: '' });
  });
});
