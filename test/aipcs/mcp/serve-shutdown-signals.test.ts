// `aipcs serve` ends gracefully on SIGINT, SIGTERM and SIGHUP (decision D36):
// over stdio it stops reading, answers the requests it had already read,
// closes storage (SQLite checkpoints its WAL) and exits 0, as at the end of
// input; the HTTP listener shuts down the same way on SIGHUP as on SIGINT and
// SIGTERM. Before, those signals (and SIGHUP over HTTP) took their default
// action: the process died at once, a record create that had committed went
// unanswered, and the data root kept its -wal and -shm files. A client that
// reads no answers cannot hold the server: once the grace is over, the signal
// takes its default action after all; over HTTP, a second signal takes it at once.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freshDataRoot, materialisedService, rootArgs, serveOn } from '../../support/aipcs-admin.js';
import { aipcsBin, builtBin } from '../../support/bins.js';
import { startHttpAipcs } from '../http/support.js';

interface Serve {
  readonly child: ChildProcessWithoutNullStreams;
  /** Answer lines by id. */
  readonly answers: Map<number, Record<string, unknown>>;
  /** Resolves once the answer with this id has been read. */
  answered(id: number): Promise<void>;
  stderr(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startServe(args: string[]): Serve {
  const child = spawn(process.execPath, [aipcsBin(), 'serve', ...args], { env: { PATH: process.env['PATH'] ?? '' }, timeout: 60_000 });
  const answers = new Map<number, Record<string, unknown>>();
  const waiting = new Map<number, () => void>();
  let stderr = '';
  let out = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (let newline = out.indexOf('\n'); newline !== -1; newline = out.indexOf('\n')) {
      const message = JSON.parse(out.slice(0, newline)) as Record<string, unknown>;
      out = out.slice(newline + 1);
      const id = message['id'] as number;
      answers.set(id, message);
      waiting.get(id)?.();
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return {
    child,
    answers,
    answered: (id) => (answers.has(id) ? Promise.resolve() : new Promise((resolve) => waiting.set(id, resolve))),
    stderr: () => stderr,
    exited,
  };
}

const line = (message: Record<string, unknown>): string => `${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`;
const INITIALIZE = line({ id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'signals', version: '1' } } }) + line({ method: 'notifications/initialized' });

/** The envelope of a tools/call answer. */
function envelope(answer: Record<string, unknown> | undefined): { ok: boolean } | undefined {
  const result = answer?.['result'] as { content: { text: string }[] } | undefined;
  return result ? (JSON.parse(result.content[0]?.text ?? 'null') as { ok: boolean }) : undefined;
}

describe('aipcs serve on SIGINT, SIGTERM and SIGHUP', () => {
  it('over stdio: answers every create it had read, commits nothing unanswered, exits 0 and leaves no WAL files', { timeout: 60_000 }, async () => {
    const dataRoot = freshDataRoot();
    const setup = await serveOn(dataRoot);
    const serviceId = await materialisedService(setup, 'signalled');
    await setup.close();

    const serve = startServe(rootArgs(dataRoot));
    const creates = 20;
    let batch = INITIALIZE;
    for (let id = 1; id <= creates; id++) {
      batch += line({ id, method: 'tools/call', params: { name: 'aipcs_record_create', arguments: { service_id: serviceId, entity_name: 'note', record: { title: `note ${id}` }, idempotency_key: `signalled-${id}` } } });
    }
    serve.child.stdin.write(batch);
    // The client keeps stdin open: only the signal ends the session.
    await serve.answered(1);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toEqual({ code: 0, signal: null });
    expect(serve.stderr()).toBe('');

    const answeredOk = [...Array(creates).keys()].filter((index) => envelope(serve.answers.get(index + 1))?.ok === true).length;
    expect(answeredOk).toBe(creates);
    // Storage was closed: the last connection checkpointed and removed the WAL.
    expect(readdirSync(dataRoot).filter((name) => name.endsWith('-wal') || name.endsWith('-shm'))).toEqual([]);
    expect(readdirSync(join(dataRoot, 'service-stores')).filter((name) => name.endsWith('-wal') || name.endsWith('-shm'))).toEqual([]);

    const reader = await serveOn(dataRoot);
    const listed = await reader.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note', limit: 100 });
    await reader.close();
    expect((listed.result?.['records'] as unknown[]).length).toBe(answeredOk);
  });

  it('over stdio: an idle server whose client keeps stdin open exits 0 on SIGHUP and on SIGINT', { timeout: 30_000 }, async () => {
    for (const signal of ['SIGHUP', 'SIGINT'] as const) {
      const serve = startServe([]);
      serve.child.stdin.write(INITIALIZE);
      await serve.answered(0);
      serve.child.kill(signal);
      expect(await serve.exited).toEqual({ code: 0, signal: null });
      expect(serve.stderr()).toBe('');
    }
  });

  it('over stdio: a client that reads no answers cannot keep it alive; the signal takes effect once the grace is over', { timeout: 40_000 }, async () => {
    const serve = startServe([]);
    // tools/list answers are tens of KiB each: a hundred fill the pipe.
    let batch = INITIALIZE;
    for (let id = 1; id <= 100; id++) batch += line({ id, method: 'tools/list' });
    serve.child.stdin.write(batch);
    await serve.answered(0);
    serve.child.stdout.pause();
    serve.child.kill('SIGTERM');
    // Before, the answers still owed kept the process waiting for good.
    expect(await serve.exited).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('over HTTP: SIGHUP shuts the listener down like SIGTERM (exit 0)', { timeout: 30_000 }, async () => {
    const aipcs = await startHttpAipcs(['--profile', 'stateless']);
    expect(await aipcs.stop('SIGHUP')).toBe(0);
    expect(aipcs.stderr()).toContain('shutting down the Streamable HTTP listener');
  });

  it('over HTTP: a second signal during a slow shutdown takes its default action (the first one\'s handlers are gone)', { timeout: 40_000 }, async () => {
    // The HTTP server's own signal wait, in a process kept alive as by its listener, whose shutdown then takes 20 s.
    const module = pathToFileURL(builtBin('aipcs/mcp/http-server.js')).href;
    const script = `import { untilShutdownSignal } from ${JSON.stringify(module)};
      setInterval(() => undefined, 1_000);
      const first = untilShutdownSignal();
      process.stdout.write('ready\\n');
      process.stdout.write(\`first \${await first}\\n\`);
      setTimeout(() => process.exit(0), 20_000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env['PATH'] ?? '' }, timeout: 30_000 });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
    let out = '';
    const seen = (text: string): Promise<void> =>
      new Promise((resolve) => {
        const look = (): void => void (out.includes(text) && resolve());
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => ((out += chunk), look()));
        look();
      });
    await seen('ready\n');
    child.kill('SIGTERM');
    await seen('first SIGTERM\n');
    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: null, signal: 'SIGTERM' });
  });
});
