// The HTTP edge replayed row by row against what a client of the
// reference sees (its Starlette route, the MCP Python SDK 1.28 session manager
// and transport, operations spec §6), with raw requests to a real
// `aipcs serve --transport streamable-http` process. Each row here differed:
//  - a second initialize in a session was refused 400 ("Server already
//    initialized"); the reference's SDK answers it, as stdio does;
//  - a JSON array (a batch, also an empty one) was served or answered 202; the
//    reference reads one message a POST and refuses anything else with 400;
//  - a Content-Type that starts as JSON but is none (`application/jsonl`) got
//    400; the reference answers 415, and only after the Accept check;
//  - a POST with a wrong Accept got 400 when its body, session or revision
//    was wrong too; the reference checks Accept first (406);
//  - an unknown session id got 400/421/403/406 when another check failed
//    too; the reference answers 404 before any other check;
//  - a method the endpoint does not serve got 421/403 for a foreign Host or
//    Origin; the reference's router answers 405 first;
//  - session ids were dashed UUIDs; the reference's are 32 hex digits, and an
//    empty session header is an unknown id there (404), not an absent one.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeBody, MCP_HEADERS, rawRequest, rawSession, sseMessages, startHttpAipcs, type HttpAipcs, type RawRequest } from './support.js';

const PING = '{"jsonrpc":"2.0","id":7,"method":"ping"}';
const UNKNOWN = '6f1d2c3b-0000-4000-8000-000000000000';

describe('aipcs serve over HTTP, row by row against the reference', () => {
  let aipcs: HttpAipcs;
  let session: string;
  const inSession = (extra: Record<string, string> = {}): Record<string, string> => ({ ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18', ...extra });
  const send = (request: RawRequest) => rawRequest(aipcs.port, request);
  const error = (body: string): unknown => (JSON.parse(body) as { error: unknown }).error;

  beforeAll(async () => {
    aipcs = await startHttpAipcs(['--profile', 'stateless']);
    session = await rawSession(aipcs.port);
  });

  afterAll(async () => {
    expect(await aipcs.stop()).toBe(0);
  });

  it('issues session ids in the form the reference uses: 32 lowercase hex digits', async () => {
    const opened = await send({ headers: MCP_HEADERS, body: initializeBody() });
    expect(opened.headers['mcp-session-id']).toMatch(/^[0-9a-f]{32}$/);
    expect(session).toMatch(/^[0-9a-f]{32}$/);
    expect((await send({ method: 'DELETE', headers: { 'mcp-session-id': String(opened.headers['mcp-session-id']) } })).status).toBe(200);
  });

  it('answers a second initialize in a session, keeping the session and its id; a bogus MCP-Protocol-Version is not checked on it', async () => {
    for (const headers of [inSession(), inSession({ 'mcp-protocol-version': '1999-01-01' })]) {
      const again = await send({ headers, body: initializeBody(21) });
      expect(again.status).toBe(200);
      expect(again.headers['content-type']).toBe('text/event-stream');
      expect(again.headers['mcp-session-id']).toBe(session);
      expect(sseMessages(again.body)).toMatchObject([{ jsonrpc: '2.0', id: 21, result: { protocolVersion: '2025-06-18', serverInfo: { name: 'aipcs' } } }]);
    }
    expect((await send({ headers: inSession(), body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' })).status).toBe(202);
    const listed = await send({ headers: inSession(), body: '{"jsonrpc":"2.0","id":22,"method":"tools/list"}' });
    expect((sseMessages(listed.body)[0] as { result: { tools: unknown[] } }).result.tools).toHaveLength(1);
  });

  it('opens a session for an integer protocolVersion, offering the latest revision, as over stdio; 5.5 is refused', async () => {
    const body = (version: number): string => JSON.stringify({ jsonrpc: '2.0', id: 31, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const opened = await send({ headers: MCP_HEADERS, body: body(5) });
    expect(opened.status).toBe(200);
    expect(sseMessages(opened.body)).toMatchObject([{ jsonrpc: '2.0', id: 31, result: { protocolVersion: '2025-11-25' } }]);
    expect((await send({ method: 'DELETE', headers: { 'mcp-session-id': String(opened.headers['mcp-session-id']) } })).status).toBe(200);
    const refused = await send({ headers: MCP_HEADERS, body: body(5.5) });
    expect(refused.status).toBe(400);
    expect(error(refused.body)).toEqual({ code: -32602, message: 'Invalid request parameters', data: '' });
  });

  it('refuses a batch, empty or not, with 400 -32600 and answers none of its messages', async () => {
    for (const body of [`[${PING}]`, `[${PING},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, '[]']) {
      const refused = await send({ headers: inSession(), body });
      expect([refused.status, refused.headers['content-type']], body).toEqual([400, 'application/json']);
      expect(JSON.parse(refused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' }, id: null });
    }
    // Without a session a batch holding an initialize opens none.
    const init = await send({ headers: MCP_HEADERS, body: `[${initializeBody()}]` });
    expect([init.status, init.headers['mcp-session-id']]).toEqual([400, undefined]);
  });

  it('answers a Content-Type that starts as JSON but is none with 415, after the Accept check; one that does not start so with 400', async () => {
    for (const type of ['application/jsonl', 'application/json-patch+json', 'APPLICATION/JSONX']) {
      const refused = await send({ headers: inSession({ 'content-type': type }), body: PING });
      expect(refused.status, type).toBe(415);
      expect(error(refused.body)).toEqual({ code: -32600, message: 'Unsupported Media Type: Content-Type must be application/json' });
      expect((await send({ headers: inSession({ 'content-type': type, accept: 'application/json' }), body: PING })).status, type).toBe(406);
    }
    for (const type of ['text/plain', 'text/json', 'application/x-www-form-urlencoded']) {
      expect((await send({ headers: inSession({ 'content-type': type, accept: 'application/json' }), body: PING })).status, type).toBe(400);
    }
    // Parameters and case stay accepted.
    for (const type of ['application/json; charset=utf-8', 'Application/JSON']) {
      expect((await send({ headers: inSession({ 'content-type': type }), body: PING })).status, type).toBe(200);
    }
  });

  it('checks a POST’s Accept before its body, session and revision', async () => {
    const rows: [string, RawRequest][] = [
      ['malformed JSON', { headers: inSession({ accept: '*/*' }), body: '{"jsonrpc":' }],
      ['a batch', { headers: inSession({ accept: 'application/json' }), body: `[${PING}]` }],
      ['no session on a ping', { headers: { ...MCP_HEADERS, accept: 'text/event-stream' }, body: PING }],
      ['an unsupported revision', { headers: inSession({ accept: 'application/json', 'mcp-protocol-version': '2024-10-07' }), body: PING }],
    ];
    for (const [name, request] of rows) {
      const refused = await send(request);
      expect(refused.status, name).toBe(406);
      expect(error(refused.body), name).toEqual({ code: -32600, message: 'Not Acceptable: Client must accept both application/json and text/event-stream' });
    }
    // Ranges are read as the reference reads them: parameters allowed, prefixes not.
    expect((await send({ headers: inSession({ accept: 'application/json;q=0.9, text/event-stream;q=0.5' }), body: PING })).status).toBe(200);
    expect((await send({ headers: inSession({ accept: 'x-application/json, text/event-stream' }), body: PING })).status).toBe(406);
  });

  it('answers an unknown session id 404 (-32600) before every other check', async () => {
    const rows: [string, RawRequest][] = [
      ['POST', { headers: inSession({ 'mcp-session-id': UNKNOWN }), body: PING }],
      ['POST with text/plain', { headers: inSession({ 'mcp-session-id': UNKNOWN, 'content-type': 'text/plain' }), body: PING }],
      ['POST from a foreign Host', { headers: inSession({ 'mcp-session-id': UNKNOWN, host: 'attacker.example' }), body: PING }],
      ['POST from a foreign Origin', { headers: inSession({ 'mcp-session-id': UNKNOWN, origin: 'http://attacker.example' }), body: PING }],
      ['POST without Accept', { headers: { 'content-type': 'application/json', 'mcp-session-id': UNKNOWN }, body: PING }],
      ['GET without Accept', { method: 'GET', headers: { 'mcp-session-id': UNKNOWN } }],
      ['DELETE with a bogus revision', { method: 'DELETE', headers: { 'mcp-session-id': UNKNOWN, 'mcp-protocol-version': 'bogus' } }],
      ['an initialize with an empty session id', { headers: { ...MCP_HEADERS, 'mcp-session-id': '' }, body: initializeBody() }],
    ];
    for (const [name, request] of rows) {
      const refused = await send(request);
      expect(refused.status, name).toBe(404);
      expect(JSON.parse(refused.body), name).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Session not found' }, id: null });
    }
  });

  it('answers a request without a session id 400 "Missing session ID" once the checks before it pass; the liveness probe stays 406', async () => {
    // An initialize sent as a notification could never learn a session id: it opens none.
    const initializeNotification = JSON.stringify({ ...JSON.parse(initializeBody()), id: undefined });
    for (const request of [{ headers: MCP_HEADERS, body: PING }, { headers: MCP_HEADERS, body: initializeNotification }, { method: 'GET', headers: { accept: 'text/event-stream' } }, { method: 'DELETE' }] as RawRequest[]) {
      const refused = await send(request);
      expect(refused.status, request.method ?? 'POST').toBe(400);
      expect(error(refused.body)).toEqual({ code: -32600, message: 'Bad Request: Missing session ID' });
    }
    expect((await send({ method: 'GET' })).status).toBe(406);
  });

  it('refuses a method the endpoint does not serve with 405 before Host and Origin; HEAD after them', async () => {
    for (const method of ['PUT', 'PATCH', 'OPTIONS']) {
      const refused = await send({ method, headers: { host: 'attacker.example', origin: 'http://attacker.example' } });
      expect([refused.status, refused.headers['allow']], method).toEqual([405, 'GET, POST, DELETE']);
    }
    expect((await send({ method: 'HEAD', headers: { host: 'attacker.example' } })).status).toBe(421);
    expect((await send({ method: 'HEAD' })).status).toBe(405);
  });

  it('ends the session on DELETE; it then gets 404 whatever else the request carries', async () => {
    const doomed = await rawSession(aipcs.port);
    expect((await send({ method: 'DELETE', headers: { 'mcp-session-id': doomed } })).status).toBe(200);
    expect((await send({ headers: { ...MCP_HEADERS, 'mcp-session-id': doomed, origin: 'http://attacker.example' }, body: PING })).status).toBe(404);
    expect((await send({ method: 'GET', headers: { 'mcp-session-id': doomed } })).status).toBe(404);
  });
});
