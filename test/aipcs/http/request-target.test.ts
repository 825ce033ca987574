// The request line and Host of the Streamable HTTP listener beyond the §6.2
// table: an absolute-form target (RFC 9112 §3.2.2: a server must accept it,
// as the reference's server does), and an allowed Host the URL parser cannot
// read, which the SDK answered with its exception's text as a parse error.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';
import { freePort, initializeBody, MCP_HEADERS, rawRequest, rawSession, sseMessages, startHttpAipcs, type HttpAipcs } from './support.js';

describe('request targets and Host values of the Streamable HTTP listener', () => {
  let aipcs: HttpAipcs;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    aipcs = await startHttpAipcs([...sqliteArgs(freshDataRoot()), '--http-allowed-hosts', `127.0.0.1:${port},1.2.3.999:${port}`], {}, port);
  });

  afterAll(async () => {
    expect(await aipcs.stop()).toBe(0);
  });

  it('serves an absolute-form target as its path and query', async () => {
    const session = await rawSession(port);
    const ping = await rawRequest(port, {
      path: `http://127.0.0.1:${port}/mcp`,
      headers: { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }),
    });
    expect(ping.status).toBe(200);
    expect(sseMessages(ping.body)).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
    // Any other path in absolute form is still not the endpoint.
    expect((await rawRequest(port, { path: `http://127.0.0.1:${port}/other`, headers: MCP_HEADERS, body: initializeBody() })).status).toBe(404);
  });

  it('answers an allowed Host that no URL can hold with its own 400, never the exception text', async () => {
    const refused = await rawRequest(port, { headers: { ...MCP_HEADERS, host: `1.2.3.999:${port}` }, body: initializeBody() });
    expect(refused.status).toBe(400);
    expect(refused.body).not.toMatch(/TypeError|Invalid URL|Parse error/);
    expect(JSON.parse(refused.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: Invalid Host header' } });
  });
});
