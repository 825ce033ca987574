// The HTTP listener's idle-session reaper measures idleness on a monotonic
// clock: a wall clock stepped back must not keep an idle session (and its
// server) alive for the length of the step, and one stepped forwards must
// not expire a session that is still in use.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import { createToolServer, type ToolServer } from '../../src/common/mcp/tool-server.js';
import { startHttpTransport, type HttpListener, type SessionCloseReason } from '../../src/common/mcp/http-transport.js';
import { MCP_HEADERS, rawRequest, rawSession } from '../aipcs/http/support.js';
import { echoServerOptions } from './echo-session.js';

const logger = createLogger('http-clock-test', 'silent');

function echoServer(): ToolServer {
  return createToolServer(echoServerOptions([], logger));
}

async function listen(idleMs: number, closed: SessionCloseReason[]): Promise<HttpListener> {
  return startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    allowedHosts: ['127.0.0.1:*', 'localhost:*'],
    allowedOrigins: ['http://localhost:3000'],
    sessionIdleTimeoutMs: idleMs,
    allowNonLoopback: false,
    createSession: () => echoServer(),
    onSessionClosed: (reason) => closed.push(reason),
    logger,
  });
}

/** Shifts Date.now by `offsetMs` from now on, as an NTP step would. */
function stepWallClock(offsetMs: number): void {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => real() + offsetMs);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('idle session expiry while the wall clock steps', () => {
  it('still expires an idle session after the wall clock stepped back an hour', async () => {
    const closed: SessionCloseReason[] = [];
    const listener = await listen(150, closed);
    try {
      await rawSession(listener.port);
      expect(listener.sessionCount()).toBe(1);
      stepWallClock(-3_600_000);
      await expect.poll(() => closed, { timeout: 3_000 }).toEqual(['expired']);
      expect(listener.sessionCount()).toBe(0);
    } finally {
      await listener.close();
    }
  });

  it('keeps a session in use after the wall clock stepped forwards a day', async () => {
    const closed: SessionCloseReason[] = [];
    const listener = await listen(60_000, closed);
    try {
      const session = await rawSession(listener.port);
      stepWallClock(86_400_000);
      const headers = { ...MCP_HEADERS, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
      const ping = await rawRequest(listener.port, { headers, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
      expect(ping.status).toBe(200);
      expect(closed).toEqual([]);
      expect(listener.sessionCount()).toBe(1);
    } finally {
      await listener.close();
    }
  });
});
