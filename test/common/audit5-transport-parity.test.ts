// Transport parity (audit 5): the same raw JSON-RPC message sent over stdio
// and over Streamable HTTP gets the same JSON-RPC answer, so a client cannot
// tell which transport served it. Only the HTTP status and framing differ.
// Covered here: JSON that is no valid JSON-RPC request (params or _meta not
// an object, an id beyond 2^53), well-formed JSON beyond a bound (nesting,
// integer length), and text that is not UTF-8, which neither transport may
// serve with U+FFFD in place of the bad bytes.

import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { losslessJson, type JsonObject } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import { startHttpTransport, type HttpListener } from '../../src/common/mcp/http-transport.js';
import { createToolServer, serveStdio, type ToolServerOptions } from '../../src/common/mcp/tool-server.js';
import { initializeBody, MCP_HEADERS, rawRequest, sseMessages } from '../aipcs/http/support.js';

const logger = createLogger('parity-test', 'silent');

function serverOptions(calls: JsonObject[]): ToolServerOptions {
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

/** A stdio session in process: send one raw line, read the answers written before a following ping's. */
class StdioSession {
  private readonly input = new PassThrough();
  private readonly lines: string[] = [];
  private buffered = '';
  private sentinel = 0;

  constructor(calls: JsonObject[]) {
    const output = new PassThrough();
    output.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString('utf8');
      const parts = this.buffered.split('\n');
      this.buffered = parts.pop() ?? '';
      this.lines.push(...parts);
    });
    void serveStdio(serverOptions(calls), { input: this.input, output });
  }

  async exchange(line: string | Buffer): Promise<unknown[]> {
    const start = this.lines.length;
    const sentinel = `sentinel-${this.sentinel++}`;
    this.input.write(Buffer.concat([Buffer.from(line), Buffer.from('\n')]));
    this.input.write(`{"jsonrpc":"2.0","id":"${sentinel}","method":"ping"}\n`);
    for (let turn = 0; turn < 500 && !this.lines.slice(start).some((l) => l.includes(sentinel)); turn++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return this.lines
      .slice(start)
      .filter((l) => !l.includes(sentinel))
      .map((l) => JSON.parse(l) as unknown);
  }

  end(): void {
    this.input.end();
  }
}

const cases: { name: string; line: string | Buffer; answer: unknown }[] = [
  {
    name: 'tools/call whose params is a string',
    line: '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"x"}',
    answer: { jsonrpc: '2.0', id: 8, error: { code: -32600, message: 'Invalid Request' } },
  },
  {
    name: 'ping whose params is an array',
    line: '{"jsonrpc":"2.0","id":"p","method":"ping","params":[]}',
    answer: { jsonrpc: '2.0', id: 'p', error: { code: -32600, message: 'Invalid Request' } },
  },
  {
    name: 'tools/call whose _meta is not an object',
    line: '{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":5}}',
    answer: { jsonrpc: '2.0', id: 21, error: { code: -32600, message: 'Invalid Request' } },
  },
  {
    name: 'an integer id beyond 2^53 (answered exactly)',
    line: '{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}',
    answer: '{"jsonrpc":"2.0","id":12345678901234567890,"error":{"code":-32600,"message":"Invalid Request"}}',
  },
  {
    name: 'arguments nested deeper than the bound',
    line: `{"jsonrpc":"2.0","id":401,"method":"tools/call","params":{"name":"echo","arguments":{"a":${'['.repeat(1100)}${']'.repeat(1100)}}}}`,
    answer: { jsonrpc: '2.0', id: 401, error: { code: -32600, message: 'Invalid Request' } },
  },
  {
    name: 'an integer of 5000 digits',
    line: `{"jsonrpc":"2.0","id":402,"method":"tools/call","params":{"name":"echo","arguments":{"a":${'9'.repeat(5000)}}}}`,
    answer: { jsonrpc: '2.0', id: 402, error: { code: -32600, message: 'Invalid Request' } },
  },
  {
    name: 'text that is not UTF-8 (never served with U+FFFD)',
    line: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":405,"method":"tools/call","params":{"name":"echo","arguments":{"text":"k'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}}')]),
    answer: { jsonrpc: '2.0', id: 405, error: { code: -32600, message: 'Invalid Request' } },
  },
];

describe('stdio and Streamable HTTP answer the same invalid requests alike', () => {
  const stdioCalls: JsonObject[] = [];
  const httpCalls: JsonObject[] = [];
  let stdio: StdioSession;
  let listener: HttpListener;
  let session: string;

  beforeAll(async () => {
    stdio = new StdioSession(stdioCalls);
    await stdio.exchange(initializeBody());
    listener = await startHttpTransport({
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      allowedHosts: ['127.0.0.1:*'],
      allowedOrigins: [],
      sessionIdleTimeoutMs: 60_000,
      allowNonLoopback: false,
      createSession: () => createToolServer(serverOptions(httpCalls)),
      logger,
    });
    const opened = await rawRequest(listener.port, { headers: MCP_HEADERS, body: initializeBody() });
    session = String(opened.headers['mcp-session-id']);
  });

  afterAll(async () => {
    stdio.end();
    await listener.close();
  });

  for (const { name, line, answer } of cases) {
    it(name, async () => {
      const expected = typeof answer === 'string' ? answer : JSON.stringify(answer);
      const overStdio = await stdio.exchange(line);
      const overHttp = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: line });
      expect(overStdio).toHaveLength(1);
      // Compared as text: an id beyond 2^53 must come back digit for digit.
      expect(overHttp.status).toBe(400);
      expect(overHttp.body).toBe(expected);
      expect(JSON.parse(overHttp.body)).toEqual(overStdio[0]);
      expect(stdioCalls).toEqual([]);
      expect(httpCalls).toEqual([]);
    });
  }

  it('answers an initialize whose params do not read as one with -32602 and its id, opening no session', async () => {
    const bodies = [
      '{"jsonrpc":"2.0","id":7,"method":"initialize"}',
      '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"a","version":"1"}}}',
      '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18"}}',
    ];
    for (const body of bodies) {
      const overStdio = await stdio.exchange(body);
      const overHttp = await rawRequest(listener.port, { headers: MCP_HEADERS, body });
      const id = (JSON.parse(body) as { id: unknown }).id;
      expect(overStdio).toEqual([{ jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid request parameters' } }]);
      expect(overHttp.status).toBe(400);
      expect(overHttp.headers['mcp-session-id']).toBeUndefined();
      expect(JSON.parse(overHttp.body)).toEqual(overStdio[0]);
    }
    expect(listener.sessionCount()).toBe(1);
  });

  it('still serves both sessions afterwards', async () => {
    const call = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"n":1.0}}}';
    const overStdio = await stdio.exchange(call);
    const overHttp = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: call });
    expect(sseMessages(overHttp.body)).toEqual(overStdio);
    expect(stdioCalls).toEqual(httpCalls);
  });
});
