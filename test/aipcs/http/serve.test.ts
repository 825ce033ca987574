// End to end over a real loopback socket: `aipcs serve --transport
// streamable-http --profile sqlite` driven by the SDK's Streamable HTTP client
// through the normal flow, with the same catalogue, envelopes and lossless
// arguments as stdio; two concurrent sessions; session deletion; SIGTERM.

import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, type JsonObject } from '../../../src/common/json.js';
import { PACKAGE_VERSION } from '../../../src/aipcs/version.js';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';
import { connectHttp, MCP_HEADERS, rawRequest, rawSession, sseMessages, startHttpAipcs, type HttpAipcs, type HttpClient } from './support.js';

const TOOLS = [
  'aipcs_server_info', 'aipcs_service_seed', 'aipcs_service_list', 'aipcs_service_inspect', 'aipcs_service_design', 'aipcs_service_materialise',
  'aipcs_service_evolve', 'aipcs_record_create', 'aipcs_record_get', 'aipcs_record_list', 'aipcs_record_search', 'aipcs_record_update',
  'aipcs_record_delete', 'aipcs_record_history', 'aipcs_bootstrap', 'aipcs_service_summary', 'aipcs_branch_create', 'aipcs_branch_list',
  'aipcs_branch_update', 'aipcs_branch_assign_records', 'aipcs_maintenance_scan',
];

interface ToolMessage {
  id: number;
  result?: { content: { text: string }[]; isError: boolean };
  error?: { code: number; message: string };
}

function sessionHeaders(id: string): Record<string, string> {
  return { ...MCP_HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
}

describe('aipcs serve --transport streamable-http --profile sqlite', () => {
  const dataRoot = freshDataRoot();
  let aipcs: HttpAipcs;
  let client: HttpClient;

  beforeAll(async () => {
    aipcs = await startHttpAipcs(sqliteArgs(dataRoot));
    client = await connectHttp(aipcs.url);
  });

  afterAll(async () => {
    await client.close();
    if (aipcs.child.exitCode === null) await aipcs.stop();
  });

  it('initializes a stateful session: name, version, tools capability only, no instructions', () => {
    expect(client.transport.sessionId).toMatch(/^[0-9a-f]{32}$/);
    expect(client.client.getServerVersion()).toEqual({ name: 'aipcs', version: PACKAGE_VERSION });
    expect(client.client.getServerCapabilities()).toEqual({ experimental: {}, tools: { listChanged: false } });
    expect(client.client.getInstructions()).toBeUndefined();
  });

  it('lists exactly the 21 contract tools in order, as over stdio', async () => {
    const { tools } = await client.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(TOOLS);
    for (const tool of tools) expect(Object.keys(tool).sort()).toEqual(['description', 'inputSchema', 'name', 'outputSchema']);
  });

  it('writes the 2^63-1 revision bounds of tools/list as exact integers, as over stdio', async () => {
    const session = await rawSession(aipcs.port);
    const listed = await rawRequest(aipcs.port, { headers: sessionHeaders(session), body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) });
    expect(listed.body).toContain('"expected_service_revision":{"type":"integer","minimum":1,"maximum":9223372036854775807}');
    expect(listed.body).not.toContain('9223372036854776000');
    expect((sseMessages(listed.body)[0] as { result: { tools: unknown[] } }).result.tools).toHaveLength(21);
  });

  it('runs seed → design → materialise → create → search', async () => {
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Project notes.', idempotency_key: 'seed-1' });
    expect(seeded.ok).toBe(true);
    const serviceId = seeded.result?.['service_id'] as string;
    const designed = await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-1' });
    expect(designed.result).toMatchObject({ service_revision: 2, schema_version: 1, design_state: 'seeded' });
    const materialised = await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'mat-1' });
    expect(materialised.result).toMatchObject({ service_revision: 3, design_state: 'materialised' });
    const created = await client.call('aipcs_record_create', {
      service_id: serviceId,
      entity_name: 'note',
      record: { title: 'Release decision', status: 'complete', tags: ['release'], confidence: 1 },
      idempotency_key: 'create-1',
    });
    expect(created.ok).toBe(true);
    const record = created.result?.['record'] as Record<string, unknown>;
    const got = await client.client.callTool({ name: 'aipcs_record_get', arguments: { service_id: serviceId, entity_name: 'note', record_id: record['id'] } });
    expect((got.content as { text: string }[])[0]?.text).toContain('"confidence":1.0');
    const found = await client.call('aipcs_record_search', { service_id: serviceId, entity_name: 'note', filters: { tags: 'release' } });
    expect((found.result?.['records'] as { id: string }[]).map((hit) => hit.id)).toEqual([record['id']]);
    const replay = await client.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Project notes.', idempotency_key: 'seed-1' });
    expect(replay.result?.['service_id']).toBe(serviceId);
  });

  it('writes structuredContent with the numbers of the text item: 2^63-1 exact, the float 1.0 as 1.0', async () => {
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'exact', domain_class: 'knowledge', intent_description: 'Exact numbers.', idempotency_key: 'seed-exact' });
    const serviceId = seeded.result?.['service_id'] as string;
    await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'design-exact' });
    await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'mat-exact' });
    const session = await rawSession(aipcs.port);
    const created = await rawRequest(aipcs.port, {
      headers: sessionHeaders(session),
      body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"aipcs_record_create","arguments":{"service_id":"${serviceId}","entity_name":"note","record":{"title":"t","priority":9223372036854775807,"confidence":1.0},"idempotency_key":"k"}}}`,
    });
    const data = created.body.split('\n').find((line) => line.startsWith('data: {')) ?? '';
    expect(data).toContain('"priority":9223372036854775807');
    expect(data).toContain('"confidence":1.0');
    const message = parseJson(data.slice(6)) as { result: { content: { text: string }[]; structuredContent: JsonObject } };
    expect(message.result.structuredContent).toStrictEqual(parseJson(message.result.content[0]?.text ?? ''));
  });

  it('keeps arguments lossless: limit 2.0 is not the integer 2', async () => {
    const session = await rawSession(aipcs.port);
    const call = (id: number, limit: string) =>
      rawRequest(aipcs.port, { headers: sessionHeaders(session), body: `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"aipcs_service_list","arguments":{"limit":${limit}}}}` });
    const [asFloat] = sseMessages((await call(1, '2.0')).body) as ToolMessage[];
    expect(JSON.parse(asFloat?.result?.content[0]?.text ?? '{}')).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [{ code: 'invalid_value', path: 'limit' }] } });
    const [asInteger] = sseMessages((await call(2, '2')).body) as ToolMessage[];
    expect(JSON.parse(asInteger?.result?.content[0]?.text ?? '{}')).toMatchObject({ ok: true });
  });

  it('answers non-object arguments with -32602 and no echo, and unknown methods with -32601', async () => {
    const session = await rawSession(aipcs.port);
    const bad = await rawRequest(aipcs.port, {
      headers: sessionHeaders(session),
      body: '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"aipcs_service_list","arguments":"leaked-value"}}',
    });
    expect(sseMessages(bad.body)).toEqual([{ jsonrpc: '2.0', id: 5, error: { code: -32602, message: 'Invalid request parameters', data: '' } }]);
    expect(bad.body).not.toContain('leaked-value');
    const unknown = await rawRequest(aipcs.port, { headers: sessionHeaders(session), body: '{"jsonrpc":"2.0","id":6,"method":"resources/list"}' });
    expect((sseMessages(unknown.body)[0] as ToolMessage).error?.code).toBe(-32601);
    const unknownTool = await client.call('aipcs_no_such_tool');
    expect(unknownTool.error?.code).toBe('unsupported_operation');
  });

  it('serves two concurrent sessions with the same principal; deleting one leaves the other', async () => {
    const [first, second] = await Promise.all([connectHttp(aipcs.url), connectHttp(aipcs.url)]);
    expect(first.transport.sessionId).not.toBe(second.transport.sessionId);
    const seeds = await Promise.all(
      [first, second].flatMap((session, n) =>
        [0, 1, 2].map((i) => session.call('aipcs_service_seed', { domain_name: `concurrent_${n}_${i}`, domain_class: 'k', intent_description: 'Concurrent.', idempotency_key: `c-${n}-${i}` })),
      ),
    );
    expect(seeds.every((envelope) => envelope.ok)).toBe(true);
    const seenByFirst = await first.call('aipcs_service_list', { limit: 100 });
    const seenBySecond = await second.call('aipcs_service_list', { limit: 100 });
    expect(seenByFirst.result).toEqual(seenBySecond.result);
    const names = (seenByFirst.result?.['services'] as { domain_name: string }[]).map((service) => service.domain_name);
    for (const n of [0, 1]) for (const i of [0, 1, 2]) expect(names).toContain(`concurrent_${n}_${i}`);

    const deletedId = first.transport.sessionId ?? '';
    await first.transport.terminateSession();
    const after = await rawRequest(aipcs.port, { headers: sessionHeaders(deletedId), body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(after.status).toBe(404);
    expect((await second.call('aipcs_server_info')).ok).toBe(true);
    await first.close();
    await second.close();
  });

  it('refuses an MCP-Protocol-Version that initialize would not negotiate (2024-10-07) with 400', async () => {
    const session = await rawSession(aipcs.port);
    const ping = (version: string) =>
      rawRequest(aipcs.port, { headers: { ...sessionHeaders(session), 'mcp-protocol-version': version }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect((await ping('2024-11-05')).status).toBe(200);
    const refused = await ping('2024-10-07');
    expect(refused.status).toBe(400);
    expect(refused.body).toContain('(supported versions: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)');
  });

  it('keeps an idle connection open past 5 s, so a client busy for seconds does not send into a closed socket', async () => {
    // The SDK client's fetch reuses its connection and does not retry a POST that meets a closed one.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const headers = sessionHeaders(await rawSession(aipcs.port));
    const ping = () =>
      new Promise<{ status: number | undefined; reusedSocket: boolean }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: aipcs.port, method: 'POST', path: '/mcp', headers, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode, reusedSocket: req.reusedSocket }));
        });
        req.on('error', reject);
        req.end('{"jsonrpc":"2.0","id":1,"method":"ping"}');
      });
    try {
      expect(await ping()).toEqual({ status: 200, reusedSocket: false });
      await new Promise((resolve) => setTimeout(resolve, 6_000)); // Node's default would close the socket after 5 s
      expect(await ping()).toEqual({ status: 200, reusedSocket: true });
    } finally {
      agent.destroy();
    }
  });

  it('answers a plain GET (liveness probe) with 406', async () => {
    const probe = await rawRequest(aipcs.port, { method: 'GET' });
    expect(probe.status).toBe(406);
  });

  it('exits 0 on SIGTERM with a session open; nothing on stdout; the data survives', async () => {
    const live = await connectHttp(aipcs.url);
    expect(await aipcs.stop('SIGTERM')).toBe(0);
    await live.close().catch(() => undefined);
    expect(aipcs.stdout()).toBe('');
    expect(aipcs.stderr()).not.toContain('local-agent');
    expect(aipcs.stderr()).not.toContain(dataRoot);

    const again = await startHttpAipcs(sqliteArgs(dataRoot));
    const reader = await connectHttp(again.url);
    const listed = await reader.call('aipcs_service_list', { limit: 100 });
    expect((listed.result?.['services'] as { domain_name: string }[]).map((service) => service.domain_name)).toContain('notes');
    await reader.close();
    expect(await again.stop('SIGINT')).toBe(0);
  });
});
