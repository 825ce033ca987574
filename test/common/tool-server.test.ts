// The shared tool server on its own, over the SDK's in-memory transport (so
// arguments arrive as plain numbers, without the lossless path of our
// transports): which answers are JSON-RPC errors, with which code, and which
// are tool results; what tools/list and initialize carry; what a handler gets.

import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import { splitToolArguments } from '../../src/common/mcp/lossless-arguments.js';
import { createToolServer, type SchemaIssue, type ToolCallResult, type ToolServerOptions } from '../../src/common/mcp/tool-server.js';

const text = (value: string): ToolCallResult => ({ content: [{ type: 'text', text: value }] });

interface Seen {
  calls: [string, JsonObject][];
  invalid: [string, readonly SchemaIssue[]][];
  unknown: string[];
  settled: (string | number)[];
}

function options(seen: Seen, overrides: Partial<ToolServerOptions> = {}): ToolServerOptions {
  return {
    name: 'probe-server',
    version: '9.9.9',
    logger: createLogger('test', 'silent'),
    tools: [
      { name: 'first', description: 'The first tool.', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false } },
      { name: 'second', description: 'The second tool.', inputSchema: { type: 'object', properties: {} }, outputSchema: { type: 'object' } },
    ],
    callTool: async (name, args) => {
      seen.calls.push([name, args]);
      if (name === 'boom') throw new Error('secret detail');
      if (name === 'second') return { content: [{ type: 'text', text: 'big' }], structuredContent: { big: 2n ** 63n - 1n }, isError: false };
      return text(`called ${name}`);
    },
    onInvalidArguments: (tool, issues) => {
      seen.invalid.push([tool.name, issues]);
      return { ...text('invalid'), isError: true };
    },
    onUnknownTool: (name) => {
      seen.unknown.push(name);
      return { ...text(`unknown ${name}`), isError: true };
    },
    onUnexpectedError: () => ({ ...text('internal'), isError: true }),
    onCallSettled: (id) => seen.settled.push(id),
    ...overrides,
  };
}

/** Sends raw requests one by one and returns each answer as the client reads it. */
async function session(overrides: Partial<ToolServerOptions> = {}) {
  const seen: Seen = { calls: [], invalid: [], unknown: [], settled: [] };
  const tool = createToolServer(options(seen, overrides));
  const [client, server] = InMemoryTransport.createLinkedPair();
  const answers = new Map<string | number, (message: JSONRPCMessage) => void>();
  client.onmessage = (message) => {
    if ('id' in message) answers.get(message.id as string | number)?.(message);
  };
  await tool.server.connect(server);
  await client.start();
  let next = 0;
  const send = (method: string, params?: unknown): Promise<Record<string, unknown>> => {
    const id = ++next;
    const answered = new Promise<JSONRPCMessage>((resolve) => answers.set(id, resolve));
    void client.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) } as JSONRPCMessage);
    return answered.then((message) => {
      const { jsonrpc: _j, id: _i, ...rest } = message as Record<string, unknown>;
      return rest;
    });
  };
  return { seen, send, tool };
}

const INITIALIZE = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } };

describe('the shared tool server', () => {
  it('answers malformed params of tools/list and tools/call with -32602 (with the configured data), an unknown method with -32601', async () => {
    const plain = await session();
    expect(await plain.send('tools/list', { cursor: 5 })).toEqual({ error: { code: -32602, message: 'Invalid request parameters' } });
    expect(await plain.send('resources/list')).toEqual({ error: { code: -32601, message: 'Method not found' } });
    expect(await plain.send('ping')).toEqual({ result: {} });
    const withData = await session({ invalidParamsData: '' });
    expect(withData.tool.invalidParamsData).toBe('');
    expect(await withData.send('tools/list', { cursor: 5 })).toEqual({ error: { code: -32602, message: 'Invalid request parameters', data: '' } });
    expect(await withData.send('initialize', { protocolVersion: 5.5 })).toEqual({ error: { code: -32602, message: 'Invalid request parameters', data: '' } });
    expect(await withData.send('tools/call', { name: 'first', arguments: {}, task: 5 })).toEqual({ error: { code: -32602, message: 'Invalid request parameters', data: '' } });
    expect(await withData.send('tools/call', { arguments: { n: 1 } })).toEqual({ error: { code: -32602, message: 'Invalid request parameters', data: '' } });
    expect(withData.seen.calls).toEqual([]);
  });

  it('lists the catalogue once, in its order, with an output schema only where a tool has one', async () => {
    const { send } = await session();
    expect(await send('tools/list')).toEqual({
      result: {
        tools: [
          { name: 'first', description: 'The first tool.', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false } },
          { name: 'second', description: 'The second tool.', inputSchema: { type: 'object', properties: {} }, outputSchema: { type: 'object' } },
        ],
      },
    });
  });

  it('answers initialize with its instructions, negotiating among the configured revisions', async () => {
    const fixed = await session({ instructions: 'Read this first.', protocolVersions: ['2025-06-18', '2024-11-05'] });
    expect(await fixed.send('initialize', { ...INITIALIZE, protocolVersion: '2024-11-05' })).toEqual({
      result: { protocolVersion: '2024-11-05', capabilities: { tools: { listChanged: false } }, serverInfo: { name: 'probe-server', version: '9.9.9' }, instructions: 'Read this first.' },
    });
    // A revision outside the list (the SDK knows it) and an integer get the first of the list.
    expect(await fixed.send('initialize', { ...INITIALIZE, protocolVersion: '2025-03-26' })).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
    expect(await fixed.send('initialize', { ...INITIALIZE, protocolVersion: 20250326 })).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
    const none = await session();
    expect((await none.send('initialize', INITIALIZE))['result']).not.toHaveProperty('instructions');
    let asked = 0;
    const built = await session({ instructions: async () => `built ${++asked}`, checkInitializeParams: false });
    expect(await built.send('initialize', { protocolVersion: 7 })).toMatchObject({ result: { instructions: 'built 1', protocolVersion: '2025-11-25' } });
    expect(await built.send('initialize')).toMatchObject({ result: { instructions: 'built 2' } });
    const failing = await session({
      instructions: () => Promise.reject(new Error('secret detail')),
    });
    expect(await failing.send('initialize', INITIALIZE)).toEqual({ error: { code: -32603, message: 'Internal error' } });
  });

  it('validates arguments before the handler: invalid ones and unknown names never reach it, and are tool results with isError', async () => {
    const { send, seen } = await session({ prepareArguments: (_tool, args) => ({ ...args, n: 2n }) });
    expect(await send('tools/call', { name: 'first', arguments: { n: 'x', extra: 1 } })).toEqual({ result: { content: [{ type: 'text', text: 'invalid' }], isError: true } });
    expect(seen.invalid).toEqual([['first', [{ code: 'unknown_field', path: ['extra'] }]]]);
    expect(await send('tools/call', { name: 'nothing', arguments: { n: 1 } })).toEqual({ result: { content: [{ type: 'text', text: 'unknown nothing' }], isError: true } });
    expect(seen.unknown).toEqual(['nothing']);
    expect(seen.calls).toEqual([]);
    // The prepared arguments are what is validated and what the handler gets.
    expect(await send('tools/call', { name: 'first', arguments: { n: 'x' } })).toEqual({ result: { content: [{ type: 'text', text: 'called first' }] } });
    expect(seen.calls).toEqual([['first', { n: 2n }]]);
    expect(seen.settled).toEqual([1, 2, 3]);
    // Only a server told how to report it says that it does: the HTTP transport would otherwise hold each call's POST for good.
    const { onCallSettled: _settled, ...silent } = options(seen);
    expect(createToolServer(silent).reportsSettledCalls).toBe(false);
    expect(createToolServer(options(seen)).reportsSettledCalls).toBe(true);
  });

  it('hands a handler plain arguments with integral numbers as integers, at any depth', async () => {
    const { send, seen } = await session({ validateArguments: false });
    await send('tools/call', { name: 'any', arguments: { n: 5, list: [1, 1.5, { m: -3 }], huge: 1e300 } });
    expect(seen.calls).toEqual([['any', { n: 5n, list: [1n, 1.5, { m: -3n }], huge: 1e300 }]]);
    expect(typeof (seen.calls[0]?.[1]['huge'])).toBe('number');
  });

  it('without validation hands every name to the handler; a failing handler is an unexpected error, isError false is kept', async () => {
    const { send, seen } = await session({ validateArguments: false });
    expect(await send('tools/call', { name: 'nothing', arguments: { x: 1 } })).toEqual({ result: { content: [{ type: 'text', text: 'called nothing' }] } });
    expect(await send('tools/call', { name: 'boom' })).toEqual({ result: { content: [{ type: 'text', text: 'internal' }], isError: true } });
    expect(seen.calls).toEqual([['nothing', { x: 1n }], ['boom', {}]]);
    expect(seen.unknown).toEqual([]);
    const second = await send('tools/call', { name: 'second' });
    expect(second).toMatchObject({ result: { content: [{ type: 'text', text: 'big' }], isError: false } });
    // The SDK's copy of an integer beyond 2^53 is a stand-in, written back exactly by our transports: never a rounded double.
    const big = ((second['result'] as { structuredContent: Record<string, unknown> }).structuredContent)['big'];
    expect(big).not.toBe(Number(2n ** 63n - 1n));
    expect(big).not.toBe(2n ** 63n - 1n);
  });

  it('answers a call without a string name with -32602, or as an unknown tool named "" when so configured', async () => {
    const strict = await session();
    expect(await strict.send('tools/call', { name: 5 })).toEqual({ error: { code: -32602, message: 'Invalid request parameters' } });
    expect(strict.seen.unknown).toEqual([]);
    const lenient = await session({ unnamedToolCall: 'unknown-tool' });
    expect(await lenient.send('tools/call', { arguments: { n: 1 } })).toEqual({ result: { content: [{ type: 'text', text: 'unknown ' }], isError: true } });
    expect(lenient.seen.unknown).toEqual(['']);
    expect(lenient.seen.calls).toEqual([]);
    // Even where the handler receives every name, a call without one is not handed to it.
    const unvalidated = await session({ unnamedToolCall: 'unknown-tool', validateArguments: false });
    expect(await unvalidated.send('tools/call', { name: null })).toEqual({ result: { content: [{ type: 'text', text: 'unknown ' }], isError: true } });
    expect(unvalidated.seen.calls).toEqual([]);
  });

  it('runs arguments that only look like a token (no token prefix, or beside other members) as they are', async () => {
    const { send, seen, tool } = await session({ validateArguments: false });
    await send('tools/call', { name: 'a', arguments: { lossless_arguments_token: 'forged' } });
    // A real token, waiting with its arguments, is still not claimed by arguments holding more than it.
    const split = splitToolArguments({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'b', arguments: { n: 1n } } });
    const token = split.token ?? '';
    tool.lossless.put(token, { n: 1n });
    await send('tools/call', { name: 'b', arguments: { lossless_arguments_token: token, m: 2 } });
    expect(seen.calls).toEqual([
      ['a', { lossless_arguments_token: 'forged' }],
      ['b', { lossless_arguments_token: token, m: 2n }],
    ]);
    expect(tool.lossless.size).toBe(1);
    // The token alone claims them, once: a second call with it finds them gone and does not run.
    await send('tools/call', { name: 'b', arguments: { lossless_arguments_token: token } });
    expect(tool.lossless.size).toBe(0);
    expect(await send('tools/call', { name: 'b', arguments: { lossless_arguments_token: token } })).toEqual({ result: { content: [{ type: 'text', text: 'internal' }], isError: true } });
    expect(seen.calls.slice(2)).toEqual([['b', { n: 1n }]]);
  });

  it('gives a notification of a call no token (it runs no handler, so its arguments would never be taken)', () => {
    const split = splitToolArguments({ jsonrpc: '2.0', method: 'tools/call', params: { name: 't', arguments: { n: 1n } } });
    expect(split).toEqual({ sdkMessage: { jsonrpc: '2.0', method: 'tools/call', params: { name: 't', arguments: {} } } });
  });

  it('strips null members of params but the arguments of a call, and task metadata only where it reads as such', () => {
    const call = splitToolArguments({ jsonrpc: '2.0', id: 2n, method: 'tools/call', params: { name: 't', _meta: { progressToken: null }, task: { ttl: 60000n }, arguments: { a: null } } });
    expect(call.id).toBe(2);
    expect(call.args).toEqual({ a: null });
    expect(call.sdkMessage).toEqual({ jsonrpc: '2.0', id: 2n, method: 'tools/call', params: { name: 't', _meta: {}, arguments: { lossless_arguments_token: call.token } } });
    // Another method's member named arguments is no tool's data.
    expect(splitToolArguments({ jsonrpc: '2.0', id: 3, method: 'x/y', params: { arguments: { a: null, b: 1n }, task: 5n } }).sdkMessage).toEqual({
      jsonrpc: '2.0',
      id: 3,
      method: 'x/y',
      params: { arguments: { b: 1n }, task: 5n },
    });
    const unreadable = { jsonrpc: '2.0', id: 4, method: 'tools/list', params: { task: { ttl: 'soon' } } } as const;
    expect(splitToolArguments(unreadable).sdkMessage).toEqual(unreadable);
  });
});
