// Pages of records and history events stay within a byte budget, so that a
// tool result fits the 10 MiB line the MCP TypeScript SDK client accepts (it
// closes the connection on a longer one). 100 records of about 62 KiB, all
// within the contract's bounds, made one record_list page a 12 MB line and
// the real client lost its session.

import { describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';
import { PAGE_TEXT_BUDGET } from '../../../src/aipcs/core/records.js';

async function pageThrough(client: AipcsClient, tool: string, args: Record<string, unknown>, key: string): Promise<{ items: Record<string, unknown>[]; pages: number[] }> {
  const items: Record<string, unknown>[] = [];
  const pages: number[] = [];
  let cursor: string | null = null;
  do {
    const envelope = await client.call(tool, { ...args, limit: 100, ...(cursor === null ? {} : { cursor }) });
    expect(envelope.ok, JSON.stringify(envelope.error)).toBe(true);
    const page = envelope.result?.[key] as Record<string, unknown>[];
    pages.push(page.length);
    items.push(...page);
    cursor = envelope.result?.['next_cursor'] as string | null;
  } while (cursor !== null);
  return { items, pages };
}

describe('page byte budget over stdio (SDK client)', () => {
  it('cuts a page of large records short with a cursor to the rest, and the client stays connected', { timeout: 120_000 }, async () => {
    const client = await startAipcs(sqliteArgs(freshDataRoot()));
    try {
      const serviceId = (await client.call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'k', intent_description: 'i', idempotency_key: 's' })).result?.['service_id'];
      await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'd' });
      await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' });
      const tags = Array.from({ length: 110 }, (_, t) => `${String(t).padStart(3, '0')}${'z'.repeat(253)}`);
      const ids = new Set<string>();
      for (let i = 0; i < 100; i++) {
        const created = await client.call('aipcs_record_create', {
          service_id: serviceId,
          entity_name: 'note',
          record: { title: `${i}${'"'.repeat(8000)}`, detail: 'y'.repeat(16_000), tags },
          idempotency_key: `c${i}`,
        });
        expect(created.ok, JSON.stringify(created.error)).toBe(true);
        ids.add((created.result?.['record'] as { id: string }).id);
      }

      const list = await pageThrough(client, 'aipcs_record_list', { service_id: serviceId, entity_name: 'note' }, 'records');
      expect(list.pages.length).toBeGreaterThan(1);
      expect(list.pages[0]).toBeLessThan(100);
      expect(list.items.map((record) => record['id'])).toEqual([...ids].sort());

      const history = await pageThrough(client, 'aipcs_record_history', { service_id: serviceId, entity_name: 'note' }, 'events');
      expect(history.pages.length).toBeGreaterThan(1);
      expect(new Set(history.items.map((event) => event['id']))).toEqual(ids);
      expect(history.items).toHaveLength(100);

      // A page is never empty: one record alone is always returned.
      expect(PAGE_TEXT_BUDGET).toBeGreaterThan(300 * 1024);
      expect((await client.call('aipcs_server_info')).ok).toBe(true);
    } finally {
      await client.close();
    }
  });
});
