// End to end: `aipcs serve` (stateless default) as a child process, driven by
// the MCP SDK's stdio client over real pipes.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { spawnSync } from 'node:child_process';
import { aipcsBin } from '../../support/bins.js';
import { PACKAGE_VERSION } from '../../../src/aipcs/version.js';

describe('aipcs serve (stateless profile) over stdio', () => {
  let client: Client;

  beforeAll(async () => {
    client = new Client({ name: 'test-client', version: '1.0.0' });
    const env: Record<string, string> = { PATH: process.env['PATH'] ?? '' };
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [aipcsBin(), 'serve'], env, stderr: 'pipe' }));
  });

  afterAll(async () => {
    await client.close();
  });

  it('identifies itself and offers only the tools capability', () => {
    expect(client.getServerVersion()).toEqual({ name: 'aipcs', version: PACKAGE_VERSION });
    expect(client.getServerCapabilities()).toEqual({ experimental: {}, tools: { listChanged: false } });
    expect(client.getInstructions()).toBeUndefined();
  });

  it('lists exactly aipcs_server_info', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['aipcs_server_info']);
    expect(tools[0]?.inputSchema).toEqual({ type: 'object', properties: {}, required: [], additionalProperties: false });
  });

  it('reports the stateless capability contract', async () => {
    const result = await client.callTool({ name: 'aipcs_server_info', arguments: {} }, CallToolResultSchema);
    expect(result.isError).toBe(false);
    const content = result.content as { type: string; text: string }[];
    expect(content).toHaveLength(1);
    const envelope = JSON.parse(content[0]!.text) as { ok: boolean; result: Record<string, unknown>; error: null };
    expect(envelope).toEqual(result.structuredContent);
    expect(content[0]!.text.startsWith('{"ok":true,"result":{"server_name":"aipcs",')).toBe(true);
    expect(envelope.result).toEqual({
      server_name: 'aipcs',
      package_version: PACKAGE_VERSION,
      aipcs_mcp_contract: '1.2.0',
      supported_manifest_versions: [2],
      transports: ['stdio', 'streamable-http'],
      features: {
        server_info: true,
        manifest_v2_validation: true,
        legacy_v1_importer: true,
        stdio_preflight: true,
        registry_lifecycle: false,
        materialisation_lifecycle: false,
        record_runtime: false,
        discovery_topology: false,
      },
      operational_statuses: ['active'],
    });
    expect(content[0]!.text).toContain('"supported_manifest_versions":[2]');
  });

  it('rejects an unknown argument inside the envelope', async () => {
    const result = await client.callTool({ name: 'aipcs_server_info', arguments: { verbose: true } }, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({
      ok: false,
      result: null,
      error: { code: 'validation_failed', message: 'Request failed public contract validation.', issues: [], retryable: false },
    });
  });

  it('answers an unknown tool with unsupported_operation', async () => {
    const result = await client.callTool({ name: 'aipcs_record_create', arguments: {} }, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { error: { code: string } }).error.code).toBe('unsupported_operation');
  });

  it('rejects non-object arguments at the protocol layer without echoing them', async () => {
    const secret = 'do-not-echo-this-value';
    const failure = await client
      .request({ method: 'tools/call', params: { name: 'aipcs_server_info', arguments: secret as unknown as Record<string, unknown> } }, CallToolResultSchema)
      .then(() => undefined, (error: unknown) => error as { code: number; message: string });
    expect(failure?.code).toBe(-32602);
    expect(failure?.message).not.toContain(secret);
    // The session is still usable afterwards.
    const after = await client.callTool({ name: 'aipcs_server_info', arguments: {} }, CallToolResultSchema);
    expect(after.isError).toBe(false);
  });

  it('treats null arguments as an empty object', async () => {
    const result = await client.request({ method: 'tools/call', params: { name: 'aipcs_server_info', arguments: null as unknown as Record<string, unknown> } }, CallToolResultSchema);
    expect(result.isError).toBe(false);
  });

  it('answers ping', async () => {
    await expect(client.ping()).resolves.toBeDefined();
  });
});

/** Pipes `lines` into `aipcs serve` in one write, as `printf ... | aipcs serve` does; returns the answers in output order once it exits 0. */
function pipeToServe(lines: readonly object[]): { id: number; result?: unknown; error?: { code: number } }[] {
  const run = spawnSync(process.execPath, [aipcsBin(), 'serve'], {
    input: lines.map((line) => JSON.stringify(line)).join('\n') + '\n',
    env: { PATH: process.env['PATH'] ?? '' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(0);
  return run.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { id: number; error?: { code: number } });
}

const pipedInitialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } } };

describe('aipcs serve over stdio with pipelined input', () => {
  it('answers initialize first when a client writes every line at once', () => {
    // A scripted client (printf ... | aipcs serve) sends initialize, the
    // initialized notification and its requests in one write; the Python SDK
    // answers initialize inline before reading on, so it must come out first
    // and the other answers follow in request order.
    const answers = pipeToServe([
      pipedInitialize,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'ping' },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'aipcs_server_info', arguments: {} } },
    ]);
    expect(answers.map((answer) => answer.id)).toEqual([1, 2, 3, 4]);
  });

  it('answers initialize before the protocol errors of requests piped after it, and ignores undefined members', () => {
    const answers = pipeToServe([
      pipedInitialize,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: 'x' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'aipcs_server_info', arguments: [1] } },
      // A member JSON-RPC does not define is ignored, as by the Python SDK.
      { jsonrpc: '2.0', id: 4, method: 'ping', trace: 'x' },
    ]);
    expect(answers[0]).toMatchObject({ id: 1, result: { serverInfo: { name: 'aipcs' } } });
    // Later answers may come in any order (requests run concurrently).
    expect(answers.map((answer) => [answer.id, answer.error?.code]).sort()).toEqual([
      [1, undefined],
      [2, -32600],
      [3, -32602],
      [4, undefined],
    ]);
  });
});
