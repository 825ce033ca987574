// AIPCS over Streamable HTTP (operations spec §6): maps the resolved HTTP
// settings onto the generic listener, gives every session its own SDK Server
// over the same catalogue and dispatcher as stdio, and shuts down on SIGINT,
// SIGTERM or SIGHUP. Owns no storage: composition opens and closes it around this.

import { createToolServer, SHUTDOWN_SIGNALS, type ToolServerOptions } from '../../common/mcp/tool-server.js';
import { HttpExposureError, isLoopbackAddress, startHttpTransport, type HttpListener, type SessionCloseReason } from '../../common/mcp/http-transport.js';
import type { Logger } from '../../common/logger.js';
import type { HttpSettings } from '../config/index.js';

export type { HttpListener, SessionCloseReason } from '../../common/mcp/http-transport.js';

/**
 * §2.6 rule 5 and §6.3, checked again where the socket is bound: configuration
 * has already refused these settings, but the listener must not trust that.
 */
export function httpExposureAllowed(settings: HttpSettings): boolean {
  const loopback = settings.hostIsLoopback && isLoopbackAddress(settings.host);
  return loopback || (settings.allowNonLoopback && settings.allowedHosts.length > 0);
}

export interface AipcsHttpOptions {
  /** Overrides the configured idle timeout (tests of expiry use milliseconds). */
  readonly sessionIdleTimeoutMs?: number;
  /** Overrides the configured port (0 picks a free one; tests). */
  readonly port?: number;
  readonly onSessionClosed?: (reason: SessionCloseReason) => void;
}

/** Binds the listener; rejects when the exposure rules refuse or the bind fails (nothing served). */
export function startAipcsHttp(settings: HttpSettings, server: ToolServerOptions, logger: Logger, overrides: AipcsHttpOptions = {}): Promise<HttpListener> {
  if (!httpExposureAllowed(settings)) return Promise.reject(new HttpExposureError());
  return startHttpTransport({
    host: settings.host,
    port: overrides.port ?? settings.port,
    path: settings.path,
    allowedHosts: settings.allowedHosts,
    allowedOrigins: settings.allowedOrigins,
    sessionIdleTimeoutMs: overrides.sessionIdleTimeoutMs ?? settings.sessionIdleTimeoutSeconds * 1000,
    allowNonLoopback: settings.allowNonLoopback,
    createSession: (hooks) => createToolServer({ ...server, logger, onCallSettled: hooks.onCallSettled }),
    ...(server.protocolVersions ? { protocolVersions: server.protocolVersions } : {}),
    ...(server.invalidParamsData === undefined ? {} : { invalidParamsData: server.invalidParamsData }),
    logger,
    ...(overrides.onSessionClosed ? { onSessionClosed: overrides.onSessionClosed } : {}),
  });
}

/**
 * Resolves with the first of SIGINT/SIGTERM/SIGHUP; the handlers are removed
 * again, so a second signal takes its default action (ends the process now).
 */
export function untilShutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const signals = SHUTDOWN_SIGNALS;
    const onSignal = (signal: NodeJS.Signals): void => {
      for (const name of signals) process.off(name, onSignal);
      resolve(signal);
    };
    for (const name of signals) process.on(name, onSignal);
  });
}

/**
 * Serves until SIGINT, SIGTERM or SIGHUP, then stops accepting, closes every session
 * and resolves; the caller closes storage and exits 0. Start-up failures reject.
 */
export async function serveAipcsHttp(settings: HttpSettings, server: ToolServerOptions, logger: Logger, startFailure: (cause: unknown) => Error): Promise<void> {
  let listener: HttpListener;
  try {
    listener = await startAipcsHttp(settings, server, logger);
  } catch (error) {
    // A bound port or a refused address: fixed text only, never the system message.
    logger.info('start-up refused: the Streamable HTTP listener could not be started');
    throw startFailure(error);
  }
  // Handlers first, then the ready line: a supervisor may signal as soon as it reads it.
  const signalled = untilShutdownSignal();
  // Hosts and ports are never logged (operations spec §2.9).
  logger.info('Streamable HTTP listener ready');
  await signalled;
  logger.info('shutting down the Streamable HTTP listener');
  await listener.close();
}
