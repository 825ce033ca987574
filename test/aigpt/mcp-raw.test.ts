// The built `aigpt server` spoken to with raw JSON-RPC lines, for what an SDK
// client never sends: oversized lines and malformed requests.

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, runToEnd, type ServerChild, startServerChild, type TempHome, writeConfig } from './support.js';

describe('aigpt server, raw JSON-RPC lines', () => {
  let home: TempHome;
  let server: ServerChild;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
    server = startServerChild(home.childEnv);
    server.send(INITIALIZE_REQUEST);
    await server.response(1);
    server.send(INITIALIZED_NOTIFICATION);
  });

  afterEach(async () => {
    server.child.stdin.end();
    await server.exited;
    home.cleanup();
  });

  const readCore = (id: number, padding: number): unknown => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'read_core', arguments: { pad: 'x'.repeat(padding) } },
  });

  it('a tools/call without a string name is an unknown tool named "" (spec 5.4), not a protocol error', async () => {
    const calls = [{}, { arguments: {} }, { name: 5, arguments: {} }, { name: null }];
    for (const [index, params] of calls.entries()) {
      server.send({ jsonrpc: '2.0', id: 10 + index, method: 'tools/call', params });
      expect(await server.response(10 + index), JSON.stringify(params)).toEqual({
        jsonrpc: '2.0',
        id: 10 + index,
        result: { content: [{ type: 'text', text: '{"error":"Unknown tool: "}' }], isError: true },
      });
    }
  });

  it('an unknown tool name holding a lone surrogate escape is named with U+FFFD, not answered as an internal error', async () => {
    server.send({ jsonrpc: '2.0', id: 15, method: 'tools/call', params: { name: 'x\ud800y', arguments: {} } });
    expect(await server.response(15)).toEqual({
      jsonrpc: '2.0',
      id: 15,
      result: { content: [{ type: 'text', text: '{"error":"Unknown tool: x\ufffdy"}' }], isError: true },
    });
  });

  it('malformed params of a known method get -32602 with a short message, never the validation details', async () => {
    const requests = [
      { method: 'tools/call', params: { name: 'read_core', task: 5 } },
      { method: 'tools/list', params: { cursor: 5 } },
    ];
    for (const [index, request] of requests.entries()) {
      server.send({ jsonrpc: '2.0', id: 20 + index, ...request });
      expect(await server.response(20 + index), request.method).toEqual({
        jsonrpc: '2.0',
        id: 20 + index,
        error: { code: -32602, message: 'Invalid request parameters' },
      });
    }
    server.send({ jsonrpc: '2.0', id: 30, method: 'resources/list' });
    expect(await server.response(30)).toEqual({ jsonrpc: '2.0', id: 30, error: { code: -32601, message: 'Method not found' } });
    // The session is unharmed.
    server.send({ jsonrpc: '2.0', id: 31, method: 'tools/list' });
    expect(((await server.response(31))['result'] as { tools: unknown[] }).tools).toHaveLength(4);
  });

  it('answers a call whose arguments are no object as one without arguments: a result, never -32602 (spec 5.4)', async () => {
    const calls: [string, unknown, string][] = [
      ['compress', [], '{"error":"items must be an array of strings"}'],
      ['compress', ['a', 'b'], '{"error":"items must be an array of strings"}'],
      ['save_memory', 'remember this', '{"error":"content must be a string"}'],
      ['save_memory', 7, '{"error":"content must be a string"}'],
    ];
    for (const [index, [name, args, text]] of calls.entries()) {
      server.send({ jsonrpc: '2.0', id: 50 + index, method: 'tools/call', params: { name, arguments: args } });
      expect(await server.response(50 + index), `${name} ${JSON.stringify(args)}`).toEqual({ jsonrpc: '2.0', id: 50 + index, result: { content: [{ type: 'text', text }], isError: true } });
    }
    server.send({ jsonrpc: '2.0', id: 60, method: 'tools/call', params: { name: 'read_memory', arguments: 'x' } });
    expect(await server.response(60)).toEqual({ jsonrpc: '2.0', id: 60, result: { content: [{ type: 'text', text: '{"count":0,"records":[]}' }] } });
  });

  it('reads optional params members set to null as absent and ignores task metadata, not an invalid request or an internal error', async () => {
    server.send({ jsonrpc: '2.0', id: 40, method: 'ping', params: { _meta: null } });
    expect(await server.response(40)).toEqual({ jsonrpc: '2.0', id: 40, result: {} });
    server.send({ jsonrpc: '2.0', id: 41, method: 'tools/list', params: { cursor: null, _meta: null } });
    expect(((await server.response(41))['result'] as { tools: unknown[] }).tools).toHaveLength(4);
    server.send({ jsonrpc: '2.0', id: 42, method: 'tools/call', params: { name: 'read_core', arguments: {}, _meta: { progressToken: null } } });
    expect(((await server.response(42))['result'] as { isError?: boolean }).isError).toBeUndefined();
    // Task metadata is ignored by a server without the tasks capability (MCP 2025-11-25).
    server.send({ jsonrpc: '2.0', id: 43, method: 'tools/call', params: { name: 'read_core', arguments: {}, task: { ttl: 60000 } } });
    expect(((await server.response(43))['result'] as { isError?: boolean }).isError).toBeUndefined();
  });

  it('bounds an input line at 4 MiB: a longer request gets -32600, a shorter one is served, and the session goes on', async () => {
    server.send(readCore(2, 5 * 1024 * 1024));
    expect(await server.response(2)).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32600, message: 'Invalid Request: the input line is longer than 4194304 bytes' } });
    server.send(readCore(3, 3 * 1024 * 1024));
    const served = (await server.response(3))['result'] as { isError?: boolean };
    expect(served.isError).toBeUndefined();
    server.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
    expect(await server.response(4)).toEqual({ jsonrpc: '2.0', id: 4, result: {} });
    // The edge, newline not counted: a line of exactly 4 MiB is served, one byte more is refused.
    const exactly = (id: number, bytes: number): unknown => readCore(id, bytes - Buffer.byteLength(JSON.stringify(readCore(id, 0))));
    expect(Buffer.byteLength(JSON.stringify(exactly(5, 4 * 1024 * 1024)))).toBe(4 * 1024 * 1024);
    server.send(exactly(5, 4 * 1024 * 1024));
    expect(((await server.response(5))['result'] as { isError?: boolean }).isError).toBeUndefined();
    server.send(exactly(6, 4 * 1024 * 1024 + 1));
    expect(await server.response(6)).toEqual({ jsonrpc: '2.0', id: 6, error: { code: -32600, message: 'Invalid Request: the input line is longer than 4194304 bytes' } });
  });

  it('answers an oversized request in its turn, its id written first or last (as the MCP SDK client writes it)', async () => {
    const big = 'a'.repeat(4_200_000);
    const idLast = { jsonrpc: '2.0', method: 'tools/call', params: { name: 'save_memory', arguments: { content: big } }, id: 10 };
    const idFirst = { id: 11, jsonrpc: '2.0', method: 'tools/call', params: { name: 'save_memory', arguments: { content: big } } };
    const lines = [INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, idLast, { jsonrpc: '2.0', id: 12, method: 'ping' }, idFirst, { jsonrpc: '2.0', id: 13, method: 'ping' }];
    const run = await runToEnd(process.execPath, [aigptBin(), 'server'], { env: home.childEnv, cwd: home.root }, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    expect(run.code).toBe(0);
    const answers = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; error?: { code: number } });
    expect(answers.map((answer) => answer.id)).toEqual([1, 10, 12, 11, 13]);
    expect([answers[1]?.error?.code, answers[3]?.error?.code]).toEqual([-32600, -32600]);
  });
});
