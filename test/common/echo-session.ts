// An echo tool server for transport tests, and an in-process stdio session
// over it: the same server behind stdio and Streamable HTTP lets a test
// compare what each transport answers to the same bytes.

import { PassThrough } from 'node:stream';
import { losslessJson, type JsonObject } from '../../src/common/json.js';
import { createLogger, type Logger } from '../../src/common/logger.js';
import { startHttpTransport, type HttpListener, type HttpTransportOptions } from '../../src/common/mcp/http-transport.js';
import { createToolServer, serveStdio, type ToolServerOptions } from '../../src/common/mcp/tool-server.js';
import { initializeBody, MCP_HEADERS, rawRequest } from '../aipcs/http/support.js';

/** One tool, `echo`, answering its arguments as lossless JSON; `calls` collects what it was given. */
export function echoServerOptions(calls: JsonObject[], logger: Logger): ToolServerOptions {
  return {
    name: 'echo-server',
    version: '1.0.0',
    logger,
    tools: [{ name: 'echo', description: 'Echo the arguments.', inputSchema: { type: 'object', additionalProperties: true, properties: {}, required: [] } }],
    callTool: async (_name, args) => {
      calls.push(args);
      return { content: [{ type: 'text', text: losslessJson(args) }] };
    },
    onInvalidArguments: () => ({ content: [{ type: 'text', text: 'invalid' }], isError: true }),
    onUnknownTool: () => ({ content: [{ type: 'text', text: 'unknown' }], isError: true }),
    onUnexpectedError: () => ({ content: [{ type: 'text', text: 'internal' }], isError: true }),
  };
}

/**
 * An echo session served over in-memory pipes whose tool calls wait until
 * `release()`: `started` counts the calls begun, `closed` turns true when
 * the session has ended, `written` holds the answer lines (`answers()`
 * parsed), `inputError` what the end of the session reported about input.
 */
export function gatedEchoSession() {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = '';
  output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const options = echoServerOptions([], createLogger('test', 'silent'));
  const session = {
    input,
    get written(): string[] {
      return text.split('\n').filter(Boolean);
    },
    answers: (): unknown[] => session.written.map((line) => JSON.parse(line) as unknown),
    started: 0,
    closed: false,
    release: (): void => open(),
    ended: Promise.resolve(),
    inputError: undefined as string | undefined,
  };
  session.ended = serveStdio(
    {
      ...options,
      callTool: async (name, args) => {
        session.started++;
        await gate;
        return options.callTool(name, args);
      },
    },
    { input, output },
  ).then((end) => {
    session.closed = true;
    session.inputError = end.inputError;
  });
  return session;
}

/** An in-process stdio session: one raw line in, the answer lines written before a following ping's out (as text). */
export class EchoStdioSession {
  private readonly input = new PassThrough();
  private readonly lines: string[] = [];
  private buffered = '';
  private sentinel = 0;

  constructor(calls: JsonObject[], logger: Logger) {
    const output = new PassThrough();
    output.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString('utf8');
      const parts = this.buffered.split('\n');
      this.buffered = parts.pop() ?? '';
      this.lines.push(...parts);
    });
    void serveStdio(echoServerOptions(calls, logger), { input: this.input, output });
  }

  async exchange(line: string | Buffer): Promise<string[]> {
    const start = this.lines.length;
    const sentinel = `sentinel-${this.sentinel++}`;
    this.input.write(Buffer.concat([Buffer.from(line), Buffer.from('\n')]));
    this.input.write(`{"jsonrpc":"2.0","id":"${sentinel}","method":"ping"}\n`);
    for (let turn = 0; turn < 500 && !this.lines.slice(start).some((l) => l.includes(sentinel)); turn++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return this.lines.slice(start).filter((l) => !l.includes(sentinel));
  }

  end(): void {
    this.input.end();
  }
}

/** A Streamable HTTP listener on a free loopback port at /mcp (sessions idle out after 10 minutes unless `options` say otherwise). */
export function loopbackListener(options: Pick<HttpTransportOptions, 'createSession' | 'logger'> & Partial<HttpTransportOptions>): Promise<HttpListener> {
  return startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    allowedHosts: ['127.0.0.1:*'],
    allowedOrigins: [],
    sessionIdleTimeoutMs: 600_000,
    allowNonLoopback: false,
    ...options,
  });
}

/** The echo server behind both transports, each with an initialized session (HTTP's id in `session`). */
export async function openEchoTransports(
  stdioCalls: JsonObject[],
  httpCalls: JsonObject[],
  logger: Logger,
): Promise<{ stdio: EchoStdioSession; listener: HttpListener; session: string }> {
  const stdio = new EchoStdioSession(stdioCalls, logger);
  await stdio.exchange(initializeBody());
  const listener = await loopbackListener({
    sessionIdleTimeoutMs: 60_000,
    createSession: (hooks) => createToolServer({ ...echoServerOptions(httpCalls, logger), onCallSettled: hooks.onCallSettled }),
    logger,
  });
  const opened = await rawRequest(listener.port, { headers: MCP_HEADERS, body: initializeBody() });
  return { stdio, listener, session: String(opened.headers['mcp-session-id']) };
}
