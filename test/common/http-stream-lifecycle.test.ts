// Long-lived behaviour of the Streamable HTTP listener: a session's GET
// stream (one at a time), DELETE and idle expiry while streams are open or a
// call is running, many calls in flight in one session, and a client that
// hangs up in the middle of an answer (operations spec §6.1, docs/http.md).
// Nothing here measures time but a lower bound (a session lives at least its
// idle timeout): the tests wait for what they expect to see.

import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { losslessJson, type JsonObject } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import { type HttpListener, type HttpTransportOptions, type SessionCloseReason } from '../../src/common/mcp/http-transport.js';
import { createToolServer } from '../../src/common/mcp/tool-server.js';
import { initializeBody, MCP_HEADERS, rawRequest, rawSession, sseMessages } from '../aipcs/http/support.js';
import { echoServerOptions, loopbackListener } from './echo-session.js';

const logger = createLogger('http-stream-lifecycle-test', 'silent');

/** The echo server, whose calls wait until the test releases them (by their argument `n`). */
class GatedEcho {
  readonly calls: JsonObject[] = [];
  /** Keyed by the text of `n` (arguments hold lossless numbers, not plain ones). */
  private readonly waiting = new Map<string, () => void>();

  options(): HttpTransportOptions['createSession'] {
    const base = echoServerOptions(this.calls, logger);
    return () =>
      createToolServer({
        ...base,
        callTool: async (name, args) => {
          await new Promise<void>((resolve) => this.waiting.set(losslessJson(args['n'] ?? null), resolve));
          return base.callTool(name, args);
        },
      });
  }

  /** Resolves once the call with this `n` has reached the tool. */
  async started(n: number): Promise<void> {
    await expect.poll(() => this.waiting.has(String(n))).toBe(true);
  }

  release(n: number): void {
    const resolve = this.waiting.get(String(n));
    this.waiting.delete(String(n));
    resolve?.();
  }

  releaseAll(): void {
    for (const resolve of this.waiting.values()) resolve();
    this.waiting.clear();
  }
}

async function listen(echo: GatedEcho, overrides: Partial<HttpTransportOptions> = {}): Promise<HttpListener> {
  return loopbackListener({
    createSession: echo.options(),
    logger,
    ...overrides,
  });
}

const sessionHeaders = (id: string): Record<string, string> => ({ ...MCP_HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' });
const streamHeaders = (id: string): Record<string, string> => ({ accept: 'text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' });
const callBody = (id: number | string, n: number): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { n } } });

/** An open request whose response is read as it arrives; `hangUp` destroys the connection. */
interface OpenStream {
  readonly response: Promise<IncomingMessage>;
  /** Resolves with the whole text once the server ends the response (never if the client hangs up first). */
  readonly ended: Promise<string>;
  text(): string;
  hangUp(): void;
}

function openStream(port: number, method: 'GET' | 'POST', headers: Record<string, string>, body?: string): OpenStream {
  let text = '';
  let req: ClientRequest | undefined;
  let resolveEnded: (text: string) => void = () => undefined;
  const ended = new Promise<string>((resolve) => (resolveEnded = resolve));
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req = request({ host: '127.0.0.1', port, method, path: '/mcp', headers: { host: `127.0.0.1:${port}`, ...headers }, agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolveEnded(text));
      res.on('error', () => undefined);
      resolve(res);
    });
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
    req.end(body);
  });
  return { response, ended, text: () => text, hangUp: () => req?.destroy() };
}

const messageIds = (text: string): unknown[] => sseMessages(text).map((message) => (message as { id?: unknown }).id);

describe('a session`s GET stream', () => {
  it('is one at a time: a second gets 409 while the first is open, and opens once its client hung up', async () => {
    const echo = new GatedEcho();
    const listener = await listen(echo);
    try {
      const session = await rawSession(listener.port);
      const first = openStream(listener.port, 'GET', streamHeaders(session));
      const opened = await first.response;
      expect(opened.statusCode).toBe(200);
      expect(opened.headers['content-type']).toBe('text/event-stream');
      expect(opened.headers['mcp-session-id']).toBe(session);

      const second = await rawRequest(listener.port, { method: 'GET', headers: streamHeaders(session) });
      expect(second.status).toBe(409);
      expect(JSON.parse(second.body)).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Conflict: Only one SSE stream is allowed per session' }, id: null });

      first.hangUp();
      // A Last-Event-ID asks to resume; there is nothing to resume (events carry no id): a plain stream opens.
      await expect
        .poll(async () => {
          const again = openStream(listener.port, 'GET', { ...streamHeaders(session), 'last-event-id': '1' });
          const status = (await again.response).statusCode;
          again.hangUp();
          return status;
        })
        .toBe(200);
      // The session still serves requests.
      const call = openStream(listener.port, 'POST', sessionHeaders(session), callBody(5, 5));
      await echo.started(5);
      echo.release(5);
      expect(messageIds(await call.ended)).toEqual([5]);
    } finally {
      echo.releaseAll();
      await listener.close();
    }
  });

  it('ends when the session expires while it is open (an open stream alone is no activity); the id then gets 404', async () => {
    const echo = new GatedEcho();
    const closed: SessionCloseReason[] = [];
    const listener = await listen(echo, { sessionIdleTimeoutMs: 200, onSessionClosed: (reason) => closed.push(reason) });
    try {
      const session = await rawSession(listener.port);
      const stream = openStream(listener.port, 'GET', streamHeaders(session));
      expect((await stream.response).statusCode).toBe(200);
      expect(sseMessages(await stream.ended)).toEqual([]);
      expect(closed).toEqual(['expired']);
      expect((await rawRequest(listener.port, { method: 'GET', headers: streamHeaders(session) })).status).toBe(404);
    } finally {
      await listener.close();
    }
  });
});

describe('opening a session`s GET stream', () => {
  it('counts as activity: the session then stays a whole idle timeout, however long it was quiet before', async () => {
    const echo = new GatedEcho();
    const closed: SessionCloseReason[] = [];
    const listener = await listen(echo, { sessionIdleTimeoutMs: 2_000, onSessionClosed: (reason) => closed.push(reason) });
    try {
      const session = await rawSession(listener.port);
      // Quiet for half the timeout (a loaded machine may make it longer, not past the timeout), then the stream opens.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const stream = openStream(listener.port, 'GET', streamHeaders(session));
      expect((await stream.response).statusCode).toBe(200);
      const opened = performance.now();
      await stream.ended;
      // Only a lower bound: the expiry may come late, never early.
      // Counted from the last activity before it, the session would have ended about 1 s after the stream opened.
      expect(performance.now() - opened).toBeGreaterThanOrEqual(1_800);
      expect(closed).toEqual(['expired']);
    } finally {
      await listener.close();
    }
  });
});

describe('DELETE of a session that has streams open', () => {
  it('ends its GET stream and a POST whose call is still running, without an answer; the late answer goes nowhere', async () => {
    const echo = new GatedEcho();
    const closed: SessionCloseReason[] = [];
    const listener = await listen(echo, { onSessionClosed: (reason) => closed.push(reason) });
    try {
      const session = await rawSession(listener.port);
      const listening = openStream(listener.port, 'GET', streamHeaders(session));
      expect((await listening.response).statusCode).toBe(200);
      const call = openStream(listener.port, 'POST', sessionHeaders(session), callBody(7, 7));
      expect((await call.response).statusCode).toBe(200);
      await echo.started(7);

      const deleted = await rawRequest(listener.port, { method: 'DELETE', headers: sessionHeaders(session) });
      expect(deleted.status).toBe(200);
      expect(sseMessages(await listening.ended)).toEqual([]);
      expect(sseMessages(await call.ended)).toEqual([]);
      await expect.poll(() => closed).toEqual(['deleted']);
      expect(listener.sessionCount()).toBe(0);

      // The call finishes after its session is gone: nothing breaks, and a new session works.
      echo.release(7);
      await expect.poll(() => echo.calls.length).toBe(1);
      expect((await rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(8, 8) })).status).toBe(404);
      const next = await rawSession(listener.port);
      const answer = openStream(listener.port, 'POST', sessionHeaders(next), callBody(9, 9));
      await echo.started(9);
      echo.release(9);
      expect(messageIds(await answer.ended)).toEqual([9]);
    } finally {
      echo.releaseAll();
      await listener.close();
    }
  });
});

describe('calls in flight in one session', () => {
  it('answers each of many concurrent POSTs on its own stream, whatever order they finish in', async () => {
    const echo = new GatedEcho();
    const listener = await listen(echo);
    try {
      const session = await rawSession(listener.port);
      const count = 12;
      // Ids of both kinds, numbers and strings.
      const ids = Array.from({ length: count }, (_, n) => (n % 2 === 0 ? n + 100 : `call-${n}`));
      const streams = ids.map((id, n) => openStream(listener.port, 'POST', sessionHeaders(session), callBody(id, n)));
      for (let n = 0; n < count; n++) await echo.started(n);
      for (let n = count - 1; n >= 0; n -= 2) echo.release(n);
      for (let n = count - 2; n >= 0; n -= 2) echo.release(n);
      const texts = await Promise.all(streams.map((stream) => stream.ended));
      // No event carries an id: there is no stream to resume.
      expect(texts.flatMap((text) => text.split('\n')).filter((line) => line.startsWith('id:'))).toEqual([]);
      texts.forEach((text, n) => {
        const messages = sseMessages(text) as { id: unknown; result: { content: { text: string }[] } }[];
        expect(messages.map((message) => message.id)).toEqual([ids[n]]);
        expect(messages[0]?.result.content[0]?.text).toBe(JSON.stringify({ n }));
      });
    } finally {
      echo.releaseAll();
      await listener.close();
    }
  });

  it('refuses a request whose id a running call of the session still holds, so no answer goes to the wrong stream', async () => {
    const echo = new GatedEcho();
    const listener = await listen(echo);
    try {
      const session = await rawSession(listener.port);
      const first = openStream(listener.port, 'POST', sessionHeaders(session), callBody(5, 1));
      await echo.started(1);
      const reused = await rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(5, 2) });
      expect(reused.status).toBe(400);
      expect(JSON.parse(reused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: request id already in use' }, id: null });
      // The same id in another session, or as a string, is another id.
      const other = await rawSession(listener.port);
      const elsewhere = openStream(listener.port, 'POST', sessionHeaders(other), callBody(5, 3));
      const asText = openStream(listener.port, 'POST', sessionHeaders(session), callBody('5', 4));
      for (const n of [3, 4]) await echo.started(n);
      echo.releaseAll();
      const answers = await Promise.all([first, elsewhere, asText].map(async (stream) => sseMessages(await stream.ended)));
      expect(answers).toEqual(
        [[5, 1], [5, 3], ['5', 4]].map(([id, n]) => [{ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: JSON.stringify({ n }) }] } }]),
      );
      expect(echo.calls).toHaveLength(3);
      // Answered, the id may come again (a client retrying after a hang-up, say).
      const again = openStream(listener.port, 'POST', sessionHeaders(session), callBody(5, 6));
      await echo.started(6);
      echo.release(6);
      expect(messageIds(await again.ended)).toEqual([5]);
    } finally {
      echo.releaseAll();
      await listener.close();
    }
  });
});

describe('a client that hangs up while its call runs', () => {
  it('leaves the session idle, so it expires while the call still runs; the late answer breaks nothing', async () => {
    const echo = new GatedEcho();
    const closed: SessionCloseReason[] = [];
    const listener = await listen(echo, { sessionIdleTimeoutMs: 200, onSessionClosed: (reason) => closed.push(reason) });
    try {
      const session = await rawSession(listener.port);
      const call = openStream(listener.port, 'POST', sessionHeaders(session), callBody(1, 1));
      expect((await call.response).statusCode).toBe(200);
      await echo.started(1);
      call.hangUp();
      await expect.poll(() => closed, { timeout: 5_000 }).toEqual(['expired']);
      echo.release(1);
      await expect.poll(() => echo.calls.length).toBe(1);
      expect(listener.sessionCount()).toBe(0);
    } finally {
      echo.releaseAll();
      await listener.close();
    }
  });

  it('keeps its id taken until the call is answered: a request reusing it meanwhile is refused, not given the old answer', async () => {
    const echo = new GatedEcho();
    const listener = await listen(echo);
    try {
      const session = await rawSession(listener.port);
      const call = openStream(listener.port, 'POST', sessionHeaders(session), callBody(5, 1));
      expect((await call.response).statusCode).toBe(200);
      await echo.started(1);
      call.hangUp();
      const reused = openStream(listener.port, 'POST', sessionHeaders(session), callBody(5, 2));
      expect((await reused.response).statusCode).toBe(400);
      expect(JSON.parse(await reused.ended)).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: request id already in use' }, id: null });
      echo.release(1);
      await expect.poll(() => echo.calls.length).toBe(1);
      const again = openStream(listener.port, 'POST', sessionHeaders(session), callBody(5, 3));
      await echo.started(3);
      echo.release(3);
      expect(sseMessages(await again.ended)).toEqual([{ jsonrpc: '2.0', id: 5, result: { content: [{ type: 'text', text: JSON.stringify({ n: 3 }) }] } }]);
      // A cancelled call is never answered: its id is free at once.
      const cancelled = openStream(listener.port, 'POST', sessionHeaders(session), callBody(6, 4));
      await echo.started(4);
      const cancel = await rawRequest(listener.port, { headers: sessionHeaders(session), body: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}' });
      expect(cancel.status).toBe(202);
      expect(sseMessages(await cancelled.ended)).toEqual([]);
      const afterCancel = openStream(listener.port, 'POST', sessionHeaders(session), callBody(6, 5));
      await echo.started(5);
      echo.release(5);
      expect(messageIds(await afterCancel.ended)).toEqual([6]);
    } finally {
      echo.releaseAll();
      await listener.close();
    }
  });

  it('leaves the session idle, so a new session past the cap can evict it', async () => {
    const echo = new GatedEcho();
    const closed: SessionCloseReason[] = [];
    const listener = await listen(echo, { maxSessions: 1, onSessionClosed: (reason) => closed.push(reason) });
    try {
      const session = await rawSession(listener.port);
      const call = openStream(listener.port, 'POST', sessionHeaders(session), callBody(1, 1));
      expect((await call.response).statusCode).toBe(200);
      await echo.started(1);
      call.hangUp();
      await expect.poll(async () => (await rawRequest(listener.port, { headers: MCP_HEADERS, body: initializeBody() })).status).toBe(200);
      expect(closed).toEqual(['evicted']);
      expect(listener.sessionCount()).toBe(1);
      echo.release(1);
      await expect.poll(() => echo.calls.length).toBe(1);
    } finally {
      echo.releaseAll();
      await listener.close();
    }
  });
});
