// A SQLite write that the file system refuses half-way (here a file size
// limit: `ulimit -f` makes write() fail with EFBIG, since Node ignores
// SIGXFSZ) is storage_unavailable, not retryable (contract §3.2, §3.4: only
// SQLITE_BUSY is contention, ops spec §3.2.3; a full disk needs the operator,
// decisions D33). The server keeps serving, the refused write leaves nothing
// behind, every acknowledged write stays, and the same request with the same
// key succeeds once the limit is gone.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { sqliteArgs, type Envelope } from '../../support/aipcs-client.js';
import { freshDataRoot, materialisedServiceThenStop, serveOn } from '../../support/aipcs-admin.js';
import { aipcsBin } from '../../support/bins.js';

/** `aipcs serve` with a soft file size limit of `kib` KiB, through a bash wrapper. */
async function serveWithFileSizeLimit(args: string[], kib: number): Promise<{ call(name: string, args: Record<string, unknown>): Promise<Envelope>; close(): Promise<void> }> {
  const client = new Client({ name: 'aipcs-test', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: 'bash',
    args: ['-c', `ulimit -S -f ${kib} && exec "$@"`, 'bash', process.execPath, aipcsBin(), 'serve', ...args],
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root' },
    stderr: 'ignore',
  });
  await client.connect(transport);
  return {
    async call(name, toolArgs) {
      const result = await client.callTool({ name, arguments: toolArgs }, CallToolResultSchema, { timeout: 30_000 });
      return JSON.parse((result.content as { text: string }[])[0]?.text ?? '') as Envelope;
    },
    close: () => client.close(),
  };
}

describe('a SQLite write refused by the file system', () => {
  it('is storage_unavailable, leaves nothing half-written, and the server goes on', async () => {
    const root = freshDataRoot();
    const serviceId = await materialisedServiceThenStop(root, 'limited');

    // The store's WAL grows by each record; 400 KiB is reached after a few dozen.
    const limited = await serveWithFileSizeLimit(sqliteArgs(root), 400);
    const acknowledged: string[] = [];
    let refused: { key: string; title: string; envelope: Envelope } | undefined;
    try {
      for (let n = 0; n < 100 && !refused; n++) {
        const [key, title] = [`big-${n}`, `note ${n}`];
        const envelope = await limited.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title, detail: `${n} ${'x'.repeat(12_000)}` }, idempotency_key: key });
        if (envelope.ok) acknowledged.push((envelope.result?.['record'] as { id: string }).id);
        else refused = { key, title, envelope };
      }
      expect(acknowledged.length).toBeGreaterThan(0);
      expect(refused?.envelope.error).toEqual({ code: 'storage_unavailable', message: 'Storage is unavailable.', issues: [], retryable: false });
      // Still serving: reads answer.
      expect((await limited.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note', limit: 1 })).ok).toBe(true);
    } finally {
      await limited.close();
    }

    const server = await serveOn(root);
    try {
      const listed = await server.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note', limit: 100 });
      const records = listed.result?.['records'] as { id: string; fields: { title: string } }[];
      expect(records.map((record) => record.id).sort()).toEqual([...acknowledged].sort());
      expect(records.map((record) => record.fields.title)).not.toContain(refused?.title);
      const retried = await server.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: refused?.title, detail: 'small' }, idempotency_key: refused?.key });
      expect([retried.ok, retried.result?.['replayed']]).toEqual([true, false]);
    } finally {
      await server.close();
    }
  }, 60_000);
});
