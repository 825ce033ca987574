// Operations spec §6.2 against the real `aipcs serve` listener: every check of
// the table with its status code, DNS-rebinding style requests, oversized
// bodies, X-Forwarded-* ignored. Each refused request carries a real session
// and a tool call that would seed a service; afterwards the registry must
// still be empty, so nothing reached the application.

import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';
import { connectHttp, initializeBody, MCP_HEADERS, rawRequest, rawSession, sseMessages, startHttpAipcs, type HttpAipcs, type HttpClient, type RawRequest } from './support.js';

const EIGHT_MIB = 8 * 1024 * 1024;

function seedCall(id: number): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'aipcs_service_seed', arguments: { domain_name: `refused_${id}`, domain_class: 'k', intent_description: 'Must never be stored.', idempotency_key: `refused-${id}` } },
  });
}

/** The Accept, session and protocol-version lines of a POST in a live session (one session line per id given). */
function sessionLines(sessionIds: string[]): string[] {
  return ['Accept: application/json, text/event-stream', ...sessionIds.map((id) => `Mcp-Session-Id: ${id}`), 'MCP-Protocol-Version: 2025-06-18'];
}

/** Sends a hand-written POST of `body` with these header lines (repeats kept, as node's client would not) and returns the whole answer. */
function handWrittenPost(port: number, headerLines: string[], body: string, version = '1.1'): Promise<string> {
  const request = [`POST /mcp HTTP/${version}`, ...headerLines, `Content-Length: ${body.length}`, 'Connection: close', '', body].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

describe('request checks of the Streamable HTTP listener', () => {
  let aipcs: HttpAipcs;
  let observer: HttpClient;
  let session: string;
  let host: string;

  const headers = (extra: Record<string, string> = {}): Record<string, string> => ({
    ...MCP_HEADERS,
    'mcp-session-id': session,
    'mcp-protocol-version': '2025-06-18',
    ...extra,
  });

  beforeAll(async () => {
    aipcs = await startHttpAipcs([...sqliteArgs(freshDataRoot()), '--http-allowed-origins', 'http://localhost:5173']);
    host = `127.0.0.1:${aipcs.port}`;
    observer = await connectHttp(aipcs.url);
    session = await rawSession(aipcs.port);
  });

  afterAll(async () => {
    await observer.close();
    expect(await aipcs.stop()).toBe(0);
  });

  const refused: { name: string; status: number; request: (id: number) => RawRequest }[] = [
    { name: 'POST without Content-Type', status: 400, request: (id) => ({ headers: { accept: MCP_HEADERS.accept, 'mcp-session-id': session }, body: seedCall(id) }) },
    { name: 'POST with Content-Type text/plain (a CORS "simple" request)', status: 400, request: (id) => ({ headers: headers({ 'content-type': 'text/plain' }), body: seedCall(id) }) },
    { name: 'POST with a form Content-Type', status: 400, request: (id) => ({ headers: headers({ 'content-type': 'application/x-www-form-urlencoded' }), body: seedCall(id) }) },
    { name: 'Host not in the list', status: 421, request: (id) => ({ headers: headers({ host: 'attacker.example' }), body: seedCall(id) }) },
    { name: 'Host allowed name on another port', status: 421, request: (id) => ({ headers: headers({ host: 'localhost:1' }), body: seedCall(id) }) },
    { name: 'Host without port', status: 421, request: (id) => ({ headers: headers({ host: '127.0.0.1' }), body: seedCall(id) }) },
    {
      name: 'DNS rebinding: attacker name resolved to 127.0.0.1 (foreign Host and Origin)',
      status: 421,
      request: (id) => ({ headers: headers({ host: `rebind.attacker.example:${aipcs.port}`, origin: `http://rebind.attacker.example:${aipcs.port}` }), body: seedCall(id) }),
    },
    {
      name: 'foreign Host with X-Forwarded-Host/-For/-Proto naming the listener (ignored)',
      status: 421,
      request: (id) => ({ headers: headers({ host: 'attacker.example', 'x-forwarded-host': host, 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'http' }), body: seedCall(id) }),
    },
    { name: 'cross-site page posting to the loopback address (foreign Origin)', status: 403, request: (id) => ({ headers: headers({ origin: 'http://attacker.example' }), body: seedCall(id) }) },
    { name: 'Origin of the listener itself (not in the list)', status: 403, request: (id) => ({ headers: headers({ origin: `http://${host}` }), body: seedCall(id) }) },
    { name: 'Origin null (sandboxed frame)', status: 403, request: (id) => ({ headers: headers({ origin: 'null' }), body: seedCall(id) }) },
    { name: 'allowed Origin over https', status: 403, request: (id) => ({ headers: headers({ origin: 'https://localhost:5173' }), body: seedCall(id) }) },
    { name: 'GET without Accept', status: 406, request: () => ({ method: 'GET', headers: { 'mcp-session-id': session } }) },
    { name: 'GET without a session or Accept (liveness probe)', status: 406, request: () => ({ method: 'GET' }) },
    { name: 'GET accepting only JSON', status: 406, request: () => ({ method: 'GET', headers: { accept: 'application/json', 'mcp-session-id': session } }) },
    { name: 'body over 8 MiB (declared)', status: 413, request: (id) => ({ headers: headers({ 'content-length': String(EIGHT_MIB + 1) }), body: Buffer.concat([Buffer.from(seedCall(id)), Buffer.alloc(EIGHT_MIB + 1 - Buffer.byteLength(seedCall(id)), 0x20)]) }) },
    { name: 'body over 8 MiB (chunked)', status: 413, request: (id) => ({ headers: headers({ 'transfer-encoding': 'chunked' }), body: Buffer.concat([Buffer.from(seedCall(id)), Buffer.alloc(EIGHT_MIB, 0x20)]) }) },
    { name: 'unknown session', status: 404, request: (id) => ({ headers: headers({ 'mcp-session-id': '6f1d2c3b-0000-4000-8000-000000000000' }), body: seedCall(id) }) },
    { name: 'no session header on a tool call', status: 400, request: (id) => ({ headers: MCP_HEADERS, body: seedCall(id) }) },
    { name: 'another path', status: 404, request: (id) => ({ path: '/mcp/tools', headers: headers(), body: seedCall(id) }) },
    { name: 'PUT', status: 405, request: (id) => ({ method: 'PUT', headers: headers(), body: seedCall(id) }) },
    // The method comes first, as from the reference's router: refused either way.
    { name: 'PUT from a foreign Host (method before Host)', status: 405, request: (id) => ({ method: 'PUT', headers: headers({ host: 'attacker.example' }), body: seedCall(id) }) },
    { name: 'OPTIONS preflight from a foreign Origin', status: 405, request: () => ({ method: 'OPTIONS', headers: { origin: 'http://attacker.example', 'access-control-request-method': 'POST' } }) },
    { name: 'HEAD from a foreign Host', status: 421, request: () => ({ method: 'HEAD', headers: { host: 'attacker.example' } }) },
    { name: 'malformed JSON', status: 400, request: () => ({ headers: headers(), body: '{"jsonrpc":"2.0","id":1,"method":"tools/call",' }) },
    { name: 'JSON nested past the bound', status: 400, request: () => ({ headers: headers(), body: '['.repeat(300) + ']'.repeat(300) }) },
  ];

  refused.forEach(({ name, status, request }, index) => {
    it(`${name} → ${status}`, async () => {
      const response = await rawRequest(aipcs.port, request(index + 1));
      expect(response.status).toBe(status);
      expect(response.headers['date']).toBeUndefined();
      expect(response.headers['server']).toBeUndefined();
      expect(response.body).not.toContain('attacker');
      expect(response.body).not.toContain('refused_');
    });
  });

  it('refuses initialize requests from a foreign Host or Origin without opening a session', async () => {
    for (const extra of [{ host: 'attacker.example' }, { origin: 'http://attacker.example' }]) {
      const response = await rawRequest(aipcs.port, { headers: { ...MCP_HEADERS, ...extra }, body: initializeBody() });
      expect([421, 403]).toContain(response.status);
      expect(response.headers['mcp-session-id']).toBeUndefined();
    }
  });

  it('accepts an absent Origin, the allowed Origin and the localhost alias', async () => {
    const variants = [headers(), headers({ origin: 'http://localhost:5173' }), headers({ host: `localhost:${aipcs.port}` }), headers({ 'content-type': 'application/json; charset=utf-8' })];
    for (const [n, variant] of variants.entries()) {
      const response = await rawRequest(aipcs.port, { headers: variant, body: `{"jsonrpc":"2.0","id":${n},"method":"ping"}` });
      expect(response.status).toBe(200);
      expect(sseMessages(response.body)).toEqual([{ jsonrpc: '2.0', id: n, result: {} }]);
    }
  });

  it('accepts a body of exactly 8 MiB, declared or chunked, and refuses a chunked one a byte longer', async () => {
    const padded = (id: number, size: number): Buffer => {
      const ping = `{"jsonrpc":"2.0","id":${id},"method":"ping"}`;
      return Buffer.concat([Buffer.from(ping), Buffer.alloc(size - ping.length, 0x20)]);
    };
    for (const [n, framing] of [{ 'content-length': String(EIGHT_MIB) }, { 'transfer-encoding': 'chunked' }].entries()) {
      const response = await rawRequest(aipcs.port, { headers: headers(framing), body: padded(100 + n, EIGHT_MIB) });
      expect(response.status).toBe(200);
      expect(sseMessages(response.body)).toEqual([{ jsonrpc: '2.0', id: 100 + n, result: {} }]);
    }
    const over = await rawRequest(aipcs.port, { headers: headers({ 'transfer-encoding': 'chunked' }), body: padded(102, EIGHT_MIB + 1) });
    expect(over.status).toBe(413);
  });

  // Node keeps only the first of repeated Host lines; RFC 9112 §3.2 makes such
  // a request invalid, so neither order may pass the allow-list.
  it('refuses a request with two Host lines with 421, whichever comes first', async () => {
    const body = '{"jsonrpc":"2.0","id":7,"method":"ping"}';
    for (const hosts of [[host, 'attacker.example'], ['attacker.example', host]]) {
      const lines = [...hosts.map((value) => `Host: ${value}`), 'Content-Type: application/json', ...sessionLines([session])];
      const text = await handWrittenPost(aipcs.port, lines, body);
      expect(text.split('\r\n')[0]).toBe('HTTP/1.1 421 Misdirected Request');
    }
  });

  // RFC 9112 §3.2: an HTTP/1.1 request needs a Host. Node answered it 400
  // itself, with a Date header (§6.1: none); now as the reference's server
  // does, in plain text; HTTP/1.0 may leave Host out, and meets the allow-list.
  it('answers an HTTP/1.1 request without Host 400 in plain text, without Date; an HTTP/1.0 one 421', async () => {
    const body = '{"jsonrpc":"2.0","id":9,"method":"ping"}';
    const text = await handWrittenPost(aipcs.port, ['Content-Type: application/json', ...sessionLines([session])], body);
    expect(text).toBe('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 30\r\nConnection: close\r\n\r\nInvalid HTTP request received.');
    const old = await handWrittenPost(aipcs.port, ['Content-Type: application/json', ...sessionLines([session])], body, '1.0');
    expect(old.split('\r\n')[0]).toBe('HTTP/1.1 421 Misdirected Request');
    expect(old).not.toMatch(/\r\ndate:/i);
  });

  // Node answers an Expect other than 100-continue 417 itself, before any
  // check and with a Date header; the reference's server ignores such an
  // Expect, so the request meets the same checks as any other.
  it('checks and serves a request with an unknown Expect as any other, never a bare 417', async () => {
    const body = '{"jsonrpc":"2.0","id":10,"method":"ping"}';
    const foreign = await handWrittenPost(aipcs.port, ['Host: attacker.example', 'Expect: foo', 'Content-Type: application/json', ...sessionLines([session])], body);
    expect(foreign.split('\r\n')[0]).toBe('HTTP/1.1 421 Misdirected Request');
    expect(foreign).not.toMatch(/\r\ndate:/i);
    const served = await handWrittenPost(aipcs.port, [`Host: ${host}`, 'Expect: foo', 'Content-Type: application/json', ...sessionLines([session])], body);
    expect(served.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(served).not.toMatch(/\r\ndate:/i);
    expect(served).toContain('"id":10');
  });

  // Node keeps only the first of repeated Content-Type lines, while the SDK's
  // request adapter reads them joined: such a POST is refused by the listener
  // itself (400, as a Content-Type that is not JSON), whichever comes first.
  it('refuses a POST with two Content-Type lines with 400, whichever comes first', async () => {
    const body = '{"jsonrpc":"2.0","id":8,"method":"ping"}';
    for (const types of [['application/json', 'text/plain'], ['text/plain', 'application/json'], ['application/json', 'application/json']]) {
      const text = await handWrittenPost(aipcs.port, [`Host: ${host}`, ...types.map((value) => `Content-Type: ${value}`), ...sessionLines([session])], body);
      expect(text.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: Content-Type must be application/json' }, id: null });
    }
  });

  // node joins repeated Mcp-Session-Id lines with ", ", an id no session has:
  // a client that sent its live session's id twice was told the session was
  // gone (404) and would start another.
  it('refuses a request with two Mcp-Session-Id lines with 400, not 404', async () => {
    const body = '{"jsonrpc":"2.0","id":9,"method":"ping"}';
    const text = await handWrittenPost(aipcs.port, [`Host: ${host}`, 'Content-Type: application/json', ...sessionLines([session, session])], body);
    expect(text.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header must appear once' }, id: null });
  });

  it('left the registry untouched: no refused request reached the application', async () => {
    const listed = await observer.call('aipcs_service_list', { limit: 100 });
    expect(listed.ok).toBe(true);
    expect(listed.result?.['services']).toEqual([]);
  });

  it('logged no request details', () => {
    expect(aipcs.stdout()).toBe('');
    expect(aipcs.stderr()).not.toContain('attacker');
    expect(aipcs.stderr()).not.toContain('refused_');
    expect(aipcs.stderr()).not.toMatch(/POST|GET \/mcp/);
  });
});
