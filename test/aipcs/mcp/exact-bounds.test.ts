// The contract's input schemas bound revisions by 2^63-1 (Appendix A). Over
// stdio the bound reaches the client as that exact integer, not as the
// nearest double a JavaScript JSON.stringify would write. Numbers beyond what
// the server can hold are answered with the contract's envelope, never dropped.

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';

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

describe('numbers beyond binary64 and int64, and deep nesting, in requests', () => {
  const start = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  ];

  it.each([
    ['a float beyond binary64', '1e400'],
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
