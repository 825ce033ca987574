// The HTTP listener keeps at most maxSessions open sessions. A client that
// initializes for every connection and never sends DELETE left one session
// (an MCP server, about 40 KB) behind each time until the idle timeout, so
// the server's memory grew without bound. Past the cap a new session closes
// the least recently used idle one; with every session busy, initialize gets 503.

import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { MAX_SESSIONS, type HttpListener, type SessionCloseReason } from '../../src/common/mcp/http-transport.js';
import { createToolServer, type ToolServer } from '../../src/common/mcp/tool-server.js';
import { initializeBody, MCP_HEADERS, rawRequest, rawSession } from '../aipcs/http/support.js';
import { echoServerOptions, loopbackListener } from './echo-session.js';

const logger = createLogger('http-session-cap-test', 'silent');

function echoServer(): ToolServer {
  return createToolServer(echoServerOptions([], logger));
}

async function listen(maxSessions: number | undefined, closed: SessionCloseReason[], createSession: () => ToolServer = echoServer): Promise<HttpListener> {
  return loopbackListener({
    createSession,
    onSessionClosed: (reason) => closed.push(reason),
    ...(maxSessions === undefined ? {} : { maxSessions }),
    logger,
  });
}

const ping = async (port: number, session: string): Promise<number> =>
  (await rawRequest(port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) })).status;

describe('the HTTP listener caps its open sessions', () => {
  it('a new session past the cap closes the least recently used idle one', async () => {
    const closed: SessionCloseReason[] = [];
    const listener = await listen(3, closed);
    try {
      const first = await rawSession(listener.port);
      const second = await rawSession(listener.port);
      const third = await rawSession(listener.port);
      expect(await ping(listener.port, first)).toBe(200); // the first is now the most recently used
      const fourth = await rawSession(listener.port);
      expect(listener.sessionCount()).toBe(3);
      expect(closed).toEqual(['evicted']);
      expect(await ping(listener.port, second)).toBe(404);
      for (const id of [first, third, fourth]) expect(await ping(listener.port, id)).toBe(200);
    } finally {
      await listener.close();
    }
  });

  it('answers initialize 503 while every session has a call running, and opens one once a session is idle', async () => {
    const closed: SessionCloseReason[] = [];
    const base = echoServerOptions([], logger);
    let running = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const gated = (): ToolServer =>
      createToolServer({
        ...base,
        callTool: async (name, args) => {
          running++;
          await gate;
          return base.callTool(name, args);
        },
      });
    const listener = await listen(2, closed, gated);
    try {
      const sessions = [await rawSession(listener.port), await rawSession(listener.port)];
      const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } });
      const calls = sessions.map((session) => rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }, body }));
      await expect.poll(() => running).toBe(2);
      const refused = await rawRequest(listener.port, { headers: MCP_HEADERS, body: initializeBody() });
      expect(refused.status).toBe(503);
      expect(refused.headers['mcp-session-id']).toBeUndefined();
      expect(JSON.parse(refused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Service Unavailable: too many sessions in use' }, id: null });
      expect(listener.sessionCount()).toBe(2);
      expect(closed).toEqual([]);
      release();
      for (const call of await Promise.all(calls)) expect(call.status).toBe(200);
      const opened = await rawRequest(listener.port, { headers: MCP_HEADERS, body: initializeBody() });
      expect(opened.status).toBe(200);
      expect(closed).toEqual(['evicted']);
      expect(listener.sessionCount()).toBe(2);
    } finally {
      release();
      await listener.close();
    }
  });

  it('opens many sessions in a row without keeping more than the default cap', { timeout: 60_000 }, async () => {
    const closed: SessionCloseReason[] = [];
    const listener = await listen(undefined, closed);
    try {
      for (let i = 0; i < MAX_SESSIONS + 20; i++) {
        const init = await rawRequest(listener.port, { headers: MCP_HEADERS, body: initializeBody() });
        expect(init.status).toBe(200);
      }
      expect(listener.sessionCount()).toBe(MAX_SESSIONS);
      expect(closed.filter((reason) => reason === 'evicted')).toHaveLength(20);
    } finally {
      await listener.close();
    }
  });
});
