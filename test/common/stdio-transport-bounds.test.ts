// Edges of the lossless stdio transport the main suite leaves open: the
// nesting bound at its exact value, the end of input's answer wait running
// out, ids told apart by type, and which read and write failures are kept
// for the command to report.

import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LosslessArguments } from '../../src/common/mcp/lossless-arguments.js';
import { LosslessStdioTransport, MAX_REQUEST_DEPTH, MAX_REQUESTS_IN_FLIGHT } from '../../src/common/mcp/stdio-transport.js';
import { serveStdio, type ToolServerOptions } from '../../src/common/mcp/tool-server.js';
import { createLogger } from '../../src/common/logger.js';
import { echoServerOptions, gatedEchoSession } from './echo-session.js';

function harness(answerWaitMs?: number, maxLineBytes = 1 << 20) {
  const input = new PassThrough();
  const output = new PassThrough();
  const transport = new LosslessStdioTransport({
    input,
    output,
    lossless: new LosslessArguments(),
    logger: createLogger('test', 'silent'),
    maxLineBytes,
    ...(answerWaitMs === undefined ? {} : { answerWaitMs }),
  });
  const received: unknown[] = [];
  transport.onmessage = (message) => received.push(message);
  const written: string[] = [];
  output.on('data', (chunk: Buffer) => written.push(...chunk.toString().split('\n').filter(Boolean)));
  const state = { closed: false };
  transport.onclose = () => (state.closed = true);
  return { input, transport, received, written, state };
}

async function turns(count: number): Promise<void> {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
}

describe('LosslessStdioTransport bounds', () => {
  it('serves a request nested exactly MAX_REQUEST_DEPTH deep and answers one a level deeper with -32600', async () => {
    const { input, transport, received, written } = harness();
    await transport.start();
    // The message, params and arguments objects are three levels; the arrays make up the rest.
    const call = (id: number, arrays: number): string =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"t","arguments":{"a":${'['.repeat(arrays)}${']'.repeat(arrays)}}}}\n`;
    input.write(call(1, MAX_REQUEST_DEPTH - 3));
    input.write(call(2, MAX_REQUEST_DEPTH - 2));
    await turns(5);
    expect(received).toMatchObject([{ id: 1, method: 'tools/call' }]);
    expect(written.map((line) => JSON.parse(line) as unknown)).toEqual([{ jsonrpc: '2.0', id: 2, error: { code: -32600, message: 'Invalid Request' } }]);
  });

  it('gives up on an answer never written once the answer wait it was given runs out, and says so', async () => {
    const { input, transport, state } = harness(200);
    await transport.start();
    input.end('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    await turns(5);
    expect(state.closed).toBe(false);
    // Far below the default wait: the wait given is the one kept.
    await expect.poll(() => state.closed, { timeout: 10_000 }).toBe(true);
    expect(transport.abandonedAnswers).toBe(true);
  });

  it('tells the id 1 from the id "1": a cancellation of the other one cancels nothing', async () => {
    const { input, transport, received, written, state } = harness();
    await transport.start();
    input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    input.end('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1"}}\n');
    await turns(20);
    // Not handed on (the SDK would apply it to a later "1"), and the answer to 1 is still owed.
    expect(received).toEqual([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect(state.closed).toBe(false);
    await transport.send({ jsonrpc: '2.0', id: 1, result: {} });
    await expect.poll(() => state.closed).toBe(true);
    expect(written).toEqual(['{"jsonrpc":"2.0","id":1,"result":{}}']);
    expect(transport.abandonedAnswers).toBe(false);
  });

  it('keeps a failed read or write for the command to report, but not a client that closed its pipe (EPIPE)', async () => {
    const serve = async (fail: (input: PassThrough, output: PassThrough) => void) => {
      const input = new PassThrough();
      const output = new PassThrough();
      output.resume();
      const ended = serveStdio(echoServerOptions([], createLogger('test', 'silent')), { input, output });
      await turns(2);
      fail(input, output);
      const end = await ended;
      return { inputError: end.inputError, outputError: end.outputError };
    };
    const failure = (code: string): Error => Object.assign(new Error(code), { code });
    expect(await serve((input) => input.destroy(failure('EPIPE')))).toEqual({ inputError: undefined, outputError: undefined });
    expect(await serve((input) => input.destroy(failure('EIO')))).toEqual({ inputError: 'EIO', outputError: undefined });
    expect(await serve((_, output) => output.destroy(failure('EPIPE')))).toEqual({ inputError: undefined, outputError: undefined });
    expect(await serve((_, output) => output.destroy(failure('EIO')))).toEqual({ inputError: undefined, outputError: 'EIO' });
  });

  it('answers tools/call arguments that are no object as its server asks: -32602 with its data member, or read as absent', async () => {
    const answerTo = async (options: Partial<ToolServerOptions>): Promise<unknown> => {
      const input = new PassThrough();
      const output = new PassThrough();
      let text = '';
      output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      const ended = serveStdio({ ...echoServerOptions([], createLogger('test', 'silent')), ...options }, { input, output });
      input.end('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":5}}\n');
      await ended;
      return JSON.parse(text) as unknown;
    };
    const refused = { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Invalid request parameters' } };
    expect(await answerTo({})).toEqual(refused);
    // AIPCS gives its -32602 answers an empty data member, as the Python SDK does.
    expect(await answerTo({ invalidParamsData: '' })).toEqual({ ...refused, error: { ...refused.error, data: '' } });
    // aigpt runs such a call without arguments (its spec, 5.4).
    expect(await answerTo({ nonObjectArguments: 'absent' })).toEqual({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: '{}' }] } });
  });

  it('takes no cancellation from a message that is not JSON-RPC 2.0: the call it names is still answered before the session ends', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    let started = 0;
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const options = echoServerOptions([], createLogger('test', 'silent'));
    const ended = serveStdio(
      {
        ...options,
        callTool: async (name, args) => {
          started++;
          await gate;
          return options.callTool(name, args);
        },
      },
      { input, output },
    );
    input.write('{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}\n');
    // The SDK ignores this one (no JSON-RPC 2.0 notification), so it answers "a" all the same.
    input.end('{"jsonrpc":"1.0","method":"notifications/cancelled","params":{"requestId":"a"}}\n');
    await expect.poll(() => started).toBe(1);
    await turns(20);
    release();
    await ended;
    expect(text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as unknown)).toEqual([
      { jsonrpc: '2.0', id: 'a', result: { content: [{ type: 'text', text: '{"n":1}' }] } },
    ]);
  });

  it('still owes the answer to a call whose cancellation names the id 0 (the SDK does not act on it), also when it is the only one', async () => {
    const session = gatedEchoSession();
    session.input.write('{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"n":0}}}\n');
    session.input.end('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}\n');
    await expect.poll(() => session.started).toBe(1);
    await turns(20);
    expect(session.closed).toBe(false);
    session.release();
    await session.ended;
    expect(session.answers()).toEqual([{ jsonrpc: '2.0', id: 0, result: { content: [{ type: 'text', text: '{"n":0}' }] } }]);
  });

  it('counts a cancelled request that is no tool call against the bound only while it is owed', async () => {
    // Only a tool call's handler reports its end: cancelled pings kept in the
    // count would leave room for one call at a time.
    const session = gatedEchoSession();
    let lines = '';
    for (let id = 1; id <= MAX_REQUESTS_IN_FLIGHT * 2; id++) {
      lines += `{"jsonrpc":"2.0","id":${id},"method":"ping"}\n{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id}}}\n`;
    }
    for (let id = 1; id <= MAX_REQUESTS_IN_FLIGHT; id++) {
      lines += `{"jsonrpc":"2.0","id":"c${id}","method":"tools/call","params":{"name":"echo","arguments":{"n":${id}}}}\n`;
    }
    session.input.end(lines);
    await expect.poll(() => session.started, { timeout: 20_000 }).toBe(MAX_REQUESTS_IN_FLIGHT);
    session.release();
    await session.ended;
    expect(session.answers().filter((answer) => String((answer as { id: unknown }).id).startsWith('c'))).toHaveLength(MAX_REQUESTS_IN_FLIGHT);
  });

  it('ends at once when the last answer is written, its answer wait leaving nothing behind', async () => {
    const { input, transport, state } = harness(300);
    transport.onmessage = (message) => {
      const id = (message as { id?: number }).id;
      // The second answer comes after the first has already restarted the wait.
      if (id !== undefined) setTimeout(() => void transport.send({ jsonrpc: '2.0', id, result: {} }), id * 50);
    };
    await transport.start();
    input.end('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n');
    await expect.poll(() => state.closed).toBe(true);
    expect(transport.abandonedAnswers).toBe(false);
    // Well past the wait: no wait left running turns the ended session into an abandoned one.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(transport.abandonedAnswers).toBe(false);
  });

  it("counts the transport's own error answers against the bound: a flood of invalid requests is read no faster than they are answered", async () => {
    const { input, transport, received, written } = harness();
    // Counted as each answer is taken by the output, before the transport counts it answered.
    let sent = 0;
    const send = transport.send.bind(transport);
    transport.send = async (message) => {
      await send(message);
      sent++;
    };
    let answeredBeforePing = -1;
    transport.onmessage = (message) => {
      received.push(message);
      answeredBeforePing = sent;
    };
    await transport.start();
    const invalid = 3 * MAX_REQUESTS_IN_FLIGHT;
    let lines = '';
    for (let id = 1; id <= invalid; id++) lines += `{"jsonrpc":"2.0","id":${id},"method":5}\n`;
    input.write(`${lines}{"jsonrpc":"2.0","id":"ping","method":"ping"}\n`);
    await expect.poll(() => received.length).toBe(1);
    // Read in one chunk, the ping still waits until all but a bound's worth of the answers before it are out.
    expect(answeredBeforePing).toBeGreaterThanOrEqual(invalid - MAX_REQUESTS_IN_FLIGHT);
    await expect.poll(() => written.length).toBe(invalid);
  });

  it('answers an oversized last line without a newline from its id at its end, once the input ends', async () => {
    const { input, transport, received, written, state } = harness(undefined, 64);
    await transport.start();
    // Its start overflows the bound before the id comes: only the line's end can name it.
    input.write(`{"method":"tools/call","params":{"x":"${'a'.repeat(300)}`);
    input.write('"},"jsonrpc":"2.0","id":"end"}');
    await turns(5);
    expect(written).toEqual([]);
    input.end();
    await expect.poll(() => state.closed).toBe(true);
    expect(written.map((line) => JSON.parse(line) as unknown)).toEqual([
      { jsonrpc: '2.0', id: 'end', error: { code: -32600, message: 'Invalid Request: the input line is longer than 64 bytes' } },
    ]);
    expect(received).toEqual([]);
  });

  it("writes its own error answer after the server's answer to an earlier line read in the same chunk", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const ended = serveStdio(echoServerOptions([], createLogger('test', 'silent')), { input, output });
    input.end('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":5}\n');
    await ended;
    expect(text.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { id: unknown }).id)).toEqual([1, 2]);
  });
});
