// The configured idle timeout reaches the listener in seconds (operations spec
// §2.1 `http_session_idle_timeout_seconds`, §6.1): with no override, a session
// of an AIPCS listener configured for 60 s is still open 1 ms before 60 s of
// idleness and closed at 60 s. The reaper's timers are faked and its
// monotonic clock is stopped and moved by hand, so no test waits; sockets and the SDK
// run for real.

import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import type { HttpSettings } from '../../../src/aipcs/config/index.js';
import { STATELESS_TOOLS } from '../../../src/aipcs/contract/tool-catalogue.js';
import { createDispatcher } from '../../../src/aipcs/mcp/dispatch.js';
import { startAipcsHttp, type SessionCloseReason } from '../../../src/aipcs/mcp/http-server.js';
import { aipcsServerOptions } from '../../../src/aipcs/mcp/server.js';
import { freePort, rawSession } from './support.js';

const logger = createLogger('aipcs', 'silent');

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/**
 * Stops the monotonic clock the reaper reads (so real time spent on I/O does
 * not count) and returns a function moving it and the fake timers forward together.
 */
function idleClock(): (ms: number) => Promise<void> {
  const start = performance.now();
  let offset = 0;
  vi.spyOn(performance, 'now').mockImplementation(() => start + offset);
  return async (ms) => {
    offset += ms;
    await vi.advanceTimersByTimeAsync(ms);
  };
}

describe('idle timeout of the AIPCS listener', () => {
  it('closes a session after the configured seconds of idleness, not before', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const advance = idleClock();
    const port = await freePort();
    const settings: HttpSettings = {
      host: '127.0.0.1',
      hostIsLoopback: true,
      port,
      path: '/mcp',
      allowedHosts: [`127.0.0.1:${port}`],
      allowedOrigins: [],
      sessionIdleTimeoutSeconds: 60,
      allowNonLoopback: false,
    };
    const closed: SessionCloseReason[] = [];
    const server = aipcsServerOptions(STATELESS_TOOLS, createDispatcher(null, STATELESS_TOOLS), logger);
    const listener = await startAipcsHttp(settings, server, logger, { onSessionClosed: (reason) => closed.push(reason) });
    try {
      await rawSession(port);
      expect(listener.sessionCount()).toBe(1);
      await advance(59_999);
      expect(closed).toEqual([]);
      expect(listener.sessionCount()).toBe(1);
      await advance(1);
      await expect.poll(() => closed).toEqual(['expired']);
      expect(listener.sessionCount()).toBe(0);
    } finally {
      vi.useRealTimers();
      await listener.close();
    }
  });
});
