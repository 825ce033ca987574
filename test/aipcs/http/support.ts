// Test harness for `aipcs serve --transport streamable-http`: spawns the built
// bin on a free loopback port, waits for its ready line on stderr, and talks
// to it with the SDK's Streamable HTTP client or with raw node:http requests
// (raw, so tests control Host, Origin and every other header).

import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { aipcsBin } from '../../support/bins.js';
import type { Envelope } from '../../support/aipcs-client.js';

export type { Envelope } from '../../support/aipcs-client.js';

/** A port that was free a moment ago (the kernel picks it; we release it for the child). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface HttpAipcs {
  readonly port: number;
  readonly url: URL;
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Sends the signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const READY = /Streamable HTTP listener ready\n/;

/**
 * Starts `aipcs serve --transport streamable-http --http-port N ...ARGS` and
 * resolves once it is listening; rejects with its stderr if it exits first.
 */
export async function startHttpAipcs(args: string[], env: Record<string, string> = {}, port?: number): Promise<HttpAipcs> {
  const chosen = port ?? (await freePort());
  const child = spawn(process.execPath, [aipcsBin(), 'serve', '--transport', 'streamable-http', '--http-port', String(chosen), '--log-level', 'info', ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (READY.test(stderr)) resolve();
    });
    void exited.then((code) => reject(new Error(`aipcs exited with ${String(code)} before listening: ${stderr}`)));
  });
  return {
    port: chosen,
    url: new URL(`http://127.0.0.1:${chosen}/mcp`),
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface HttpClient {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  call(name: string, args?: Record<string, unknown>): Promise<Envelope>;
  close(): Promise<void>;
}

/** An SDK client over Streamable HTTP; tool results are checked as in the stdio helper. */
export async function connectHttp(url: URL): Promise<HttpClient> {
  const client = new Client({ name: 'aipcs-http-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  return {
    client,
    transport,
    async call(name, args = {}) {
      const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 });
      const content = result.content as { type: string; text: string }[];
      if (content.length !== 1 || content[0]?.type !== 'text') throw new Error('a tool result must hold exactly one text item');
      const envelope = JSON.parse(content[0].text) as Envelope;
      if (JSON.stringify(envelope) !== JSON.stringify(result.structuredContent)) throw new Error('text and structuredContent differ');
      if (result.isError !== !envelope.ok) throw new Error('isError does not mirror ok');
      return envelope;
    },
    close: () => client.close(),
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

export interface RawRequest {
  readonly method?: string;
  readonly path?: string;
  /** Sent exactly as given; `host` defaults to the listener's own `127.0.0.1:PORT`. */
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
}

/** One HTTP/1.1 request with full control over headers; reads the whole response. */
export function rawRequest(port: number, options: RawRequest = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: `127.0.0.1:${port}`, ...options.headers };
    const req = request({ host: '127.0.0.1', port, method: options.method ?? 'POST', path: options.path ?? '/mcp', headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    // A server that refuses early may close before the whole body is sent.
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    if (options.body !== undefined) req.end(options.body);
    else req.end();
  });
}

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } as const;

/** A JSON-RPC initialize body, as a client sends it first. */
export function initializeBody(id: number | string = 1): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
}

/** The data lines of an SSE response body, each parsed as JSON. */
export function sseMessages(body: string): unknown[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 6)
    .map((line) => JSON.parse(line.slice(6)) as unknown);
}

/** Opens a session with raw requests; returns its id (for tests that need a real session header). */
export async function rawSession(port: number): Promise<string> {
  const init = await rawRequest(port, { headers: MCP_HEADERS, body: initializeBody() });
  const id = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof id !== 'string') throw new Error(`initialize failed with ${init.status}`);
  const done = await rawRequest(port, {
    headers: { ...MCP_HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  if (done.status !== 202) throw new Error(`initialized notification failed with ${done.status}`);
  return id;
}
