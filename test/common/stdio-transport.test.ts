// The lossless stdio transport: lines are bounded, oversized requests are
// answered with -32600 when their id is visible, malformed lines are dropped,
// and tool arguments travel losslessly beside the SDK's copy.

import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LosslessArguments, splitToolArguments } from '../../src/common/mcp/lossless-arguments.js';
import { LosslessStdioTransport, MAX_REQUESTS_IN_FLIGHT, requestIdFromPrefix } from '../../src/common/mcp/stdio-transport.js';
import { RunningCalls, serveStdio } from '../../src/common/mcp/tool-server.js';
import type { JsonObject } from '../../src/common/json.js';
import { createLogger } from '../../src/common/logger.js';
import { echoServerOptions, gatedEchoSession } from './echo-session.js';

/** The arguments of the SDK's copy of a tools/call message. */
function sdkArguments(message: unknown): unknown {
  return (message as { params?: { arguments?: unknown } } | undefined)?.params?.arguments;
}

function harness(maxLineBytes = 64) {
  const input = new PassThrough();
  const output = new PassThrough();
  const lossless = new LosslessArguments();
  const transport = new LosslessStdioTransport({ input, output, lossless, logger: createLogger('test', 'silent'), maxLineBytes });
  const received: unknown[] = [];
  transport.onmessage = (message) => received.push(message);
  const written: string[] = [];
  output.on('data', (chunk: Buffer) => written.push(...chunk.toString().split('\n').filter(Boolean)));
  return { input, transport, received, written, lossless };
}

/** What the client reads for a line over the 64-byte bound of these tests: the reason, since it cannot see the server's log. */
const TOO_LONG = 'Invalid Request: the input line is longer than 64 bytes';

describe('LosslessStdioTransport', () => {
  it('answers an oversized request with -32600 and keeps serving', async () => {
    const { input, transport, received, written } = harness();
    await transport.start();
    input.write(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"${'a'.repeat(200)}"}}\n`);
    input.write('{"jsonrpc":"2.0","id":8,"method":"ping"}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(written.map((line) => JSON.parse(line))).toEqual([{ jsonrpc: '2.0', id: 7, error: { code: -32600, message: TOO_LONG } }]);
    expect(received).toEqual([{ jsonrpc: '2.0', id: 8, method: 'ping' }]);
  });

  it('serves a line of exactly the bound and answers one a byte longer with -32600', async () => {
    const { input, transport, received, written } = harness(64);
    await transport.start();
    const line = (id: number, bytes: number): string => {
      const head = `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"p":"`;
      return `${head}${'a'.repeat(bytes - head.length - 3)}"}}`;
    };
    expect(Buffer.byteLength(line(1, 64))).toBe(64);
    input.write(`${line(1, 64)}\n${line(2, 65)}\n`);
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toMatchObject([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect(written.map((text) => JSON.parse(text))).toEqual([{ jsonrpc: '2.0', id: 2, error: { code: -32600, message: TOO_LONG } }]);
  });

  it('answers an oversized request whose id comes last, as the MCP SDK writes it, even across chunks', async () => {
    const { input, transport, received, written } = harness();
    await transport.start();
    // The SDK client serialises {...request, jsonrpc, id}: the id is the last member.
    const body = `{"method":"tools/call","params":{"name":"save_memory","arguments":{"content":"${'a'.repeat(300)}"}},"jsonrpc":"2.0",`;
    input.write(body.slice(0, 100));
    input.write(body.slice(100));
    input.write('"id":9}\r\n');
    // A nested "id" at the end of a line is not the request's id; a notification is never answered.
    input.write(`{"jsonrpc":"2.0","method":"notifications/x","params":{"p":"${'b'.repeat(300)}","id":10}}\n`);
    input.write(`{"method":"tools/call","params":{"x":"${'c'.repeat(300)}"},"jsonrpc":"2.0","id":"k\\"1"}`);
    input.write('\n{"jsonrpc":"2.0","id":11,"method":"ping"}\n');
    input.write(`{"method":"tools/call","params":{"x":"${'d'.repeat(300)}"},"jsonrpc":"2.0","id":12}`);
    input.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(written.map((line) => JSON.parse(line))).toEqual([
      { jsonrpc: '2.0', id: 9, error: { code: -32600, message: TOO_LONG } },
      { jsonrpc: '2.0', id: 'k"1', error: { code: -32600, message: TOO_LONG } },
      { jsonrpc: '2.0', id: 12, error: { code: -32600, message: TOO_LONG } },
    ]);
    expect(received).toEqual([{ jsonrpc: '2.0', id: 11, method: 'ping' }]);
  });

  it('drops malformed lines and keeps tool arguments lossless', async () => {
    const { input, transport, received, lossless } = harness(4096);
    await transport.start();
    input.write('{nope\n');
    input.write('{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","arguments":{"n":1.0,"m":1}}}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toMatchObject([{ jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 't' } }]);
    expect(lossless.take(sdkArguments(received[0]))).toEqual({ kind: 'found', args: { n: 1, m: 1n } });
  });

  it('answers a well-formed request beyond a bound (nesting, integer length) with -32600, a syntax error with nothing', async () => {
    const { input, transport, received, written, lossless } = harness(1 << 20);
    await transport.start();
    input.write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"a":${'['.repeat(1200)}${']'.repeat(1200)}}}}\n`);
    input.write(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{"a":${'9'.repeat(5000)}}}}\n`);
    input.write('{"jsonrpc":"2.0","id":5,"method":"tools/call",\n');
    input.write('{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"t","arguments":{"n":1e400}}}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(written.map((line) => JSON.parse(line))).toEqual([
      { jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Invalid Request' } },
      { jsonrpc: '2.0', id: 4, error: { code: -32600, message: 'Invalid Request' } },
    ]);
    // A float beyond binary64 is valid JSON: it reaches the tool (as Infinity), which refuses it.
    expect(received).toHaveLength(1);
    expect(lossless.take(sdkArguments(received[0]))).toEqual({ kind: 'found', args: { n: Infinity } });
  });

  it('answers a request the SDK would not recognise (params not an object) with -32600', async () => {
    const { input, transport, received, written } = harness(4096);
    await transport.start();
    input.write('{"jsonrpc":"2.0","id":11,"method":"tools/list","params":5}\n');
    input.write('{"jsonrpc":"2.0","id":12,"method":"ping","params":{"_meta":"x"}}\n');
    input.write('{"jsonrpc":"2.0","method":"notifications/x","params":5}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(written.map((line) => JSON.parse(line))).toEqual([
      { jsonrpc: '2.0', id: 11, error: { code: -32600, message: 'Invalid Request' } },
      { jsonrpc: '2.0', id: 12, error: { code: -32600, message: 'Invalid Request' } },
    ]);
    // A notification is never answered; the SDK reports it through onerror.
    expect(received).toHaveLength(1);
  });

  it('reads "params": null as no params, as the Python SDK does', async () => {
    const { input, transport, received, written } = harness(4096);
    await transport.start();
    input.write('{"jsonrpc":"2.0","id":13,"method":"tools/list","params":null}\n');
    input.write('{"jsonrpc":"2.0","method":"notifications/initialized","params":null}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual([]);
    expect(received).toEqual([
      { jsonrpc: '2.0', id: 13, method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ]);
  });

  it('ignores members JSON-RPC does not define, as the Python SDK and serde do', async () => {
    const { input, transport, received, written } = harness(4096);
    await transport.start();
    input.write('{"jsonrpc":"2.0","id":14,"method":"ping","trace":"t1","params":null}\n');
    input.write('{"jsonrpc":"2.0","method":"notifications/initialized","x":{"y":1}}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual([]);
    expect(received).toEqual([
      { jsonrpc: '2.0', id: 14, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ]);
  });

  it('closes at the end of input only once every request read is answered, and serves a last line without newline', async () => {
    const { input, transport, written } = harness(4096);
    const events: string[] = [];
    transport.onclose = () => events.push(`closed after ${written.length} answers`);
    transport.onmessage = (message) => {
      const id = (message as { id?: number }).id;
      if (id === undefined) return;
      // Slow answers, the later request first.
      setTimeout(() => {
        events.push(`answering ${id}`);
        void transport.send({ jsonrpc: '2.0', id, result: {} });
      }, id === 1 ? 40 : 10);
    };
    await transport.start();
    input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    input.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    input.end('{"jsonrpc":"2.0","id":2,"method":"ping"}');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events).toEqual(['answering 2', 'answering 1', 'closed after 2 answers']);
    expect(written.map((line) => (JSON.parse(line) as { id: number }).id)).toEqual([2, 1]);
  });

  it('keeps waiting at the end of input past the answer wait while a call is still running, and writes its answer', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const written: string[] = [];
    output.on('data', (chunk: Buffer) => written.push(...chunk.toString().split('\n').filter(Boolean)));
    const options = echoServerOptions([], createLogger('test', 'silent'));
    const ended = serveStdio(
      {
        ...options,
        callTool: async (name, args) => {
          // Runs for several answer waits.
          await new Promise((resolve) => setTimeout(resolve, 500));
          return options.callTool(name, args);
        },
      },
      { input, output, answerWaitMs: 100, runningCalls: new RunningCalls() },
    );
    input.end('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"slow":true}}}\n');
    const end = await ended;
    expect(end.answersAbandoned).toBe(false);
    expect(written.map((line) => JSON.parse(line) as unknown)).toEqual([{ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: '{"slow":true}' }] } }]);
  });

  it('owes no answer to a cancelled request', async () => {
    const { input, transport } = harness(4096);
    let closed = false;
    transport.onclose = () => (closed = true);
    await transport.start();
    input.write('{"jsonrpc":"2.0","id":"a","method":"ping"}\n');
    input.end('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(true);
  });

  it('counts a cancelled call against the bound until its handler ends', async () => {
    // The SDK drops a cancelled call's answer but never stops its handler:
    // freed at the cancellation, call-and-cancel pairs ran without a bound.
    const session = gatedEchoSession();
    const pairs = MAX_REQUESTS_IN_FLIGHT * 3;
    let lines = '';
    for (let id = 1; id <= pairs; id++) {
      lines += `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"n":${id}}}}\n`;
      lines += `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id}}}\n`;
    }
    // One chunk: every call and its cancellation are read before any handler starts.
    session.input.write(lines);
    await expect.poll(() => session.started).toBe(MAX_REQUESTS_IN_FLIGHT);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(session.started).toBe(MAX_REQUESTS_IN_FLIGHT);
    session.release();
    await expect.poll(() => session.started).toBe(pairs);
    session.input.end();
    await session.ended;
    expect(session.written).toEqual([]);
  });

  it('answers a request whose cancellation came before it (a cancellation of nothing read), and ends', async () => {
    // The SDK applies a cancellation a turn late: read in the same batch just
    // before its request, it silenced that request's answer for good.
    const session = gatedEchoSession();
    session.release();
    session.input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}\n');
    session.input.write('{"jsonrpc":"2.0","id":"x","method":"ping"}\n');
    session.input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}\n');
    session.input.end('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"n":7}}}\n');
    await session.ended;
    expect(session.written.map((line) => (JSON.parse(line) as { id: unknown }).id)).toEqual(['x', 7]);
  });

  it('still owes the answer to a request whose cancellation the SDK does not act on (id 0, a reason that is no string)', async () => {
    // The SDK's Server cancels only when its schema reads the notification
    // and the requestId is truthy; for any other it answers the call, so the
    // end of input must wait for that answer (as the HTTP listener does).
    const session = gatedEchoSession();
    const { input } = session;
    input.write('{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"n":0}}}\n');
    input.write('{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}\n');
    input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}\n');
    input.end('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b","reason":5}}\n');
    for (let turn = 0; turn < 200 && session.started < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(session.started).toBe(2);
    expect(session.closed).toBe(false);
    session.release();
    await session.ended;
    expect(session.written.map((line) => (JSON.parse(line) as { id: unknown }).id).sort()).toEqual([0, 'b']);
  });

  it('ends the session once the answers owed are written when reading the input fails', async () => {
    // A read error (EIO on a terminal, ECONNRESET on a socket) brings no end
    // event: the session used to wait for one for good, storage left open.
    const session = gatedEchoSession();
    const { input } = session;
    input.write('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}\n');
    input.write('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","ar');
    for (let turn = 0; turn < 200 && session.started === 0; turn++) await new Promise((resolve) => setImmediate(resolve));
    input.destroy(new Error('read failed'));
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(session.closed).toBe(false);
    session.release();
    for (let turn = 0; turn < 200 && !session.closed; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(session.closed).toBe(true);
    // The call read whole is answered; the line cut short by the error is dropped.
    expect(session.written.map((line) => (JSON.parse(line) as { id: unknown }).id)).toEqual([1]);
    // No client chose this end: the command is told, to report it.
    expect(session.inputError).toBe('unknown error');
  });

  it('tells a failed read (EBADF) from a client that went away (ECONNRESET), and from an input that ended', async () => {
    const endWith = async (end: (input: PassThrough) => void): Promise<string | undefined> => {
      const session = gatedEchoSession();
      session.release();
      end(session.input);
      await session.ended;
      return session.inputError;
    };
    expect(await endWith((input) => input.destroy(Object.assign(new Error('bad fd'), { code: 'EBADF' })))).toBe('EBADF');
    expect(await endWith((input) => input.destroy(Object.assign(new Error('reset'), { code: 'ECONNRESET' })))).toBeUndefined();
    expect(await endWith((input) => input.end())).toBeUndefined();
  });

  it('finds ids only where they are plainly visible, at the top level', () => {
    expect(requestIdFromPrefix('{"jsonrpc":"2.0","id":12,"method"')).toBe(12);
    expect(requestIdFromPrefix('{"id":"x\\"y","jsonrpc"')).toBe('x"y');
    expect(requestIdFromPrefix('{"jsonrpc":"2.0","method":"a","params":{"')).toBeUndefined();
    expect(requestIdFromPrefix('{"method":"t","params":{"record":{"id":777},"x":[[]]},"id":42}')).toBe(42);
    expect(requestIdFromPrefix('{"method":"n","params":{"id":"zzz"}}')).toBeUndefined();
    expect(requestIdFromPrefix('{"method":"t","params":{"s":"\\",\\"id\\":5"},"id":"real"}')).toBe('real');
  });

  it('answers a request id beyond 2^53 exactly, and runs two requests sharing an id with their own arguments', async () => {
    const { input, transport, received, written, lossless } = harness(4096);
    await transport.start();
    input.write('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}\n');
    input.write('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"t","arguments":{"n":"A"}}}\n');
    input.write('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"t","arguments":{"n":"B"}}}\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual(['{"jsonrpc":"2.0","id":9007199254740993,"error":{"code":-32600,"message":"Invalid Request"}}']);
    expect(received).toHaveLength(2);
    // The second is taken first: each message's arguments are its own, whatever the order.
    expect([lossless.take(sdkArguments(received[1])), lossless.take(sdkArguments(received[0]))]).toEqual([
      { kind: 'found', args: { n: 'B' } },
      { kind: 'found', args: { n: 'A' } },
    ]);
    expect(lossless.size).toBe(0);
    // A client cannot name a waiting token: the SDK's copy of its arguments is always ours.
    expect(JSON.stringify(received)).not.toContain('"n"');
  });

  it('never runs a call with arguments other than its own when more than 1024 calls arrive in one chunk', async () => {
    // Handlers start in a microtask, after the whole chunk is read: the
    // waiting arguments pass their bound, and the calls whose arguments were
    // dropped used to run with {} instead. Each now runs with its own or is
    // answered as an internal error.
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const ended = serveStdio(echoServerOptions([], createLogger('test', 'silent')), { input, output });
    const lines: string[] = [];
    for (let i = 1; i <= 1100; i++) lines.push(`{"jsonrpc":"2.0","id":${i},"method":"tools/call","params":{"name":"echo","arguments":{"n":${i}}}}`);
    // Two calls sharing an id (a client error) each run with their own arguments.
    lines.push('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo","arguments":{"n":"A"}}}');
    lines.push('{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo","arguments":{"n":"B"}}}');
    input.end(`${lines.join('\n')}\n`);
    await ended;
    const answers = text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { id: number | string; result: { content: { text: string }[]; isError?: boolean } });
    expect(answers).toHaveLength(1102);
    const outcomes = answers.map(({ id, result }) => {
      if (result.isError === true && result.content[0]?.text === 'internal') return 'refused';
      return result.content[0]?.text === (typeof id === 'number' ? `{"n":${id}}` : result.content[0]?.text) ? 'own' : `other ${result.content[0]?.text ?? ''}`;
    });
    expect(outcomes.filter((outcome) => outcome !== 'own' && outcome !== 'refused')).toEqual([]);
    expect(outcomes.filter((outcome) => outcome === 'own').length).toBeGreaterThanOrEqual(1024);
    const shared = answers.filter(({ id }) => id === 'dup').map(({ result }) => result.content[0]?.text);
    expect(shared.sort()).toEqual(['{"n":"A"}', '{"n":"B"}']);
  });

  it('serves at most MAX_REQUESTS_IN_FLIGHT requests at once, reading on as they are answered', async () => {
    // Pipelined requests all started at once, and their answers were all held
    // in memory together: 2000 list calls in one write ended the process.
    const session = gatedEchoSession();
    const calls = 3 * MAX_REQUESTS_IN_FLIGHT + 5;
    const lines: string[] = [];
    for (let i = 1; i <= calls; i++) lines.push(`{"jsonrpc":"2.0","id":${i},"method":"tools/call","params":{"name":"echo","arguments":{"n":${i}}}}`);
    // One write, its end included: the end of input waits for the held lines.
    session.input.end(`${lines.join('\n')}\n`);
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(session.started).toBe(MAX_REQUESTS_IN_FLIGHT);
    expect(session.closed).toBe(false);
    session.release();
    await session.ended;
    expect(session.started).toBe(calls);
    expect(session.written.map((line) => (JSON.parse(line) as { id: number }).id).sort((a, b) => a - b)).toEqual(Array.from({ length: calls }, (_, i) => i + 1));
  });

  it('stops reading while a client leaves its answers unread, and serves the rest once it reads them', async () => {
    const input = new PassThrough();
    const output = new PassThrough({ highWaterMark: 1024 });
    const calls: JsonObject[] = [];
    const ended = serveStdio(echoServerOptions(calls, createLogger('test', 'silent')), { input, output });
    const total = 500;
    const payload = 'x'.repeat(4096);
    for (let i = 1; i <= total; i++) input.write(`{"jsonrpc":"2.0","id":${i},"method":"tools/call","params":{"name":"echo","arguments":{"n":${i},"p":"${payload}"}}}\n`);
    input.end();
    for (let turn = 0; turn < 100; turn++) await new Promise((resolve) => setImmediate(resolve));
    // Nobody reads the output: only the requests whose answers fill the pipe ran.
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.length).toBeLessThanOrEqual(MAX_REQUESTS_IN_FLIGHT);
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    await ended;
    expect(calls).toHaveLength(total);
    expect(text.split('\n').filter(Boolean)).toHaveLength(total);
  });

  it('keeps at most 1024 waiting argument sets, dropping the oldest, so unclaimed ones cannot pile up', () => {
    const lossless = new LosslessArguments();
    const splits = Array.from({ length: 1100 }, (_, i) => splitToolArguments({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: { i: BigInt(i) } } }));
    for (const split of splits) lossless.put(split.token ?? '', split.args ?? {});
    expect(lossless.size).toBe(1024);
    expect(lossless.take(sdkArguments(splits[0]?.sdkMessage))).toEqual({ kind: 'dropped' });
    expect(lossless.take(sdkArguments(splits[1099]?.sdkMessage))).toEqual({ kind: 'found', args: { i: 1099n } });
    // Arguments that carry no token of ours are the call's own.
    expect(lossless.take({ lossless_arguments_token: 'guess:1' })).toEqual({ kind: 'plain' });
    expect(lossless.take(undefined)).toEqual({ kind: 'plain' });
  });
});
