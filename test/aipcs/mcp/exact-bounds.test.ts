// The contract's input schemas bound revisions by 2^63-1 (Appendix A). Over
// stdio the bound reaches the client as that exact integer, not as the
// nearest double a JavaScript JSON.stringify would write. Numbers beyond what
// the server can hold are answered with the contract's envelope, never dropped.

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { parseJson, type JsonObject } from '../../../src/common/json.js';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';
import { rawLineSession } from '../../support/raw-stdio.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

/** Sends raw JSON-RPC lines and returns the raw text of the response with `id`. */
function rawExchange(args: string[], lines: (object | string)[], id: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [aipcsBin(), ...args], { stdio: ['pipe', 'pipe', 'ignore'], env: { PATH: process.env['PATH'] ?? '' } });
    let out = '';
    child.on('error', reject);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = out.split('\n').find((candidate) => {
        try {
          return (JSON.parse(candidate) as { id?: unknown }).id === id;
        } catch {
          return false; // an incomplete line
        }
      });
      if (line !== undefined) {
        child.kill();
        resolve(line);
      }
    });
    child.on('exit', () => reject(new Error(`no response ${id}: ${out}`)));
    for (const line of lines) child.stdin.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
  });
}

describe('exact integer bounds in tools/list', () => {
  it('writes the 2^63-1 revision bounds as exact integers over stdio', async () => {
    const line = await rawExchange(
      ['serve', ...sqliteArgs(freshDataRoot())],
      [
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      ],
      2,
    );
    expect(line).toContain('"expected_service_revision":{"type":"integer","minimum":1,"maximum":9223372036854775807}');
    expect(line).not.toContain('9223372036854776000');
    expect(JSON.parse(line).result.tools).toHaveLength(21);
  });
});

describe('exact numbers in tool results', () => {
  it('writes structuredContent with the numbers of the text item: 2^63-1 exact, the float 1.0 as 1.0', async () => {
    const session = rawLineSession(['serve', ...sqliteArgs(freshDataRoot())]);
    try {
      const call = async (id: number, name: string, args: string): Promise<{ line: string; result: { content: { text: string }[]; structuredContent: JsonObject } }> => {
        const line = await session.send(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`, id);
        return { line, result: (parseJson(line) as { result: { content: { text: string }[]; structuredContent: JsonObject } }).result };
      };
      await session.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }), 1);
      await session.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
      const seeded = await call(2, 'aipcs_service_seed', '{"domain_name":"exact","domain_class":"knowledge","intent_description":"Exact numbers.","idempotency_key":"s"}');
      const serviceId = (seeded.result.structuredContent['result'] as JsonObject)['service_id'] as string;
      await call(3, 'aipcs_service_design', JSON.stringify({ service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'd' }));
      await call(4, 'aipcs_service_materialise', `{"service_id":"${serviceId}","expected_service_revision":2,"expected_schema_version":1,"idempotency_key":"m"}`);
      const created = await call(
        5,
        'aipcs_record_create',
        `{"service_id":"${serviceId}","entity_name":"note","record":{"title":"t","priority":9223372036854775807,"confidence":1.0},"idempotency_key":"k"}`,
      );
      const structured = created.line.slice(created.line.indexOf('"structuredContent"'));
      expect(structured).toContain('"priority":9223372036854775807');
      expect(structured).toContain('"confidence":1.0');
      // What a Python client checks: json.loads(text) == structuredContent, ints and floats alike.
      expect(created.result.structuredContent).toStrictEqual(parseJson(created.result.content[0]?.text ?? ''));
    } finally {
      session.close();
    }
  });
});

describe('numbers beyond binary64 and int64, and deep nesting, in requests', () => {
  const start = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  ];

  it.each([
    ['a float beyond binary64', '1e400'],
    // Python's json.dumps writes these for non-finite floats; the reference's SDK reads them.
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['-Infinity', '-Infinity'],
    ['an integer of 4000 digits (parsed, then out of range)', '9'.repeat(4000)],
    ['a value nested 300 deep', `${'['.repeat(300)}${']'.repeat(300)}`],
  ])('answers %s with validation_failed', async (_name, number) => {
    const line = await rawExchange(
      ['serve', ...sqliteArgs(freshDataRoot())],
      [...start, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"aipcs_service_list","arguments":{"limit":${number}}}}`],
      2,
    );
    const response = JSON.parse(line) as { result: { isError: boolean; structuredContent: { error: { code: string; issues: { path: string }[] } } } };
    expect(response.result.isError).toBe(true);
    expect(response.result.structuredContent.error.code).toBe('validation_failed');
    expect(response.result.structuredContent.error.issues[0]?.path).toBe('limit');
  });
});

describe('initialize negotiation (contract §2.2)', () => {
  it.each([
    ['2024-11-05', '2024-11-05'],
    ['2025-03-26', '2025-03-26'],
    ['2025-11-25', '2025-11-25'],
    // Not a revision of the Python SDK line the contract follows: offered the latest.
    ['2024-10-07', '2025-11-25'],
    ['2099-01-01', '2025-11-25'],
  ])('answers a client asking for %s with %s', async (requested, answered) => {
    const line = await rawExchange(
      ['serve', ...sqliteArgs(freshDataRoot())],
      [{ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: requested, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }],
      1,
    );
    expect((JSON.parse(line) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(answered);
  });
});
