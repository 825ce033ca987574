// Optional members of a request's params set to null (`"_meta": null`,
// `"cursor": null`, `"clientInfo": {"title": null}`, `"progressToken": null`)
// are absent, as the Python SDK the reference is built on reads them (its
// params models declare them `X | None`). The TypeScript SDK's schemas refused
// the whole message, so these requests were answered -32600 Invalid Request
// (or -32602) where the reference answers them normally. A required member
// set to null stays refused with -32602, as there. A task-augmented
// request (`"task": {"ttl": 60000}`) of any method is served normally, its
// metadata ignored, as MCP 2025-11-25 requires of a server that declares no
// tasks capability.
// docs/decisions-aipcs-contract.md, "Protocol methods and request shapes".

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';
import { rawLineSession, type RawLineSession } from '../../support/raw-stdio.js';
import { MCP_HEADERS, rawRequest, rawSession, sseMessages, startHttpAipcs, type HttpAipcs } from '../http/support.js';

const requests: [string, string][] = [
  ['ping', '{"_meta":null}'],
  ['tools/list', '{"cursor":null,"_meta":null}'],
  ['tools/call', '{"name":"aipcs_server_info","arguments":{},"_meta":null}'],
  ['tools/call', '{"name":"aipcs_server_info","arguments":{},"_meta":{"progressToken":null}}'],
  ['initialize', '{"protocolVersion":"2025-06-18","capabilities":{"roots":null,"sampling":null},"clientInfo":{"name":"x","version":"1","title":null},"_meta":null}'],
  // A task-augmented call to a server without the tasks capability runs
  // normally (MCP 2025-11-25 tasks); the TypeScript SDK answered -32603.
  ['tools/call', '{"name":"aipcs_server_info","arguments":{},"task":{"ttl":60000}}'],
  // Other methods too: the SDK answered them -32603 "Server does not support
  // task creation (required for <method>)".
  ['ping', '{"task":{"ttl":60000}}'],
  ['tools/list', '{"task":{}}'],
  ['initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"},"task":{"ttl":1}}'],
];

/** An unregistered method with task metadata: -32601, and the answer does not repeat the method name. */
const taskAugmentedUnknownMethod = '{"jsonrpc":"2.0","id":60,"method":"notes/secret-prose","params":{"task":{"ttl":60000}}}';

function expectMethodNotFound(answer: Answer & { error?: { message?: string } }): void {
  expect(answer.error).toEqual({ code: -32601, message: 'Method not found' });
  expect(JSON.stringify(answer)).not.toContain('secret-prose');
}

interface Answer {
  id: number;
  result?: Record<string, unknown>;
  error?: { code: number };
}

function expectAnswered(method: string, answer: Answer): void {
  expect(answer.error, `${method}: ${JSON.stringify(answer)}`).toBeUndefined();
  if (method === 'ping') expect(answer.result).toEqual({});
  if (method === 'tools/list') expect((answer.result?.['tools'] as unknown[]).length).toBeGreaterThan(0);
  if (method === 'tools/call') expect(answer.result?.['isError']).toBe(false);
  if (method === 'initialize') expect(answer.result?.['protocolVersion']).toBe('2025-06-18');
}

describe('null optional params over stdio', () => {
  let session: RawLineSession;
  beforeAll(async () => {
    session = rawLineSession(['serve', ...sqliteArgs(freshDataRoot())]);
    await session.initialize();
  });
  afterAll(() => session.close());

  it('answers requests whose optional params members are null as if they were absent', async () => {
    for (const [index, [method, params]] of requests.entries()) {
      const line = await session.send(`{"jsonrpc":"2.0","id":${index + 1},"method":"${method}","params":${params}}`, index + 1);
      expectAnswered(method, JSON.parse(line) as Answer);
    }
  });

  it('still refuses a required member set to null with -32602', async () => {
    const line = await session.send('{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":null,"arguments":{}}}', 50);
    expect((JSON.parse(line) as Answer).error?.code).toBe(-32602);
    const init = await session.send('{"jsonrpc":"2.0","id":51,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":null}}', 51);
    expect((JSON.parse(init) as Answer).error?.code).toBe(-32602);
  });

  it('answers an unregistered method with task metadata -32601 without repeating its name', async () => {
    expectMethodNotFound(JSON.parse(await session.send(taskAugmentedUnknownMethod, 60)) as Answer);
  });
});

describe('null optional params over Streamable HTTP', () => {
  let aipcs: HttpAipcs;
  let sessionId: string;
  beforeAll(async () => {
    aipcs = await startHttpAipcs(sqliteArgs(freshDataRoot()));
    sessionId = await rawSession(aipcs.port);
  });
  afterAll(async () => {
    await aipcs.stop();
  });

  it('answers requests whose optional params members are null as if they were absent', async () => {
    for (const [index, [method, params]] of requests.entries()) {
      const response = await rawRequest(aipcs.port, {
        headers: { ...MCP_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
        body: `{"jsonrpc":"2.0","id":${index + 1},"method":"${method}","params":${params}}`,
      });
      expect(response.status, `${method}: ${response.body}`).toBe(200);
      expectAnswered(method, sseMessages(response.body)[0] as Answer);
    }
  });

  it('answers an unregistered method with task metadata -32601 without repeating its name', async () => {
    const response = await rawRequest(aipcs.port, {
      headers: { ...MCP_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
      body: taskAugmentedUnknownMethod,
    });
    expect(response.status).toBe(200);
    expectMethodNotFound(sseMessages(response.body)[0] as Answer);
  });
});
