// A stdio client that ends the server's stdin but never reads the answers it
// is owed (its end of our stdout stays open and full) cannot keep the server
// alive: once the end of input has waited for those answers (60 s, shortened
// here by the test-only AIPCS_TEST_ANSWER_WAIT_MS and
// AIGPT_TEST_ANSWER_WAIT_MS), the session closes and
// the process exits 0 as at a normal end of input. Before, the session
// closed but the answers still queued on stdout kept the process alive for
// as long as the client held the pipe open: for good. The same holds for a
// shutdown signal while stdin stays open: after its grace the signal takes
// its default action. Both also hold when the answers left unread are few
// enough to fit in stdout's own buffer behind the full pipe (decision D37).

import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freshDataRoot, rootArgs } from '../support/aipcs-admin.js';
import { aipcsBin } from '../support/bins.js';
import { aigptBin, makeTempHome, type TempHome, writeConfig } from '../aigpt/support.js';

const line = (message: Record<string, unknown>): string => `${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`;
const INITIALIZE = line({ id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'no-reader', version: '1' } } });

/**
 * Sends `count` tools/list requests whose answers each echo an id of
 * `idBytes` (together more than the pipe and the reader's buffer hold),
 * never reads stdout, and then either ends stdin or, keeping it open, sends
 * SIGTERM once the answers have filled the pipe; resolves with how the
 * server ended.
 */
async function withoutReading(args: string[], env: NodeJS.ProcessEnv, then: 'end-input' | 'sigterm', count: number, idBytes: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  // The kill is only a safety net: a server that lingers fails with SIGKILL.
  const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'ignore'], timeout: 40_000, killSignal: 'SIGKILL' });
  child.stdout.pause();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  child.stdin.on('error', () => undefined);
  let batch = INITIALIZE;
  for (let n = 1; n <= count; n++) batch += line({ id: `${String(n)}-${'x'.repeat(idBytes)}`, method: 'tools/list' });
  if (then === 'end-input') child.stdin.end(batch);
  else {
    child.stdin.write(batch);
    // Long enough for the answers to fill the pipe (a few milliseconds of work) on a loaded machine.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    child.kill('SIGTERM');
  }
  const ended = await exited;
  child.stdin.destroy();
  child.stdout.destroy();
  return ended;
}

/** How many bytes a pipe (a FIFO here) holds before a writer must wait: written without blocking until it is full, then read back out. */
function pipeCapacity(fifo: string): number {
  const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeEnd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  const page = Buffer.alloc(1024, 0x20);
  let capacity = 0;
  try {
    for (;;) capacity += writeSync(writeEnd, page);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
  }
  const sink = Buffer.alloc(64 * 1024);
  let drained = 0;
  while (drained < capacity) drained += readSync(readEnd, sink);
  closeSync(writeEnd);
  closeSync(readEnd);
  return capacity;
}

/**
 * As withoutReading, but the server's stdout is a FIFO the test holds open
 * and never reads, and the answers (pings of 2 KiB each) come to about 8 KiB
 * more than the pipe holds: few enough to fit in the output stream's own
 * buffer (16 KiB), so that the write of each returns true.
 */
async function overflowingThePipe(args: string[], env: NodeJS.ProcessEnv, then: 'end-input' | 'sigterm'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const folder = mkdtempSync(join(tmpdir(), 'aipcs-fifo-'));
  const fifo = join(folder, 'stdout');
  execFileSync('mkfifo', [fifo]);
  try {
    const answerBytes = 2048;
    // A ping's answer is {"jsonrpc":"2.0","id":ID,"result":{}} and a newline; the initialize answer is about 200 bytes.
    const idBytes = answerBytes - `${JSON.stringify({ jsonrpc: '2.0', id: '', result: {} })}\n`.length;
    const count = Math.round((pipeCapacity(fifo) + 8 * 1024 - 200) / answerBytes);
    let batch = INITIALIZE;
    for (let n = 0; n < count; n++) batch += line({ id: String(n).padStart(idBytes, '0'), method: 'ping' });
    const readEnd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeEnd = openSync(fifo, constants.O_WRONLY);
    const child = spawn(process.execPath, args, { env, stdio: ['pipe', writeEnd, 'ignore'], timeout: 40_000, killSignal: 'SIGKILL' });
    closeSync(writeEnd);
    const { stdin } = child;
    if (!stdin) throw new Error('the child has no stdin pipe');
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    stdin.on('error', () => undefined);
    if (then === 'end-input') stdin.end(batch);
    else {
      stdin.write(batch);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      child.kill('SIGTERM');
    }
    const ended = await exited;
    stdin.destroy();
    closeSync(readEnd);
    return ended;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

describe('a stdio client that never reads its answers', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:noreader' });
  });
  afterEach(() => home.cleanup());

  // The grace is 5 s; the test's SIGKILL after 40 s would mean the signal was ignored.
  describe('and gets a shutdown signal while it keeps stdin open', () => {
    it('aipcs serve ends by the signal after its grace', { timeout: 60_000 }, async () => {
      const dataRoot = freshDataRoot();
      expect(await withoutReading([aipcsBin(), 'serve', ...rootArgs(dataRoot)], { PATH: process.env['PATH'] ?? '' }, 'sigterm', 100, 2 * 1024)).toEqual({ code: null, signal: 'SIGTERM' });
      rmSync(dirname(dataRoot), { recursive: true, force: true });
    });

    it('aigpt server ends by the signal after its grace', { timeout: 60_000 }, async () => {
      expect(await withoutReading([aigptBin(), 'server'], home.childEnv, 'sigterm', 100, 2 * 1024)).toEqual({ code: null, signal: 'SIGTERM' });
    });
  });

  // Before, an answer counted as written once the output stream had buffered
  // it: these answers all had, so the session closed with nothing owed and
  // the buffered write held the process open after the signal, or after the
  // end of input, for good.
  describe('when the answers left unread fit in the output stream\'s own buffer', () => {
    it('aipcs serve ends by the signal after its grace', { timeout: 60_000 }, async () => {
      const dataRoot = freshDataRoot();
      expect(await overflowingThePipe([aipcsBin(), 'serve', ...rootArgs(dataRoot)], { PATH: process.env['PATH'] ?? '' }, 'sigterm')).toEqual({ code: null, signal: 'SIGTERM' });
      rmSync(dirname(dataRoot), { recursive: true, force: true });
    });

    it('aigpt server ends by the signal after its grace', { timeout: 60_000 }, async () => {
      expect(await overflowingThePipe([aigptBin(), 'server'], home.childEnv, 'sigterm')).toEqual({ code: null, signal: 'SIGTERM' });
    });

    it('aipcs serve exits 0 once its wait for the answers is over', { timeout: 60_000 }, async () => {
      const dataRoot = freshDataRoot();
      expect(await overflowingThePipe([aipcsBin(), 'serve', ...rootArgs(dataRoot)], { PATH: process.env['PATH'] ?? '', AIPCS_TEST_ANSWER_WAIT_MS: '200' }, 'end-input')).toEqual({ code: 0, signal: null });
      rmSync(dirname(dataRoot), { recursive: true, force: true });
    });

    it('aigpt server exits 0 once its wait for the answers is over', { timeout: 60_000 }, async () => {
      expect(await overflowingThePipe([aigptBin(), 'server'], { ...home.childEnv, AIGPT_TEST_ANSWER_WAIT_MS: '200' }, 'end-input')).toEqual({ code: 0, signal: null });
    });
  });

  describe('and ends stdin', () => {
    it('aipcs serve closes storage and exits 0 once its wait for the answers is over', { timeout: 60_000 }, async () => {
      const dataRoot = freshDataRoot();
      const ended = await withoutReading([aipcsBin(), 'serve', ...rootArgs(dataRoot)], { PATH: process.env['PATH'] ?? '', AIPCS_TEST_ANSWER_WAIT_MS: '200' }, 'end-input', 12, 32 * 1024);
      expect(ended).toEqual({ code: 0, signal: null });
      // Storage was closed first: the last connection checkpointed and removed the WAL.
      expect(readdirSync(dataRoot).filter((name) => name.endsWith('-wal') || name.endsWith('-shm'))).toEqual([]);
      rmSync(dirname(dataRoot), { recursive: true, force: true });
    });

    it('aigpt server exits 0 once its wait for the answers is over', { timeout: 60_000 }, async () => {
      const ended = await withoutReading([aigptBin(), 'server'], { ...home.childEnv, AIGPT_TEST_ANSWER_WAIT_MS: '200' }, 'end-input', 12, 32 * 1024);
      expect(ended).toEqual({ code: 0, signal: null });
    });
  });
});
