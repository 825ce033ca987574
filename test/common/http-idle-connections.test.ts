// Connections that never send a request: Node times out one idle between
// two requests, but not one idle before its first, and each held a
// descriptor until the client went away (a few hundred left `aipcs serve`
// none for its stores). The listener closes them after the idle interval;
// a connection that does send its request in time is answered as usual.
// And a client that asks to close after its request is closed, also after
// an SSE response (the SDK transport said keep-alive on those).

import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/common/logger.js';
import type { HttpListener } from '../../src/common/mcp/http-transport.js';
import { createToolServer } from '../../src/common/mcp/tool-server.js';
import { initializeBody, rawSession } from '../aipcs/http/support.js';
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

/** Writes a JSON-RPC POST to `socket` by hand, with the given Host and Connection headers (and session, if any). */
function writePost(socket: Socket, request: { host: string; connection: 'close' | 'keep-alive'; session?: string; body: string }): void {
  const session = request.session === undefined ? '' : `Mcp-Session-Id: ${request.session}\r\n`;
  socket.write(
    `POST /mcp HTTP/1.1\r\nHost: ${request.host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
      `${session}Connection: ${request.connection}\r\nContent-Length: ${Buffer.byteLength(request.body)}\r\n\r\n${request.body}`,
  );
}

/** What the server sent, once it closed the connection within 3 s (far below Node's own 5 s keep-alive). */
async function closedSoon(received: Promise<string>): Promise<string> {
  const still = Symbol('still open');
  const answer = await Promise.race([received, new Promise<symbol>((resolve) => setTimeout(() => resolve(still), 3_000))]);
  if (answer === still) throw new Error('the connection is still open after 3 s');
  return answer as string;
}

describe('connections idle before their first request, or between two', () => {
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

  it('are closed after the same interval once idle between two requests (a kept-alive connection)', { timeout: 10_000 }, async () => {
    const session = await rawSession(listener.port);
    const socket = await opened(listener.port);
    const received = untilClosed(socket);
    const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    writePost(socket, { host: `127.0.0.1:${listener.port}`, connection: 'keep-alive', session, body: ping });
    // Node's own interval is 5 s: the listener's (300 ms here) must close it long before.
    const answer = await closedSoon(received);
    expect(answer).toMatch(/^HTTP\/1\.1 200 [^]*"id":1/);
    expect(answer).not.toMatch(/\r\nconnection: close\r\n/i);
  });

  it('stay open past the interval once their request came: a GET stream is not cut', { timeout: 10_000 }, async () => {
    const session = await rawSession(listener.port);
    const socket = await opened(listener.port);
    const received = untilClosed(socket);
    let closed = false;
    void received.then(() => (closed = true));
    socket.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${listener.port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${session}\r\n\r\n`);
    // Three idle intervals pass while the stream is open.
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(closed).toBe(false);
    socket.destroy();
    expect(await received).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('are answered when their request comes in time', { timeout: 10_000 }, async () => {
    const socket = await opened(listener.port);
    const received = untilClosed(socket);
    socket.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${listener.port}\r\nAccept: application/json\r\n\r\n`);
    expect(await received).toMatch(/^HTTP\/1\.1 406 /);
  });
});

describe('a request that asks to close its connection', () => {
  it('is answered Connection: close and its connection is closed, also after an SSE response', { timeout: 10_000 }, async () => {
    const listener = await loopbackListener({ createSession: () => createToolServer(echoServerOptions([], logger)), logger });
    try {
      const socket = await opened(listener.port);
      const received = untilClosed(socket);
      const body = initializeBody();
      writePost(socket, { host: `127.0.0.1:${listener.port}`, connection: 'close', body });
      const response = await received;
      expect(response).toMatch(/^HTTP\/1\.1 200 /);
      expect(response).toMatch(/\r\ncontent-type: text\/event-stream/i);
      expect(response).toMatch(/\r\nconnection: close\r\n/i);
      expect(response).not.toMatch(/keep-alive/i);
    } finally {
      await listener.close();
    }
  });

  it("is answered Connection: close on the SDK's own answers too (a notification's 202, a DELETE's 200)", { timeout: 10_000 }, async () => {
    const listener = await loopbackListener({ createSession: () => createToolServer(echoServerOptions([], logger)), logger });
    try {
      const session = await rawSession(listener.port);
      const head = `Host: 127.0.0.1:${listener.port}\r\nMcp-Session-Id: ${session}\r\nMcp-Protocol-Version: 2025-06-18\r\nConnection: close\r\n`;
      const notification = '{"jsonrpc":"2.0","method":"notifications/initialized"}';
      const posted = await opened(listener.port);
      const accepted = untilClosed(posted);
      posted.write(`POST /mcp HTTP/1.1\r\n${head}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${notification.length}\r\n\r\n${notification}`);
      expect(await accepted).toMatch(/^HTTP\/1\.1 202 [^]*\r\nconnection: close\r\n/i);
      const deleting = await opened(listener.port);
      const deleted = untilClosed(deleting);
      deleting.write(`DELETE /mcp HTTP/1.1\r\n${head}\r\n`);
      expect(await deleted).toMatch(/^HTTP\/1\.1 200 [^]*\r\nconnection: close\r\n/i);
    } finally {
      await listener.close();
    }
  });
});

describe('a refused request', () => {
  it('is answered Connection: close and its connection is closed, though the client asked to keep it', { timeout: 10_000 }, async () => {
    // The default idle interval (60 s): only the refusal itself may close the connection here.
    const listener = await loopbackListener({ createSession: () => createToolServer(echoServerOptions([], logger)), logger });
    try {
      const socket = await opened(listener.port);
      const received = untilClosed(socket);
      const body = initializeBody();
      writePost(socket, { host: 'evil.example', connection: 'keep-alive', body });
      const response = await closedSoon(received);
      expect(response).toMatch(/^HTTP\/1\.1 421 [^]*\r\nconnection: close\r\n/i);
    } finally {
      await listener.close();
    }
  });
});
