// The HTTP listener bounds each request body, and also the body bytes all
// POSTs hold at once: 16 concurrent 8 MiB bodies took the server past 250 MB.
// A POST reserves its declared size before reading a byte; one that does not
// fit waits, first come first served, until an earlier request's handling
// ends. Real HTTP over loopback against the real listener, with a small
// budget: 100 KiB, room for one 60 000-byte body and small requests beside it.

import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import type { HttpListener, SessionHooks } from '../../src/common/mcp/http-transport.js';
import { createToolServer, type ToolServer } from '../../src/common/mcp/tool-server.js';
import { MCP_HEADERS, rawRequest, rawSession, sseMessages, type RawResponse } from '../aipcs/http/support.js';
import { echoServerOptions, loopbackListener } from './echo-session.js';

const logger = createLogger('http-body-budget-test', 'silent');
const LARGE = 60_000;

type ListenerOverrides = { shutdownGraceMs?: number; bodyDeadlineMs?: number; maxPostsAnswering?: number };

/** The tags of the echo calls started so far; a call with `hold: true` waits until `open()`. */
interface Probe {
  readonly started: string[];
  readonly gate: Promise<void>;
  open(): void;
}

function probedListener(probe: Probe, overrides: ListenerOverrides = {}): Promise<HttpListener> {
  const base = echoServerOptions([], logger);
  const createSession = (hooks: SessionHooks): ToolServer =>
    createToolServer({
      ...base,
      onCallSettled: hooks.onCallSettled,
      callTool: async (name, args) => {
        probe.started.push(String(args['tag']));
        if (args['hold'] === true) await probe.gate;
        // An answer larger than the socket buffers, for a client that does not read it.
        if (args['answerBytes'] !== undefined) return { content: [{ type: 'text', text: 'x'.repeat(Number(args['answerBytes'])) }] };
        return base.callTool(name, { tag: args['tag'] ?? null });
      },
    });
  return loopbackListener({ createSession, logger, maxBodyBytes: 64 * 1024, bodyBudgetBytes: 100 * 1024, ...overrides });
}

function newProbe(): Probe {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return { started: [], gate, open: () => open() };
}

function headers(session: string): Record<string, string> {
  return { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
}

/** A tools/call body of exactly `size` bytes (padded), tagged for the probe. */
function largeCall(id: number, tag: string, size = LARGE, hold = false): string {
  const head = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"tag":"${tag}","hold":${hold},"pad":"`;
  const tail = '"}}}';
  return head + 'a'.repeat(size - head.length - tail.length) + tail;
}

/** The echo tool's answer: the tag of the call. */
function answeredTag(response: RawResponse): unknown {
  const [message] = sseMessages(response.body) as { result?: { content: { text: string }[] } }[];
  const text = message?.result?.content[0]?.text;
  return text === undefined ? undefined : (JSON.parse(text) as { tag: unknown }).tag;
}

interface OpenPost {
  /** The response, or 'closed' when the connection ended without one. */
  readonly answer: Promise<RawResponse | 'closed'>;
  write(chunk: string): void;
  end(chunk?: string): void;
  abort(): void;
}

/** A POST whose Content-Length is `length` and whose body the test writes when it likes. */
function openPost(port: number, session: string, length: number): OpenPost {
  let req: ReturnType<typeof request> | undefined;
  const answer = new Promise<RawResponse | 'closed'>((resolve) => {
    let responded = false;
    req = request(
      { host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: { host: `127.0.0.1:${port}`, ...headers(session), 'content-length': String(length) }, agent: false },
      (res) => {
        responded = true;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('close', () => resolve('closed'));
      },
    );
    req.on('error', () => undefined);
    req.on('close', () => (responded ? undefined : resolve('closed')));
    req.flushHeaders();
  });
  const sending = req as NonNullable<typeof req>;
  return { answer, write: (chunk) => void sending.write(chunk), end: (chunk) => void sending.end(chunk), abort: () => void sending.destroy() };
}

/** A POST that declares no length: node sends its body chunked. */
function chunkedPost(port: number, session: string, body: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: { host: `127.0.0.1:${port}`, ...headers(session) }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.write(body);
    req.end();
  });
}

function post(port: number, session: string, body: string): OpenPost {
  const sent = openPost(port, session, Buffer.byteLength(body));
  sent.end(body);
  return sent;
}

/** Lets a request that should wait get as far as it would without the budget (only the failing-before case needs this). */
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const ping = (port: number, session: string): Promise<RawResponse> => rawRequest(port, { headers: headers(session), body: '{"jsonrpc":"2.0","id":"p","method":"ping"}' });

interface Budgeted {
  readonly probe: Probe;
  readonly listener: HttpListener;
  readonly port: number;
  readonly session: string;
}

/** Runs `test` against a fresh budgeted listener with one session; the probe's gate is opened and the listener closed afterwards. */
async function withBudgetedListener(test: (budgeted: Budgeted) => Promise<void>, overrides: ListenerOverrides = {}): Promise<void> {
  const probe = newProbe();
  const listener = await probedListener(probe, overrides);
  try {
    await test({ probe, listener, port: listener.port, session: await rawSession(listener.port) });
  } finally {
    probe.open();
    await listener.close();
  }
}

describe('the HTTP listener bounds the request-body bytes it holds at once', () => {
  it('a large body that does not fit beside a running one is read and answered only after that request ends', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      const order: string[] = [];
      const first = post(port, session, largeCall(1, 'first', LARGE, true));
      void first.answer.then(() => order.push('first'));
      await expect.poll(() => probe.started).toEqual(['first']);
      const second = post(port, session, largeCall(2, 'second'));
      void second.answer.then(() => order.push('second'));
      await pause(300);
      expect(probe.started).toEqual(['first']);
      expect(order).toEqual([]);
      probe.open();
      const [one, two] = await Promise.all([first.answer, second.answer]);
      expect(order).toEqual(['first', 'second']);
      expect(one !== 'closed' && answeredTag(one)).toBe('first');
      expect(two !== 'closed' && answeredTag(two)).toBe('second');
    });
  });

  it('a body of exactly the bound reserves all of it: a large body beside it waits', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      // 64 KiB held and 60 000 bytes more exceed the 100 KiB budget.
      const first = post(port, session, largeCall(1, 'first', 64 * 1024, true));
      await expect.poll(() => probe.started).toEqual(['first']);
      const second = post(port, session, largeCall(2, 'second'));
      await pause(300);
      expect(probe.started).toEqual(['first']);
      probe.open();
      const [one, two] = await Promise.all([first.answer, second.answer]);
      expect(one !== 'closed' && answeredTag(one)).toBe('first');
      expect(two !== 'closed' && answeredTag(two)).toBe('second');
    });
  });

  it('a body declared large and sent in part holds its reservation until it is complete', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ port, session }) => {
      const order: string[] = [];
      const body = largeCall(1, 'partial');
      const partial = openPost(port, session, body.length);
      partial.write(body.slice(0, LARGE / 2));
      void partial.answer.then(() => order.push('partial'));
      // Its headers reach the listener before the second request's.
      await pause(200);
      const second = post(port, session, largeCall(2, 'second'));
      void second.answer.then(() => order.push('second'));
      await pause(300);
      expect(order).toEqual([]);
      partial.end(body.slice(LARGE / 2));
      const [one, two] = await Promise.all([partial.answer, second.answer]);
      expect(order).toEqual(['partial', 'second']);
      expect(one !== 'closed' && answeredTag(one)).toBe('partial');
      expect(two !== 'closed' && answeredTag(two)).toBe('second');
    });
  });

  it('a chunked body reserves the bound only until it is read, then what it holds', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      // Each reserves the 64 KiB bound before reading; two did not fit the
      // 100 KiB budget, so the second waited for the first call to end.
      const first = chunkedPost(port, session, largeCall(1, 'first', 300, true));
      await expect.poll(() => probe.started).toEqual(['first']);
      const second = await chunkedPost(port, session, largeCall(2, 'second', 300));
      expect(answeredTag(second)).toBe('second');
      expect(probe.started).toEqual(['first', 'second']);
      probe.open();
      expect(answeredTag(await first)).toBe('first');
    });
  });

  it('a body that stops arriving is answered 408 at its deadline, and its reservation goes to the next', { timeout: 20_000 }, async () => {
    await withBudgetedListener(
      async ({ probe, port, session }) => {
        const body = largeCall(1, 'stalled');
        const stalled = openPost(port, session, body.length);
        stalled.write(body.slice(0, LARGE / 2));
        await pause(100);
        const second = post(port, session, largeCall(2, 'second'));
        const refused = await stalled.answer;
        expect(refused !== 'closed' && refused.status).toBe(408);
        expect(refused !== 'closed' && JSON.parse(refused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Request Timeout' }, id: null });
        expect(answeredTag((await second.answer) as RawResponse)).toBe('second');
        expect(probe.started).toEqual(['second']);
      },
      { bodyDeadlineMs: 1_000 },
    );
  });

  it('serves small requests beside a large body that holds most of the budget', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      const held = post(port, session, largeCall(1, 'held', LARGE, true));
      await expect.poll(() => probe.started).toEqual(['held']);
      expect((await ping(port, session)).status).toBe(200);
      const list = await rawRequest(port, { headers: headers(session), body: '{"jsonrpc":"2.0","id":"l","method":"tools/list"}' });
      expect(list.status).toBe(200);
      const small = await rawRequest(port, { headers: headers(session), body: largeCall(3, 'small', 300) });
      expect(answeredTag(small)).toBe('small');
      expect(await rawSession(port)).toMatch(/^[0-9a-f]{32}$/);
      probe.open();
      expect(((await held.answer) as RawResponse).status).toBe(200);
    });
  });

  it('serves waiting bodies first come first served: a small one that would fit waits behind a large one already waiting', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      const held = post(port, session, largeCall(1, 'held', LARGE, true));
      await expect.poll(() => probe.started).toEqual(['held']);
      const large = post(port, session, largeCall(2, 'large'));
      await pause(200);
      // 300 bytes fit beside the held body, but the large one came first.
      const small = rawRequest(port, { headers: headers(session), body: largeCall(3, 'small', 300) });
      await pause(300);
      expect(probe.started).toEqual(['held']);
      probe.open();
      expect(answeredTag(await small)).toBe('small');
      expect(answeredTag((await large.answer) as RawResponse)).toBe('large');
      expect([...probe.started].sort()).toEqual(['held', 'large', 'small']);
      expect(((await held.answer) as RawResponse).status).toBe(200);
    });
  });

  it('refuses a body declared over the bound 413 at once, without waiting for room in the budget', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      const held = post(port, session, largeCall(1, 'held', LARGE, true));
      await expect.poll(() => probe.started).toEqual(['held']);
      // 70 000 bytes: over the 64 KiB bound, and more than the budget has left beside the held body.
      const oversized = rawRequest(port, { headers: headers(session), body: largeCall(2, 'oversized', 70_000) });
      const answer = await Promise.race([oversized, pause(3_000).then(() => 'still waiting' as const)]);
      expect(answer !== 'still waiting' && answer.status).toBe(413);
      expect(probe.started).toEqual(['held']);
      probe.open();
      expect(((await held.answer) as RawResponse).status).toBe(200);
    });
  });

  it('a client that leaves while it waits gives up its place, and later bodies are served', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      const held = post(port, session, largeCall(1, 'held', LARGE, true));
      await expect.poll(() => probe.started).toEqual(['held']);
      const leaving = post(port, session, largeCall(2, 'leaving'));
      await pause(300);
      leaving.abort();
      expect(await leaving.answer).toBe('closed');
      const later = post(port, session, largeCall(3, 'later'));
      probe.open();
      expect(((await held.answer) as RawResponse).status).toBe(200);
      expect(answeredTag((await later.answer) as RawResponse)).toBe('later');
      // Nothing of the budget stays reserved: two large bodies in turn, then a small request.
      const [a, b] = await Promise.all([post(port, session, largeCall(4, 'a')).answer, post(port, session, largeCall(5, 'b')).answer]);
      expect([a, b].map((response) => answeredTag(response as RawResponse)).sort()).toEqual(['a', 'b']);
      expect((await ping(port, session)).status).toBe(200);
      expect(probe.started).not.toContain('leaving');
    });
  });

  it('a waiting client that leaves from the head of the queue lets the ones behind it start, if they fit', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      const held = post(port, session, largeCall(1, 'held', LARGE, true));
      await expect.poll(() => probe.started).toEqual(['held']);
      const leaving = post(port, session, largeCall(2, 'leaving'));
      await pause(200);
      const small = rawRequest(port, { headers: headers(session), body: largeCall(3, 'small', 300) });
      await pause(300);
      expect(probe.started).toEqual(['held']);
      leaving.abort();
      expect(await leaving.answer).toBe('closed');
      // The held body still runs: the small one fits beside it and starts now.
      const answer = await Promise.race([small, pause(3_000).then(() => 'still waiting' as const)]);
      expect(answer !== 'still waiting' && answeredTag(answer)).toBe('small');
      expect(probe.started).toEqual(['held', 'small']);
      probe.open();
      expect(((await held.answer) as RawResponse).status).toBe(200);
    });
  });

  it('a client that leaves while its body is being read frees its reservation', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, port, session }) => {
      const body = largeCall(1, 'leaving');
      const leaving = openPost(port, session, body.length);
      leaving.write(body.slice(0, LARGE / 2));
      await pause(200);
      leaving.abort();
      expect(await leaving.answer).toBe('closed');
      const [a, b] = await Promise.all([post(port, session, largeCall(2, 'a')).answer, post(port, session, largeCall(3, 'b')).answer]);
      expect([a, b].map((response) => answeredTag(response as RawResponse)).sort()).toEqual(['a', 'b']);
      expect(probe.started).not.toContain('leaving');
    });
  });

  it('closing the listener answers a waiting request 503', { timeout: 20_000 }, async () => {
    await withBudgetedListener(async ({ probe, listener, port, session }) => {
      const held = post(port, session, largeCall(1, 'held', LARGE, true));
      await expect.poll(() => probe.started).toEqual(['held']);
      const waiting = post(port, session, largeCall(2, 'waiting'));
      await pause(300);
      const closed = listener.close();
      const refused = await waiting.answer;
      expect(refused !== 'closed' && refused.status).toBe(503);
      expect(refused !== 'closed' && JSON.parse(refused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Service Unavailable' }, id: null });
      probe.open();
      await closed;
      await held.answer;
      expect(probe.started).toEqual(['held']);
    }, { shutdownGraceMs: 2_000 });
  });
});

describe('the HTTP listener bounds the POSTs it answers at once', () => {
  it('a POST past the bound waits, reading nothing, until an earlier one has been answered', { timeout: 20_000 }, async () => {
    await withBudgetedListener(
      async ({ probe, port, session }) => {
        const first = post(port, session, largeCall(1, 'first', 300, true));
        const second = post(port, session, largeCall(2, 'second', 300, true));
        await expect.poll(() => [...probe.started].sort()).toEqual(['first', 'second']);
        const third = post(port, session, largeCall(3, 'third', 300));
        await pause(300);
        expect(probe.started).not.toContain('third');
        probe.open();
        const answers = await Promise.all([first.answer, second.answer, third.answer]);
        expect(answers.map((response) => answeredTag(response as RawResponse))).toEqual(['first', 'second', 'third']);
      },
      { maxPostsAnswering: 2 },
    );
  });

  it('a cancelled call keeps its place until its handler ends, so calls and cancellations cannot pile up', { timeout: 20_000 }, async () => {
    await withBudgetedListener(
      async ({ probe, port, session }) => {
        // The SDK drops a cancelled call's answer but cannot stop the call;
        // its place went back with its stream, so any number ran at once.
        const cancelled = rawRequest(port, { headers: headers(session), body: largeCall(1, 'cancelled', 300, true) });
        await expect.poll(() => probe.started).toEqual(['cancelled']);
        const cancel = await rawRequest(port, { headers: headers(session), body: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}' });
        expect(cancel.status).toBe(202);
        expect(sseMessages((await cancelled).body)).toEqual([]);
        const running = rawRequest(port, { headers: headers(session), body: largeCall(2, 'running', 300, true) });
        await expect.poll(() => probe.started).toEqual(['cancelled', 'running']);
        const waiting = rawRequest(port, { headers: headers(session), body: largeCall(3, 'waiting', 300) });
        await pause(300);
        expect(probe.started).toEqual(['cancelled', 'running']);
        probe.open();
        expect(answeredTag(await running)).toBe('running');
        expect(answeredTag(await waiting)).toBe('waiting');
      },
      { maxPostsAnswering: 2 },
    );
  });

  it('an answer its client does not read holds its place until the client goes, so unread answers cannot pile up', { timeout: 20_000 }, async () => {
    // Each unread answer stayed in memory, about 5 MB a page of records,
    // however many calls a client sent.
    await withBudgetedListener(
      async ({ probe, port, session }) => {
        const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { tag: 'unread', answerBytes: 32 * 1024 * 1024 } } });
        const head = Object.entries({ host: `127.0.0.1:${port}`, ...headers(session), 'content-length': String(Buffer.byteLength(body)) }).map(([name, value]) => `${name}: ${value}`);
        const unread = connect(port, '127.0.0.1');
        unread.on('error', () => undefined);
        unread.write(`POST /mcp HTTP/1.1\r\n${head.join('\r\n')}\r\n\r\n${body}`);
        // The socket is never read from: the answer fills the buffers and waits.
        unread.pause();
        await expect.poll(() => probe.started).toEqual(['unread']);
        const next = post(port, session, largeCall(2, 'next', 300));
        await pause(500);
        expect(probe.started).toEqual(['unread']);
        unread.destroy();
        expect(answeredTag((await next.answer) as RawResponse)).toBe('next');
      },
      { maxPostsAnswering: 1 },
    );
  });
});
