// Start-up and shutdown of the HTTP transport: the transport preflight
// (operations spec §2.3), the exposure rule (§2.6 rule 5, §6.3) in
// configuration and again at the listener, a port already in use, SIGINT, and
// idle-session expiry with the AIPCS server in process (the configured
// minimum of 60 s is too slow for a test; the override takes milliseconds).

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import { serve, StartupError } from '../../../src/aipcs/compose.js';
import type { HttpSettings, RuntimeConfig } from '../../../src/aipcs/config/index.js';
import { STATELESS_TOOLS } from '../../../src/aipcs/contract/tool-catalogue.js';
import { createDispatcher } from '../../../src/aipcs/mcp/dispatch.js';
import { httpExposureAllowed, startAipcsHttp } from '../../../src/aipcs/mcp/http-server.js';
import { aipcsServerOptions } from '../../../src/aipcs/mcp/server.js';
import { freshDataRoot } from '../../support/aipcs-client.js';
import { aipcsBin } from '../../support/bins.js';
import { connectHttp, freePort, rawRequest, startHttpAipcs } from './support.js';

const logger = createLogger('aipcs', 'silent');

function runServe(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [aipcsBin(), 'serve', ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', ...env },
    encoding: 'utf8',
    timeout: 30_000,
    input: '',
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

function errorCode(stderr: string): string | undefined {
  const line = stderr.trim().split('\n').at(-1) ?? '';
  return (JSON.parse(line) as { error?: { code?: string } }).error?.code;
}

const loopback: HttpSettings = {
  host: '127.0.0.1',
  hostIsLoopback: true,
  port: 8000,
  path: '/mcp',
  allowedHosts: ['127.0.0.1:8000', 'localhost:8000'],
  allowedOrigins: [],
  sessionIdleTimeoutSeconds: 1800,
  allowNonLoopback: false,
};

describe('transport preflight', () => {
  const cases: [string, string[], Record<string, string>][] = [
    ['an unknown --transport', ['--transport', 'sse'], {}],
    ['the retired AIPCS_MCP_TRANSPORT', ['--transport', 'streamable-http'], { AIPCS_MCP_TRANSPORT: 'streamable-http' }],
    ['FASTMCP_PORT', ['--transport', 'streamable-http'], { FASTMCP_PORT: '9000' }],
    ['FASTMCP_STREAMABLE_HTTP_PATH', ['--transport', 'streamable-http'], { FASTMCP_STREAMABLE_HTTP_PATH: '/x' }],
    ['AIPCS_HOST', ['--transport', 'streamable-http'], { AIPCS_HOST: '0.0.0.0' }],
    ['AIPCS_MCP_PORT', [], { AIPCS_TRANSPORT: 'streamable-http', AIPCS_MCP_PORT: '1' }],
    ['an invalid AIPCS_TRANSPORT', [], { AIPCS_TRANSPORT: 'http' }],
  ];
  it.each(cases)('%s → transport_not_supported, exit 2, nothing served', (_name, args, env) => {
    const run = runServe(args, env);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(errorCode(run.stderr)).toBe('transport_not_supported');
  });
});

describe('exposure', () => {
  it.each([
    ['a non-loopback host', ['--http-host', '0.0.0.0']],
    ['the opt-in without a Host list', ['--http-host', '0.0.0.0', '--http-allow-non-loopback', 'true']],
    ['a Host list without the opt-in', ['--http-host', '0.0.0.0', '--http-allowed-hosts', 'gw.example']],
  ])('configuration refuses %s (exit 2, nothing bound)', (_name, args) => {
    const run = runServe(['--transport', 'streamable-http', ...args]);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(errorCode(run.stderr)).toBe('validation_failed');
  });

  it('is checked again at the listener: non-loopback settings without the opt-in are refused', async () => {
    const exposed: HttpSettings = { ...loopback, host: '0.0.0.0', hostIsLoopback: false, allowedHosts: ['gw.example'] };
    expect(httpExposureAllowed(loopback)).toBe(true);
    expect(httpExposureAllowed(exposed)).toBe(false);
    expect(httpExposureAllowed({ ...exposed, allowNonLoopback: true })).toBe(true);
    expect(httpExposureAllowed({ ...exposed, allowNonLoopback: true, allowedHosts: [] })).toBe(false);
    // A settings object that claims loopback for a non-loopback address is not trusted.
    expect(httpExposureAllowed({ ...exposed, hostIsLoopback: true })).toBe(false);
    const server = aipcsServerOptions(STATELESS_TOOLS, createDispatcher(null, STATELESS_TOOLS), logger);
    await expect(startAipcsHttp(exposed, server, logger)).rejects.toThrow();
  });

  it('makes serve() fail with StartupError before storage is opened', async () => {
    const dataRoot = freshDataRoot();
    const runtime: RuntimeConfig = {
      profile: 'sqlite',
      transport: 'streamable-http',
      logLevel: 'error',
      principalId: 'local-agent',
      http: { ...loopback, host: '0.0.0.0', hostIsLoopback: false },
      sqlite: { dataRoot, dataRootExplicit: true, busyTimeoutMs: 5000 },
    };
    await expect(serve(runtime)).rejects.toBeInstanceOf(StartupError);
    expect(existsSync(dataRoot)).toBe(false);
  });
});

describe('start-up failure and signals', () => {
  it('reports a port in use as the start-up envelope, exit 2', async () => {
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const run = runServe(['--transport', 'streamable-http', '--http-port', String(port)]);
      expect(run.status).toBe(2);
      expect(run.stdout).toBe('');
      expect(JSON.parse(run.stderr.trim())).toEqual({ ok: false, result: null, error: { code: 'internal_error', message: 'Server could not be started safely.', issues: [], retryable: false } });
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('stops on SIGINT with exit 0 (stateless profile)', async () => {
    const aipcs = await startHttpAipcs([]);
    const client = await connectHttp(aipcs.url);
    expect((await client.client.listTools()).tools.map((tool) => tool.name)).toEqual(['aipcs_server_info']);
    expect(await aipcs.stop('SIGINT')).toBe(0);
    await client.close().catch(() => undefined);
    await expect(rawRequest(aipcs.port, { method: 'GET' })).rejects.toThrow();
    expect(aipcs.stdout()).toBe('');
  });

  it('serves on a configured path only', async () => {
    const aipcs = await startHttpAipcs(['--http-path', '/agents/memory']);
    expect((await rawRequest(aipcs.port, { method: 'GET', path: '/agents/memory' })).status).toBe(406);
    expect((await rawRequest(aipcs.port, { method: 'GET', path: '/mcp' })).status).toBe(404);
    const client = await connectHttp(new URL(`http://127.0.0.1:${aipcs.port}/agents/memory`));
    expect((await client.call('aipcs_server_info')).ok).toBe(true);
    await client.close();
    expect(await aipcs.stop()).toBe(0);
  });
});

describe('idle sessions (AIPCS server in process)', () => {
  it('closes a session after the idle timeout; the client then gets 404 for it', async () => {
    let expired: () => void = () => undefined;
    const expiredSignal = new Promise<void>((resolve) => (expired = resolve));
    const port = await freePort();
    const settings: HttpSettings = { ...loopback, port, allowedHosts: [`127.0.0.1:${port}`] };
    const server = aipcsServerOptions(STATELESS_TOOLS, createDispatcher(null, STATELESS_TOOLS), logger);
    const listener = await startAipcsHttp(settings, server, logger, { sessionIdleTimeoutMs: 250, onSessionClosed: (reason) => reason === 'expired' && expired() });
    const client = await connectHttp(new URL(`http://127.0.0.1:${port}/mcp`));
    expect((await client.call('aipcs_server_info')).ok).toBe(true);
    const id = client.transport.sessionId ?? '';
    await expiredSignal;
    expect(listener.sessionCount()).toBe(0);
    await expect(client.call('aipcs_server_info')).rejects.toMatchObject({ code: 404 });
    const raw = await rawRequest(port, {
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': id },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(raw.status).toBe(404);
    await client.close();
    await listener.close();
  });
});
