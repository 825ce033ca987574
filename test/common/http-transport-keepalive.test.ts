// SSE keep-alive of the Streamable HTTP listener: open event streams (a
// session's GET stream, a POST whose call is still running) carry one kind of
// comment line at the configured interval, the SDK transport's own
// `: keepalive`, and nothing else is invented for the client. The listener
// adds no second timer of its own (there was one writing `: ping` beside the
// SDK's, so every stream got two comments per interval).
// Nothing here measures time: streams are read until the comments show.

import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import type { HttpListener } from '../../src/common/mcp/http-transport.js';
import { createToolServer } from '../../src/common/mcp/tool-server.js';
import { MCP_HEADERS, rawSession, sseMessages } from '../aipcs/http/support.js';
import { loopbackListener } from './echo-session.js';

const logger = createLogger('http-keepalive-test', 'silent');

/** Resolves the running call when the test says so. */
let releaseCall: (() => void) | undefined;

async function listen(): Promise<HttpListener> {
  return loopbackListener({
    sessionIdleTimeoutMs: 60_000,
    keepAliveMs: 20,
    logger,
    createSession: () =>
      createToolServer({
        name: 'slow-server',
        version: '1.0.0',
        logger,
        tools: [{ name: 'slow', description: 'Answers when released.', inputSchema: { type: 'object', additionalProperties: true, properties: {}, required: [] } }],
        callTool: async () => {
          await new Promise<void>((resolve) => (releaseCall = resolve));
          return { content: [{ type: 'text', text: 'done' }] };
        },
        onInvalidArguments: () => ({ content: [{ type: 'text', text: 'invalid' }], isError: true }),
        onUnknownTool: () => ({ content: [{ type: 'text', text: 'unknown' }], isError: true }),
        onUnexpectedError: () => ({ content: [{ type: 'text', text: 'internal' }], isError: true }),
      }),
  });
}

const commentLines = (text: string): string[] => text.split('\n').filter((line) => line.startsWith(':'));

/**
 * Sends the request and collects its response text; `onText` sees the text
 * so far after each chunk and may end the read early (the request is then
 * destroyed). Resolves with the status, the content type and the text.
 */
function streamed(
  port: number,
  options: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  onText: (text: string, stop: () => void) => void,
): Promise<{ status: number; type: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    let response: IncomingMessage | undefined;
    const done = (): void => resolve({ status: response?.statusCode ?? 0, type: response?.headers['content-type'], text });
    const req = request({ host: '127.0.0.1', port, method: options.method, path: '/mcp', headers: { host: `127.0.0.1:${port}`, ...options.headers }, agent: false }, (res) => {
      response = res;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        onText(text, () => {
          done();
          req.destroy();
        });
      });
      res.on('end', done);
    });
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
    req.end(options.body);
  });
}

describe('SSE keep-alive', () => {
  let listener: HttpListener;

  beforeAll(async () => {
    listener = await listen();
  });

  afterAll(async () => {
    releaseCall?.();
    await listener.close();
  });

  it('a quiet GET stream carries only the SDK transport`s keep-alive comments', async () => {
    const session = await rawSession(listener.port);
    const headers = { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    const started = performance.now();
    const stream = await streamed(listener.port, { method: 'GET', headers }, (text, stop) => {
      if (commentLines(text).length >= 3) stop();
    });
    // At the configured 20 ms, not the SDK's default 15 s (three of which would take 45 s).
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(stream.status).toBe(200);
    expect(stream.type).toBe('text/event-stream');
    expect(stream.text.split('\n').filter((line) => line !== '')).toEqual(commentLines(stream.text));
    expect(new Set(commentLines(stream.text))).toEqual(new Set([': keepalive']));
  });

  it('a POST stream of a call still running carries the same comments, then its answer', async () => {
    const session = await rawSession(listener.port);
    const headers = { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    const body = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{}}}';
    const stream = await streamed(listener.port, { method: 'POST', headers, body }, (text) => {
      if (commentLines(text).length >= 2) releaseCall?.();
    });
    expect(stream.status).toBe(200);
    expect(new Set(commentLines(stream.text))).toEqual(new Set([': keepalive']));
    expect(sseMessages(stream.text)).toEqual([{ jsonrpc: '2.0', id: 9, result: { content: [{ type: 'text', text: 'done' }] } }]);
  });
});
