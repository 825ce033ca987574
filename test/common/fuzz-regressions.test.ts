// Defects found by the seeded protocol fuzzer (seeded malformed JSON-RPC over
// real stdio pipes and HTTP). Each case is the smallest line that showed one:
// - a message with a visible id that the SDK does not take for a request (a
//   fractional id, no jsonrpc member, a method that is no string, no method)
//   was dropped over stdio, so the client waited for ever; HTTP answered it
//   with id null;
// - tools/call with non-object arguments and an integer id beyond 2^53 was
//   answered over stdio with the id rounded (1.4e+23);
// - a line too deep to parse whose id had more than 16 digits, or a fraction,
//   was dropped, and a 16-digit id beyond 2^53 came back rounded;
// - a line starting with a byte order mark was dropped as malformed.
// Every such request now gets exactly one answer, -32600 with its id exactly
// as sent, the same over stdio and HTTP.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import type { HttpListener } from '../../src/common/mcp/http-transport.js';
import { requestIdFromPrefix, requestIdFromSuffix } from '../../src/common/mcp/stdio-transport.js';
import { MCP_HEADERS, rawRequest, sseMessages } from '../aipcs/http/support.js';
import { openEchoTransports, type EchoStdioSession } from './echo-session.js';

const logger = createLogger('fuzz', 'silent');

const invalid = (idText: string): string => `{"jsonrpc":"2.0","id":${idText},"error":{"code":-32600,"message":"Invalid Request"}}`;
const deep = `{"a":${'['.repeat(1100)}${']'.repeat(1100)}}`;

const cases: { name: string; line: string; answer: string }[] = [
  { name: 'a fractional id', line: '{"jsonrpc":"2.0","id":7.5,"method":"ping"}', answer: invalid('7.5') },
  { name: 'a tools/call with a fractional id', line: '{"jsonrpc":"2.0","id":127.5,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}', answer: invalid('127.5') },
  { name: 'no jsonrpc member', line: '{"id":35,"method":"ping"}', answer: invalid('35') },
  { name: 'a jsonrpc member other than "2.0"', line: '{"jsonrpc":"1.0","id":"v","method":"ping"}', answer: invalid('"v"') },
  { name: 'a method that is no string', line: '{"jsonrpc":"2.0","id":36,"method":5}', answer: invalid('36') },
  { name: 'an id and no method', line: '{"jsonrpc":"2.0","id":37}', answer: invalid('37') },
  {
    name: 'non-object arguments under an id beyond 2^53 (not rounded)',
    line: '{"jsonrpc":"2.0","id":140000000000000000000000,"method":"tools/call","params":{"name":"echo","arguments":5}}',
    answer: invalid('140000000000000000000000'),
  },
  {
    name: 'a line too deep to read, with a 24-digit id',
    line: `{"jsonrpc":"2.0","id":105000000000000000000000,"method":"tools/call","params":{"name":"echo","arguments":${deep}}}`,
    answer: invalid('105000000000000000000000'),
  },
  {
    name: 'a line too deep to read, with a 16-digit id beyond 2^53 (not rounded)',
    line: `{"jsonrpc":"2.0","id":9999999999999999,"method":"tools/call","params":{"name":"echo","arguments":${deep}}}`,
    answer: invalid('9999999999999999'),
  },
  {
    name: 'a line too deep to read, with a fractional id',
    line: `{"jsonrpc":"2.0","id":461.5,"method":"ping","params":{"deep":${deep}}}`,
    answer: invalid('461.5'),
  },
];

describe('fuzz findings: every request whose id shows is answered once, with that id, over stdio and HTTP alike', () => {
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
      expect(await stdio.exchange(line)).toEqual([answer]);
      const overHttp = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: line });
      expect(overHttp.status).toBe(400);
      expect(overHttp.body).toBe(answer);
      expect(stdioCalls).toEqual([]);
      expect(httpCalls).toEqual([]);
    });
  }

  it('serves a line or body that starts with a byte order mark', async () => {
    const line = '\ufeff{"jsonrpc":"2.0","id":54,"method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}';
    const overStdio = await stdio.exchange(line);
    const overHttp = await rawRequest(listener.port, { headers: { ...MCP_HEADERS, 'mcp-session-id': session }, body: line });
    expect(overStdio.map((l) => JSON.parse(l) as unknown)).toEqual([{ jsonrpc: '2.0', id: 54, result: { content: [{ type: 'text', text: '{"n":1}' }] } }]);
    expect(overHttp.status).toBe(200);
    expect(sseMessages(overHttp.body)).toEqual(overStdio.map((l) => JSON.parse(l) as unknown));
    stdioCalls.length = 0;
    httpCalls.length = 0;
  });

  it('still answers nothing to responses, notifications and ids that cannot be written back', async () => {
    for (const line of [
      '{"jsonrpc":"2.0","id":5,"result":{}}',
      '{"jsonrpc":"2.0","id":6,"error":{"code":1,"message":"x"}}',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","id":null,"method":"ping"}',
      '{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
      '[{"jsonrpc":"2.0","id":9,"method":"ping"}]',
    ]) {
      expect(await stdio.exchange(line)).toEqual([]);
    }
  });
});

describe('ids found in lines that cannot be parsed whole', () => {
  it('keeps integers beyond 2^53 exact and reads fractions', () => {
    expect(requestIdFromPrefix('{"jsonrpc":"2.0","id":12345678901234567890,"method":"x","params":[[[')).toBe(12345678901234567890n);
    expect(requestIdFromPrefix('{"id":9007199254740993,"method":"x"')).toBe(9007199254740993n);
    expect(requestIdFromPrefix('{"id":9007199254740991,"method":"x"')).toBe(9007199254740991);
    expect(requestIdFromPrefix('{"id":2.5,"method":"x"')).toBe(2.5);
    expect(requestIdFromPrefix('{"id":1e400,"method":"x"')).toBeUndefined();
    expect(requestIdFromSuffix('"x"]]],"jsonrpc":"2.0","id":-12345678901234567890}')).toBe(-12345678901234567890n);
  });
});
