// Connections that never send a request: Node times out one idle between
// two requests, but not one idle before its first, and each held a
// descriptor until the client went away (a few hundred left `aipcs serve`
// none for its stores). The listener closes them after the idle interval;
// a connection that does send its request in time is answered as usual.

import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import type { HttpListener } from '../../src/common/mcp/http-transport.js';
import { createToolServer } from '../../src/common/mcp/tool-server.js';
import { echoServerOptions, loopbackListener } from './echo-session.js';

const logger = createLogger('http-idle-connections-test', 'silent');

function opened(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.on('error', reject);
  });
}

/** Everything the server sends until it closes the connection. */
function untilClosed(socket: Socket): Promise<string> {
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  return new Promise((resolve) => socket.on('close', () => resolve(text)));
}

describe('connections idle before their first request', () => {
  let listener: HttpListener;

  beforeAll(async () => {
    listener = await loopbackListener({ createSession: () => createToolServer(echoServerOptions([], logger)), logger, idleConnectionMs: 300 });
  });

  afterAll(async () => {
    await listener.close();
  });

  it('are closed by the listener after the idle interval', { timeout: 10_000 }, async () => {
    const sockets = await Promise.all([1, 2, 3].map(() => opened(listener.port)));
    expect(await Promise.all(sockets.map(untilClosed))).toEqual(['', '', '']);
  });

  it('are answered when their request comes in time', { timeout: 10_000 }, async () => {
    const socket = await opened(listener.port);
    const received = untilClosed(socket);
    socket.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${listener.port}\r\nAccept: application/json\r\n\r\n`);
    expect(await received).toMatch(/^HTTP\/1\.1 406 /);
  });
});
