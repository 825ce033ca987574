// Contract §2.4 (stdio: stdout carries only MCP traffic, diagnostics
// go to stderr): a client that goes away while answers are owed (its end of
// our stdout closed, EPIPE) ends the session at once, and a client that reads
// slowly gets every pipelined answer in order. Before, each answer waiting on
// a full pipe added its own drain listener (Node printed
// MaxListenersExceededWarning on stderr past ten), and after a disconnect the
// answers waited for a drain that never came: the server lingered for the
// 60 s answer wait after the end of input.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';

const PIPELINED = 100;

function startServe(): { child: ChildProcessWithoutNullStreams; stderr: () => string; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = spawn(process.execPath, [aipcsBin(), 'serve'], { env: { PATH: process.env['PATH'] ?? '' }, timeout: 30_000 });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { child, stderr: () => stderr, exited };
}

/** Many tools/list requests at once: their answers (tens of KiB each) fill the pipe. */
function pipelinedLists(): string {
  const lines = [{ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'walk', version: '1' } } }];
  for (let id = 1; id <= PIPELINED; id++) lines.push({ jsonrpc: '2.0', id, method: 'tools/list' } as never);
  return lines.map((line) => JSON.stringify(line)).join('\n') + '\n';
}

describe('aipcs serve over stdio when the client reads slowly or goes away', () => {
  it('ends the session at once when the client closes its pipes with answers still owed, without Node warnings', async () => {
    const serve = startServe();
    serve.child.stdin.write(pipelinedLists());
    // Read the first answer only, so that the rest are waiting on a full pipe.
    await new Promise<void>((resolve) => serve.child.stdout.once('data', () => resolve()));
    serve.child.stdout.pause();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const closedAt = Date.now();
    serve.child.stdout.destroy();
    serve.child.stdin.end();
    const exit = await serve.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - closedAt).toBeLessThan(10_000);
    expect(serve.stderr()).not.toMatch(/MaxListenersExceededWarning|\(node:/);
  });

  it('gives a slow reader every pipelined answer in order, without Node warnings', async () => {
    const serve = startServe();
    serve.child.stdin.write(pipelinedLists());
    serve.child.stdin.end();
    serve.child.stdout.pause();
    await new Promise((resolve) => setTimeout(resolve, 500));
    let out = '';
    serve.child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    serve.child.stdout.resume();
    const exit = await serve.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    const answers = out.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { id: number; result?: { tools?: unknown[] } });
    expect(answers.map((answer) => answer.id)).toEqual(Array.from({ length: PIPELINED + 1 }, (_, id) => id));
    expect(answers.slice(1).every((answer) => answer.result?.tools?.length === 1)).toBe(true);
    expect(serve.stderr()).not.toMatch(/MaxListenersExceededWarning|\(node:/);
  });
});
