// Transport parity: the same raw JSON-RPC message sent over stdio
// and over Streamable HTTP gets the same JSON-RPC answer, so a client cannot
// tell which transport served it. Only the HTTP status and framing differ.
// Covered here: JSON that is no valid JSON-RPC request (params or _meta not
// an object, an id beyond 2^53), well-formed JSON beyond a bound (nesting,
// integer length), and text that is not UTF-8, which neither transport may
// serve with U+FFFD in place of the bad bytes; and a request behind a
// leading byte order mark, which both serve.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import type { HttpListener } from '../../src/common/mcp/http-transport.js';
import { MCP_HEADERS, rawRequest, sseMessages } from '../aipcs/http/support.js';
import { openEchoTransports, type EchoStdioSession } from './echo-session.js';

const logger = createLogger('parity-test', 'silent');

/** The stdio answers to one line, parsed. */
async function exchangeParsed(session: EchoStdioSession, line: string | Buffer): Promise<unknown[]> {
  return (await session.exchange(line)).map((l) => JSON.parse(l) as unknown);
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
  let stdio: EchoStdioSession;
  let listener: HttpListener;
  let session: string;

  beforeAll(async () => {
    ({ stdio, listener, session } = await openEchoTransports(stdioCalls, httpCalls, logger));
  });

  afterAll(async () => {
    stdio.end();
    await listener.close();
  });

  for (const { name, line, answer } of cases) {
    it(name, async () => {
      const expected = typeof answer === 'string' ? answer : JSON.stringify(answer);
      const overStdio = await exchangeParsed(stdio, line);
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
      '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":5.5,"capabilities":{},"clientInfo":{"name":"a","version":"1"}}}',
      '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18"}}',
    ];
    for (const body of bodies) {
      const overStdio = await exchangeParsed(stdio, body);
      const overHttp = await rawRequest(listener.port, { headers: MCP_HEADERS, body });
      const id = (JSON.parse(body) as { id: unknown }).id;
      expect(overStdio).toEqual([{ jsonrpc: '2.0', id, error: { code: -32602, message: 'Invalid request parameters' } }]);
      expect(overHttp.status).toBe(400);
      expect(overHttp.headers['mcp-session-id']).toBeUndefined();
      expect(JSON.parse(overHttp.body)).toEqual(overStdio[0]);
    }
    expect(listener.sessionCount()).toBe(1);
  });

  it('serves a request behind a leading byte order mark alike, its arguments as sent', async () => {
    const call = '\ufeff{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"bom":1.0}}}';
    const overStdio = await exchangeParsed(stdio, call);
    const overHttp = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: call });
    expect(overHttp.status).toBe(200);
    expect(overStdio).toEqual([{ jsonrpc: '2.0', id: 11, result: { content: [{ type: 'text', text: '{"bom":1.0}' }] } }]);
    expect(sseMessages(overHttp.body)).toEqual(overStdio);
  });

  it('still serves both sessions afterwards', async () => {
    const call = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"n":1.0}}}';
    const overStdio = await exchangeParsed(stdio, call);
    const overHttp = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: call });
    expect(sseMessages(overHttp.body)).toEqual(overStdio);
    expect(stdioCalls).toEqual(httpCalls);
  });
});
