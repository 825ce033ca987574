// The generic Streamable HTTP listener in process, on a free loopback port,
// with a one-tool echo server: lossless arguments, the spec's request checks
// (and that a refused request never reaches a session or a tool), body
// bounds, sessions (delete, expiry, isolation) and shutdown.

import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { losslessJson, type JsonObject } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import { createToolServer, type ToolServer } from '../../src/common/mcp/tool-server.js';
import {
  HttpExposureError,
  startHttpTransport,
  type HttpListener,
  type HttpTransportOptions,
  type SessionCloseReason,
} from '../../src/common/mcp/http-transport.js';
import { initializeBody, MCP_HEADERS, rawRequest, rawSession, sseMessages } from '../aipcs/http/support.js';

const logger = createLogger('http-test', 'silent');

interface Probe {
  sessions: number;
  calls: JsonObject[];
  /** When set, the echo tool waits for it before answering. */
  gate?: Promise<void>;
}

function echoServer(probe: Probe): ToolServer {
  probe.sessions++;
  return createToolServer({
    name: 'echo-server',
    version: '1.0.0',
    logger,
    tools: [{ name: 'echo', description: 'Echo the arguments.', inputSchema: { type: 'object', additionalProperties: true, properties: {}, required: [] } }],
    callTool: async (_name, args) => {
      probe.calls.push(args);
      if (probe.gate) await probe.gate;
      return { content: [{ type: 'text', text: losslessJson(args) }] };
    },
    onInvalidArguments: () => ({ content: [{ type: 'text', text: 'invalid' }], isError: true }),
    onUnknownTool: () => ({ content: [{ type: 'text', text: 'unknown' }], isError: true }),
    onUnexpectedError: () => ({ content: [{ type: 'text', text: 'internal' }], isError: true }),
  });
}

async function listen(probe: Probe, overrides: Partial<HttpTransportOptions> = {}): Promise<HttpListener> {
  return startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    allowedHosts: ['127.0.0.1:*', 'localhost:*'],
    allowedOrigins: ['http://localhost:3000'],
    sessionIdleTimeoutMs: 60_000,
    allowNonLoopback: false,
    createSession: () => echoServer(probe),
    logger,
    ...overrides,
  });
}

function sessionHeaders(id: string): Record<string, string> {
  return { ...MCP_HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
}

function callBody(id: number, args: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":${args}}}`;
}

async function sdkClient(port: number): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`));
  await client.connect(transport);
  return { client, transport };
}

/**
 * Writes the whole request before reading anything, as a client that sends
 * first and reads after does, and resolves with what the server sent. Were
 * the server to close with request bytes unread, its reset would reach the
 * client before the answer (which the client's system then drops): an error.
 */
function sentThenRead(port: number, request: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.pause();
    socket.on('error', reject);
    socket.write(request, (error) => {
      if (error) return reject(error);
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.resume();
    });
  });
}

describe('exposure', () => {
  it('refuses a non-loopback bind without the opt-in and a Host list, before binding anything', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    await expect(listen(probe, { host: '0.0.0.0', allowNonLoopback: false })).rejects.toBeInstanceOf(HttpExposureError);
    await expect(listen(probe, { host: '0.0.0.0', allowNonLoopback: true, allowedHosts: [] })).rejects.toBeInstanceOf(HttpExposureError);
    await expect(listen(probe, { host: '192.0.2.1', allowNonLoopback: false })).rejects.toBeInstanceOf(HttpExposureError);
  });

  it('rejects when the port is taken', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const first = await listen(probe);
    await expect(listen(probe, { port: first.port })).rejects.toThrow();
    await first.close();
  });
});

describe('the listener', () => {
  const probe: Probe = { sessions: 0, calls: [] };
  let listener: HttpListener;
  const port = (): number => listener.port;

  beforeAll(async () => {
    listener = await listen(probe);
  });

  afterAll(async () => {
    await listener.close();
  });

  afterEach(() => {
    delete probe.gate;
  });

  it('serves initialize, tools/list and tools/call to the SDK client', async () => {
    const { client, transport } = await sdkClient(port());
    expect(transport.sessionId).toMatch(/^[0-9a-f]{32}$/);
    expect(client.getServerVersion()).toEqual({ name: 'echo-server', version: '1.0.0' });
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo']);
    const result = await client.callTool({ name: 'echo', arguments: { a: 1 } });
    expect(result.content).toEqual([{ type: 'text', text: '{"a":1}' }]);
    await client.close();
  });

  it('hands tools the arguments exactly as written: 1.0 stays a float, big integers stay exact, nulls stay', async () => {
    const session = await rawSession(port());
    const response = await rawRequest(port(), { headers: sessionHeaders(session), body: callBody(5, '{"f":1.0,"i":1,"big":9007199254740993,"nested":{"x":[2.5,-0.0],"n":null},"none":null}') });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    const [message] = sseMessages(response.body) as { id: number; result: { content: { text: string }[] } }[];
    expect(message?.id).toBe(5);
    // A null member of the arguments is the tool's data: only null members of the other params read as absent.
    expect(message?.result.content[0]?.text).toBe('{"f":1.0,"i":1,"big":9007199254740993,"nested":{"x":[2.5,-0.0],"n":null},"none":null}');
  });

  it('treats absent or null arguments as {}', async () => {
    const session = await rawSession(port());
    const none = await rawRequest(port(), { headers: sessionHeaders(session), body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}' });
    expect((sseMessages(none.body)[0] as { result: { content: { text: string }[] } }).result.content[0]?.text).toBe('{}');
    const nulled = await rawRequest(port(), { headers: sessionHeaders(session), body: callBody(2, 'null') });
    expect((sseMessages(nulled.body)[0] as { result: { content: { text: string }[] } }).result.content[0]?.text).toBe('{}');
  });

  it('answers non-object arguments with -32602 without echoing them, and the session stays usable', async () => {
    const session = await rawSession(port());
    const before = probe.calls.length;
    for (const args of ['"secret-text"', '[1,2]', '42']) {
      const response = await rawRequest(port(), { headers: sessionHeaders(session), body: callBody(9, args) });
      expect(response.status).toBe(200);
      expect(sseMessages(response.body)).toEqual([{ jsonrpc: '2.0', id: 9, error: { code: -32602, message: 'Invalid request parameters' } }]);
      expect(response.body).not.toContain('secret');
    }
    expect(probe.calls.length).toBe(before);
    const ok = await rawRequest(port(), { headers: sessionHeaders(session), body: callBody(10, '{"k":"v"}') });
    expect((sseMessages(ok.body)[0] as { result: { content: { text: string }[] } }).result.content[0]?.text).toBe('{"k":"v"}');
  });

  it('refuses a batch with 400 -32600 and routes none of its messages, as the reference does (one message a POST)', async () => {
    const session = await rawSession(port());
    const calls = probe.calls.length;
    const response = await rawRequest(port(), { headers: sessionHeaders(session), body: `[${callBody(1, '{"n":1.0}')},${callBody(2, '{"n":2}')}]` });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' }, id: null });
    expect(probe.calls.length).toBe(calls);
  });

  it('keeps sessions apart: the same request id in two sessions carries each its own arguments', async () => {
    const [first, second] = await Promise.all([rawSession(port()), rawSession(port())]);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const calls = [
      rawRequest(port(), { headers: sessionHeaders(first), body: callBody(7, '{"who":"first"}') }),
      rawRequest(port(), { headers: sessionHeaders(second), body: callBody(7, '{"who":"second"}') }),
    ];
    await expect.poll(() => probe.calls.filter((call) => call['who'] !== undefined).length).toBeGreaterThanOrEqual(2);
    open();
    const [a, b] = await Promise.all(calls);
    expect((sseMessages(a?.body ?? '')[0] as { result: { content: { text: string }[] } }).result.content[0]?.text).toBe('{"who":"first"}');
    expect((sseMessages(b?.body ?? '')[0] as { result: { content: { text: string }[] } }).result.content[0]?.text).toBe('{"who":"second"}');
  });

  it('sends neither Date nor Server headers, on success or refusal', async () => {
    const ok = await rawRequest(port(), { headers: MCP_HEADERS, body: initializeBody() });
    const refused = await rawRequest(port(), { method: 'GET' });
    for (const response of [ok, refused]) {
      expect(response.headers['date']).toBeUndefined();
      expect(response.headers['server']).toBeUndefined();
      expect(response.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('ends a session on DELETE; its id then gets 404', async () => {
    const { client, transport } = await sdkClient(port());
    const id = transport.sessionId ?? '';
    const count = listener.sessionCount();
    await transport.terminateSession();
    expect(listener.sessionCount()).toBe(count - 1);
    const after = await rawRequest(port(), { headers: sessionHeaders(id), body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(after.status).toBe(404);
    await client.close();
  });

  it('checks MCP-Protocol-Version against the revisions the servers negotiate, not all the SDK knows', async () => {
    const narrow = await listen(probe, { protocolVersions: ['2025-06-18', '2024-11-05'] });
    const id = await rawSession(narrow.port);
    const ping = (version?: string) =>
      rawRequest(narrow.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': id, ...(version ? { 'mcp-protocol-version': version } : {}) }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect((await ping('2025-06-18')).status).toBe(200);
    expect((await ping()).status).toBe(200);
    for (const version of ['2025-03-26', '2024-10-07', 'bogus-version']) {
      const refused = await ping(version);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body)).toEqual({
        jsonrpc: '2.0',
        error: { code: -32600, message: 'Bad Request: Unsupported protocol version (supported versions: 2025-06-18, 2024-11-05)' },
        id: null,
      });
    }
    const get = await rawRequest(narrow.port, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2024-10-07' } });
    expect(get.status).toBe(400);
    const del = await rawRequest(narrow.port, { method: 'DELETE', headers: { 'mcp-session-id': id, 'mcp-protocol-version': '2024-10-07' } });
    expect(del.status).toBe(400);
    // The refused DELETE left the session open.
    expect(narrow.sessionCount()).toBe(1);
    // An unknown session is still 404 whatever the version.
    expect((await rawRequest(narrow.port, { method: 'DELETE', headers: { 'mcp-session-id': 'unknown', 'mcp-protocol-version': 'bogus' } })).status).toBe(404);
    await narrow.close();
  });

  describe('refuses before any session or tool is reached', () => {
    const seedCall = callBody(99, '{"should":"never arrive"}');
    let session: string;

    beforeAll(async () => {
      session = await rawSession(port());
    });

    const cases: { name: string; status: number; request: () => Parameters<typeof rawRequest>[1] }[] = [
      { name: 'POST without Content-Type', status: 400, request: () => ({ headers: { accept: MCP_HEADERS.accept, 'mcp-session-id': session }, body: seedCall }) },
      { name: 'POST with text/plain', status: 400, request: () => ({ headers: { ...sessionHeaders(session), 'content-type': 'text/plain' }, body: seedCall }) },
      { name: 'POST with application/json-seq (415, as the reference: it starts as JSON but is not)', status: 415, request: () => ({ headers: { ...sessionHeaders(session), 'content-type': 'application/json-seq' }, body: seedCall }) },
      { name: 'a batch', status: 400, request: () => ({ headers: sessionHeaders(session), body: `[${seedCall}]` }) },
      { name: 'an empty batch', status: 400, request: () => ({ headers: sessionHeaders(session), body: '[]' }) },
      { name: 'foreign Host', status: 421, request: () => ({ headers: { ...sessionHeaders(session), host: 'evil.example:80' }, body: seedCall }) },
      { name: 'allowed name on a port outside :*', status: 421, request: () => ({ headers: { ...sessionHeaders(session), host: '127.0.0.1' }, body: seedCall }) },
      { name: 'allowed name under :* with a port beyond 65535', status: 421, request: () => ({ headers: { ...sessionHeaders(session), host: '127.0.0.1:99999' }, body: seedCall }) },
      { name: 'allowed name under :* with a port beyond 65535 on an initialize', status: 421, request: () => ({ headers: { ...MCP_HEADERS, host: 'localhost:65536' }, body: initializeBody() }) },
      {
        name: 'foreign Host with an allowed X-Forwarded-Host',
        status: 421,
        request: () => ({ headers: { ...sessionHeaders(session), host: 'evil.example', 'x-forwarded-host': `127.0.0.1:${port()}`, 'x-forwarded-for': '127.0.0.1' }, body: seedCall }),
      },
      { name: 'foreign Origin', status: 403, request: () => ({ headers: { ...sessionHeaders(session), origin: 'http://evil.example' }, body: seedCall }) },
      { name: 'Origin null', status: 403, request: () => ({ headers: { ...sessionHeaders(session), origin: 'null' }, body: seedCall }) },
      { name: 'allowed Origin on another port', status: 403, request: () => ({ headers: { ...sessionHeaders(session), origin: 'http://localhost:3001' }, body: seedCall }) },
      { name: 'DNS rebinding: foreign Host and Origin', status: 421, request: () => ({ headers: { ...sessionHeaders(session), host: 'evil.example', origin: 'http://evil.example' }, body: seedCall }) },
      { name: 'GET without Accept', status: 406, request: () => ({ method: 'GET', headers: { 'mcp-session-id': session } }) },
      { name: 'GET accepting only JSON', status: 406, request: () => ({ method: 'GET', headers: { accept: 'application/json', 'mcp-session-id': session } }) },
      { name: 'another path', status: 404, request: () => ({ path: '/mcp/other', headers: sessionHeaders(session), body: seedCall }) },
      { name: 'PUT', status: 405, request: () => ({ method: 'PUT', headers: sessionHeaders(session), body: seedCall }) },
      { name: 'PUT from a foreign Host (the method is checked before Host)', status: 405, request: () => ({ method: 'PUT', headers: { ...sessionHeaders(session), host: 'evil.example' }, body: seedCall }) },
      { name: 'POST accepting only JSON', status: 406, request: () => ({ headers: { ...sessionHeaders(session), accept: 'application/json' }, body: seedCall }) },
      { name: 'POST accepting only text/event-stream', status: 406, request: () => ({ headers: { ...sessionHeaders(session), accept: 'text/event-stream' }, body: seedCall }) },
      { name: 'GET without a session', status: 400, request: () => ({ method: 'GET', headers: { accept: 'text/event-stream' } }) },
      { name: 'DELETE without a session', status: 400, request: () => ({ method: 'DELETE' }) },
      { name: 'unknown session', status: 404, request: () => ({ headers: sessionHeaders('00000000-0000-4000-8000-000000000000'), body: seedCall }) },
      { name: 'no session on a non-initialize POST', status: 400, request: () => ({ headers: MCP_HEADERS, body: seedCall }) },
      { name: 'malformed JSON', status: 400, request: () => ({ headers: sessionHeaders(session), body: '{"jsonrpc":"2.0",' }) },
      { name: 'invalid UTF-8', status: 400, request: () => ({ headers: sessionHeaders(session), body: Buffer.from([0x7b, 0xff, 0x7d]) }) },
      { name: 'a body that is not JSON-RPC', status: 400, request: () => ({ headers: sessionHeaders(session), body: '{"not":"jsonrpc"}' }) },
      { name: 'nesting deeper than the bound', status: 400, request: () => ({ headers: sessionHeaders(session), body: '['.repeat(200) + ']'.repeat(200) }) },
      { name: 'foreign Host on an initialize', status: 421, request: () => ({ headers: { ...MCP_HEADERS, host: 'evil.example' }, body: initializeBody() }) },
      { name: 'foreign Origin on an initialize', status: 403, request: () => ({ headers: { ...MCP_HEADERS, origin: 'http://evil.example' }, body: initializeBody() }) },
    ];

    for (const { name, status, request } of cases) {
      it(`${name} → ${status}`, async () => {
        const sessions = probe.sessions;
        const calls = probe.calls.length;
        const response = await rawRequest(port(), request());
        expect(response.status).toBe(status);
        expect(response.body).not.toContain('evil');
        expect(response.body).not.toContain('never arrive');
        expect(probe.sessions).toBe(sessions);
        expect(probe.calls.length).toBe(calls);
      });
    }

    it('reads a refused body away before answering, so a client that sends all before it reads gets its status', async () => {
      const body = Buffer.concat([Buffer.from(seedCall), Buffer.alloc(16 * 1024 * 1024, 0x20)]);
      for (const header of ['Host: evil.example', `Host: 127.0.0.1:${port()}\r\nOrigin: http://evil.example`]) {
        const head = `POST /mcp HTTP/1.1\r\n${header}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n\r\n`;
        const answer = await sentThenRead(port(), Buffer.concat([Buffer.from(head), body]));
        expect(answer).toMatch(/^HTTP\/1\.1 (421|403) /);
        expect(answer).not.toContain('never arrive');
      }
    });

    it('stops reading a refused body after 64 MiB: the exchange ends while a client that would send 512 MiB is still sending', async () => {
      const socket = connect({ host: '127.0.0.1', port: port() });
      let ended = false;
      const end = new Promise<void>((resolve) => {
        const finish = (): void => {
          ended = true;
          resolve();
        };
        // Either the refusal or a reset (the rest of the body stays unread): both end it.
        socket.once('data', finish);
        socket.once('error', finish);
        socket.once('close', finish);
      });
      socket.write(`POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${512 * 1024 * 1024}\r\n\r\n`);
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      while (!ended && sent < 160 * 1024 * 1024) {
        if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), end]);
        sent += chunk.length;
      }
      // Were the whole body read, the client would reach its 160 MiB and then wait (for the discard's time bound).
      expect(ended).toBe(true);
      expect(sent).toBeLessThan(160 * 1024 * 1024);
      socket.destroy();
    });

    it('names the methods it serves in the Allow header of a 405', async () => {
      const response = await rawRequest(port(), { method: 'PUT', headers: sessionHeaders(session), body: seedCall });
      expect(response.status).toBe(405);
      expect(response.headers['allow']).toBe('GET, POST, DELETE');
    });

    // Node keeps only the first of repeated header lines in `headers`: each
    // repetition below must be refused, whichever line comes first.
    const handWritten = (lines: string[], body: string): Promise<string> =>
      sentThenRead(port(), Buffer.from(`POST /mcp HTTP/1.1\r\n${lines.join('\r\n')}\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
    const statusLine = (text: string): string => text.split('\r\n')[0] ?? '';

    it('refuses two Host lines 421, two Content-Type lines 400 and two Mcp-Session-Id lines 400', async () => {
      const ping = '{"jsonrpc":"2.0","id":5,"method":"ping"}';
      const own = `Host: 127.0.0.1:${port()}`;
      const sessionLine = `Mcp-Session-Id: ${session}`;
      for (const hosts of [[own, 'Host: evil.example'], ['Host: evil.example', own]]) {
        expect(statusLine(await handWritten([...hosts, 'Content-Type: application/json', sessionLine], ping))).toBe('HTTP/1.1 421 Misdirected Request');
      }
      for (const types of [['application/json', 'text/plain'], ['application/json', 'application/json']]) {
        expect(statusLine(await handWritten([own, ...types.map((type) => `Content-Type: ${type}`), sessionLine], ping))).toBe('HTTP/1.1 400 Bad Request');
      }
      const twice = await handWritten([own, 'Content-Type: application/json', sessionLine, sessionLine], ping);
      expect(statusLine(twice)).toBe('HTTP/1.1 400 Bad Request');
      expect(twice).toContain('Mcp-Session-Id header must appear once');
      // The same requests with one line each are served.
      expect(statusLine(await handWritten([own, 'Content-Type: application/json', sessionLine, 'MCP-Protocol-Version: 2025-06-18', 'Connection: close'], ping))).toBe('HTTP/1.1 200 OK');
    });

    it('answers an HTTP/1.1 request without Host 400 in plain text, without Date', async () => {
      const text = await handWritten(['Content-Type: application/json', `Mcp-Session-Id: ${session}`], '{"jsonrpc":"2.0","id":6,"method":"ping"}');
      expect(text).toBe('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 30\r\nConnection: close\r\n\r\nInvalid HTTP request received.');
    });

    it('accepts a request without Origin, and an allowed Origin, Host alias and case', async () => {
      for (const headers of [sessionHeaders(session), { ...sessionHeaders(session), origin: 'http://LOCALHOST:3000', host: `LocalHost:${port()}` }]) {
        const response = await rawRequest(port(), { headers, body: '{"jsonrpc":"2.0","id":3,"method":"ping"}' });
        expect(response.status).toBe(200);
        expect(sseMessages(response.body)).toEqual([{ jsonrpc: '2.0', id: 3, result: {} }]);
      }
    });
  });
});

describe('an allowed Host that no URL can hold', () => {
  it('is answered 400 by the listener itself, not 421 and never the parser\'s text', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const listener = await listen(probe, { allowedHosts: ['1.2.3.999:*', '127.0.0.1:*'] });
    try {
      const response = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, host: '1.2.3.999:80' }, body: initializeBody() });
      expect(response.status).toBe(400);
      expect(JSON.parse(response.body)).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: Invalid Host header' }, id: null });
      expect(probe.sessions).toBe(0);
    } finally {
      await listener.close();
    }
  });
});

describe('body bounds', () => {
  const probe: Probe = { sessions: 0, calls: [] };
  let listener: HttpListener;

  beforeAll(async () => {
    listener = await listen(probe, { maxBodyBytes: 4096 });
  });

  afterAll(async () => {
    await listener.close();
  });

  it('refuses a declared oversized body with 413 before reading it', async () => {
    const response = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'content-length': '1000000' }, body: Buffer.alloc(1_000_000, 0x20) });
    expect(response.status).toBe(413);
    expect(probe.sessions).toBe(0);
  });

  it('refuses a streamed (chunked) oversized body with 413', async () => {
    const response = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'transfer-encoding': 'chunked' }, body: `${initializeBody()}${' '.repeat(5000)}` });
    expect(response.status).toBe(413);
    expect(probe.sessions).toBe(0);
  });

  it('accepts a body at the bound', async () => {
    const body = initializeBody();
    const response = await rawRequest(listener.port, { headers: MCP_HEADERS, body: body + ' '.repeat(4096 - Buffer.byteLength(body)) });
    expect(response.status).toBe(200);
    expect(probe.sessions).toBe(1);
  });
});

describe('idle expiry and shutdown', () => {
  it('closes a session idle for longer than the timeout; its id then gets 404', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const closed: SessionCloseReason[] = [];
    let expired: () => void = () => undefined;
    const expiredSignal = new Promise<void>((resolve) => (expired = resolve));
    const listener = await listen(probe, {
      sessionIdleTimeoutMs: 200,
      onSessionClosed: (reason) => {
        closed.push(reason);
        if (reason === 'expired') expired();
      },
    });
    const session = await rawSession(listener.port);
    expect(listener.sessionCount()).toBe(1);
    await expiredSignal;
    expect(listener.sessionCount()).toBe(0);
    const after = await rawRequest(listener.port, { headers: sessionHeaders(session), body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(after.status).toBe(404);
    expect(closed).toEqual(['expired']);
    await listener.close();
  });

  it('does not expire a session while a call in it is running, and counts activity', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const closed: SessionCloseReason[] = [];
    const listener = await listen(probe, { sessionIdleTimeoutMs: 150, onSessionClosed: (reason) => closed.push(reason) });
    const session = await rawSession(listener.port);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const call = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(1, '{}') });
    await expect.poll(() => probe.calls.length).toBe(1);
    // Three idle periods pass while the call runs: the session must survive them.
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(closed).toEqual([]);
    open();
    expect((await call).status).toBe(200);
    await expect.poll(() => closed, { timeout: 5_000 }).toEqual(['expired']);
    await listener.close();
  });

  it('ends the stream of a cancelled call, which gets no answer, so the session can expire', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const closed: SessionCloseReason[] = [];
    const listener = await listen(probe, { sessionIdleTimeoutMs: 150, onSessionClosed: (reason) => closed.push(reason) });
    const session = await rawSession(listener.port);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const cancel = (id: number, extra = '') => rawRequest(listener.port, { headers: sessionHeaders(session), body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id}${extra}}}` });
    const call = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(1, '{}') });
    await expect.poll(() => probe.calls.length).toBe(1);
    expect((await cancel(1)).status).toBe(202);
    // The stream ends at once, without a message (the Server drops the answer).
    const ended = await call;
    expect(ended.status).toBe(200);
    expect(sseMessages(ended.body)).toEqual([]);
    open();
    await expect.poll(() => closed, { timeout: 5_000 }).toEqual(['expired']);
    await listener.close();
  });

  it('ends the stream of a cancelled call at once; a cancellation the Server ignores ends nothing', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const listener = await listen(probe);
    const session = await rawSession(listener.port);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const two = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(2, '{"n":2}') });
    const three = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(3, '{"n":3}') });
    await expect.poll(() => probe.calls.length).toBe(2);
    const cancel = (body: string) => rawRequest(listener.port, { headers: sessionHeaders(session), body });
    // Invalid for the SDK's schema (reason is not a string), so the Server still answers request 3.
    expect((await cancel('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":5}}')).status).toBe(202);
    expect((await cancel('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}')).status).toBe(202);
    // Request 2's stream ends while the gate is still shut, without a message.
    expect(sseMessages((await two).body)).toEqual([]);
    open();
    expect(sseMessages((await three).body).map((message) => (message as { id: number }).id)).toEqual([3]);
    await listener.close();
  });

  it('on close waits for running calls only until they have answered, not for the whole grace', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const listener = await listen(probe, { shutdownGraceMs: 30_000 });
    const session = await rawSession(listener.port);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const call = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(1, '{}') });
    await expect.poll(() => probe.calls.length).toBe(1);
    const closing = listener.close();
    open();
    expect((await call).status).toBe(200);
    const closed = await Promise.race([closing.then(() => 'closed' as const), new Promise((resolve) => setTimeout(() => resolve('still closing'), 3_000))]);
    expect(closed).toBe('closed');
  });

  it('on close keeps the session of a running call open while the call runs, within the grace', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const closed: SessionCloseReason[] = [];
    const listener = await listen(probe, { shutdownGraceMs: 30_000, onSessionClosed: (reason) => closed.push(reason) });
    const session = await rawSession(listener.port);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const call = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(1, '{"slow":true}') });
    await expect.poll(() => probe.calls.length).toBe(1);
    const closing = listener.close();
    // The call is still running well after close began: its session must not be closed under it.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(closed).toEqual([]);
    open();
    const answered = await call;
    expect((sseMessages(answered.body)[0] as { result: { content: { text: string }[] } }).result.content[0]?.text).toBe('{"slow":true}');
    await closing;
    expect(closed).toEqual(['shutdown']);
  });

  it('answers 503 to a request that comes in while it closes, on a connection opened before', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const listener = await listen(probe);
    const session = await rawSession(listener.port);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const call = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(1, '{}') });
    await expect.poll(() => probe.calls.length).toBe(1);
    // A connection opened before the close, whose request comes in the grace the running call keeps.
    const socket = await new Promise<Socket>((resolve, reject) => {
      const opened = connect({ host: '127.0.0.1', port: listener.port }, () => resolve(opened));
      opened.on('error', reject);
    });
    const closing = listener.close();
    const ping = '{"jsonrpc":"2.0","id":2,"method":"ping"}';
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    const ended = new Promise((resolve) => socket.on('close', resolve));
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${listener.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
        `Mcp-Session-Id: ${session}\r\nContent-Length: ${ping.length}\r\n\r\n${ping}`,
    );
    await ended;
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    open();
    await call;
    await closing;
  });

  it('on close stops accepting, closes every session and lets a running call answer', async () => {
    const probe: Probe = { sessions: 0, calls: [] };
    const closed: SessionCloseReason[] = [];
    const listener = await listen(probe, { onSessionClosed: (reason) => closed.push(reason) });
    const { client } = await sdkClient(listener.port);
    const session = await rawSession(listener.port);
    let open: () => void = () => undefined;
    probe.gate = new Promise<void>((resolve) => (open = resolve));
    const call = rawRequest(listener.port, { headers: sessionHeaders(session), body: callBody(1, '{"late":true}') });
    await expect.poll(() => probe.calls.length).toBe(1);
    const closing = listener.close();
    open();
    const answered = await call;
    expect((sseMessages(answered.body)[0] as { result: { content: { text: string }[] } }).result.content[0]?.text).toBe('{"late":true}');
    await closing;
    expect(closed.sort()).toEqual(['shutdown', 'shutdown']);
    expect(listener.sessionCount()).toBe(0);
    await expect(rawRequest(listener.port, { headers: MCP_HEADERS, body: initializeBody() })).rejects.toThrow();
    await client.close();
  });
});
