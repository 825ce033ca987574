// What an HTTP client of the reference (Python SDK session manager
// behind a Starlette router, SSE through sse-starlette) observes, checked
// against `aipcs serve --transport streamable-http` as a real process.
//  - The other spelling of the endpoint URL (`/mcp/` for `/mcp`) is answered
//    307 to the endpoint, so a client configured with a trailing slash
//    connects instead of getting 404.
//  - An open SSE response carries a comment line every 15 s, so a quiet GET
//    stream is not dropped by a client's or proxy's read timeout.

import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';
import { connectHttp, MCP_HEADERS, rawRequest, rawSession, startHttpAipcs, type HttpAipcs } from './support.js';

/** Opens the session's GET stream and resolves with everything read once `until` shows in it. */
function readStreamUntil(port: number, session: string, until: string): Promise<{ status: number; type: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${port}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    const req = request({ host: '127.0.0.1', port, method: 'GET', path: '/mcp', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes(until)) {
          resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], text });
          req.destroy();
        }
      });
      res.on('end', () => reject(new Error(`the stream ended before ${JSON.stringify(until)}: ${JSON.stringify(text)}`)));
    });
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
    req.end();
  });
}

describe('aipcs serve over HTTP, as a client of the reference sees it', () => {
  const dataRoot = freshDataRoot();
  let aipcs: HttpAipcs;

  beforeAll(async () => {
    aipcs = await startHttpAipcs(sqliteArgs(dataRoot));
  });

  afterAll(async () => {
    if (aipcs.child.exitCode === null) await aipcs.stop();
  });

  it('connects an SDK client whose URL ends in a slash (307 to the endpoint) and serves it normally', async () => {
    const client = await connectHttp(new URL(`http://127.0.0.1:${aipcs.port}/mcp/`));
    try {
      expect(client.transport.sessionId).toBeDefined();
      const { tools } = await client.client.listTools();
      expect(tools.length).toBe(21);
      const info = await client.call('aipcs_server_info');
      expect(info.ok).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('answers the other spelling of the path 307 with the endpoint (query kept) and no body; other paths stay 404', async () => {
    const slash = await rawRequest(aipcs.port, { path: '/mcp/?probe=1', headers: MCP_HEADERS, body: '{}' });
    expect(slash.status).toBe(307);
    expect(slash.headers['location']).toBe('/mcp?probe=1');
    expect(slash.body).toBe('');
    const slashes = await rawRequest(aipcs.port, { method: 'GET', path: '/mcp//' });
    expect([slashes.status, slashes.headers['location']]).toEqual([307, '/mcp']);
    for (const path of ['/mcp/x', '/mc', '/mcpx', '/', '/MCP/']) {
      expect((await rawRequest(aipcs.port, { path, headers: MCP_HEADERS, body: '{}' })).status, path).toBe(404);
    }
    // The endpoint itself is unchanged: a plain GET is still the 406 liveness probe.
    expect((await rawRequest(aipcs.port, { method: 'GET' })).status).toBe(406);
  });

  it('keeps a quiet GET stream alive with SSE comment lines that clients skip', async () => {
    const session = await rawSession(aipcs.port);
    const stream = await readStreamUntil(aipcs.port, session, ': keepalive\n\n');
    expect(stream.status).toBe(200);
    expect(stream.type).toBe('text/event-stream');
    // Only comments: no event was invented for the client.
    expect(stream.text.split('\n').filter((line) => line !== '' && !line.startsWith(':'))).toEqual([]);
    // The session is still served after its stream was dropped.
    const ping = await rawRequest(aipcs.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: '{"jsonrpc":"2.0","id":3,"method":"ping"}' });
    expect(ping.status).toBe(200);
    expect(ping.body).toContain('"id":3');
  }, 40_000);
});
