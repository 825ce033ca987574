// What an MCP client of the Python reference observes at the
// protocol layer, checked with the real SDK client over stdio (and the HTTP
// listener for the same answer). The reference's SDK answers every request it
// cannot read as its method's params with -32602 "Invalid request
// parameters" and `"data": ""`; a client can see that member.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpError, EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { freshDataRoot, sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { aipcsBin } from '../../support/bins.js';
import { spawn } from 'node:child_process';

async function protocolError(run: () => Promise<unknown>): Promise<McpError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof McpError) return error;
    throw error;
  }
  throw new Error('the request was answered with a result');
}

describe('aipcs serve over stdio: protocol-layer refusals as the reference answers them', () => {
  let aipcs: AipcsClient;

  beforeAll(async () => {
    aipcs = await startAipcs(sqliteArgs(freshDataRoot()));
  });

  afterAll(async () => {
    await aipcs.close();
  });

  it('answers non-object tool arguments with -32602 carrying data "", echoing nothing', async () => {
    for (const args of ['leaked-text', [1, 2], 42]) {
      const error = await protocolError(() =>
        aipcs.client.request({ method: 'tools/call', params: { name: 'aipcs_service_list', arguments: args as never } }, EmptyResultSchema),
      );
      expect(error.code).toBe(-32602);
      expect(error.data).toBe('');
      expect(error.message).not.toContain('leaked');
    }
  });

  it('answers a tools/call without a usable name with -32602 carrying data ""', async () => {
    for (const params of [{ arguments: {} }, { name: 5, arguments: {} }]) {
      const error = await protocolError(() => aipcs.client.request({ method: 'tools/call', params: params as never }, EmptyResultSchema));
      expect(error.code).toBe(-32602);
      expect(error.data).toBe('');
    }
  });

  it('keeps the session usable and method-not-found without data', async () => {
    const missing = await protocolError(() => aipcs.client.request({ method: 'resources/list', params: {} }, EmptyResultSchema));
    expect(missing.code).toBe(-32601);
    expect(missing.data).toBeUndefined();
    const listed = await aipcs.call('aipcs_service_list', {});
    expect(listed).toEqual({ ok: true, result: { services: [] }, error: null });
  });

  it('answers an initialize whose params do not read as one with -32602 and data "" on the wire', async () => {
    const child = spawn(process.execPath, [aipcsBin(), 'serve'], { stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const done = new Promise<void>((resolve) => child.on('close', () => resolve()));
    child.stdin.write('{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":5}}\n');
    child.stdin.end();
    await done;
    expect(out.split('\n').filter(Boolean).map((line) => JSON.parse(line) as unknown)).toEqual([
      { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid request parameters', data: '' } },
    ]);
  });

  it('offers its latest revision to an integer protocolVersion (the Python SDK reads str | int); other numbers are refused', async () => {
    const child = spawn(process.execPath, [aipcsBin(), 'serve'], { stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const done = new Promise<void>((resolve) => child.on('close', () => resolve()));
    const rest = '"capabilities":{},"clientInfo":{"name":"c","version":"1"}';
    child.stdin.write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,${rest}}}\n`);
    child.stdin.write(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":5.5,${rest}}}\n`);
    child.stdin.end();
    await done;
    const [first, second] = out.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { id: number; result?: { protocolVersion: unknown }; error?: unknown });
    expect(first?.id).toBe(1);
    expect(first?.result?.protocolVersion).toBe('2025-11-25');
    expect(second).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Invalid request parameters', data: '' } });
  });
});
