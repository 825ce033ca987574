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

  it('keeps a summary with samples of large records within the budget, so the client stays connected', { timeout: 120_000 }, async () => {
    const client = await startAipcs(sqliteArgs(freshDataRoot()));
    try {
      const managed = (wireNotesManifest()['entities'] as { attributes: Record<string, unknown>[] }[])[0]!.attributes.slice(0, 6);
      const text = (name: string) => ({ name, type: 'string' });
      const schema = {
        manifest_version: 2,
        schema_version: 1,
        entities: Array.from({ length: 32 }, (_, e) => ({ name: `e${String(e).padStart(2, '0')}`, attributes: [...managed, { ...text('title'), required: true }, text('detail'), text('more'), text('extra')] })),
        relationships: [],
        indices: [],
        query_patterns: [],
        discovery_facets: [],
        retrieval_guidance: 'r',
      };
      const serviceId = (await client.call('aipcs_service_seed', { domain_name: 'wide', domain_class: 'k', intent_description: 'i', idempotency_key: 's' })).result?.['service_id'];
      expect((await client.call('aipcs_service_design', { service_id: serviceId, schema, idempotency_key: 'd' })).ok).toBe(true);
      expect((await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' })).ok).toBe(true);
      for (let e = 0; e < 32; e++) {
        for (let i = 0; i < 3; i++) {
          const record = { title: `${i}${'a'.repeat(16_000)}`, detail: 'b'.repeat(16_000), more: 'c'.repeat(16_000), extra: 'd'.repeat(16_000) };
          const created = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: `e${String(e).padStart(2, '0')}`, record, idempotency_key: `c${e}-${i}` });
          expect(created.ok, JSON.stringify(created.error)).toBe(true);
        }
      }
      const summary = await client.call('aipcs_service_summary', { service_id: serviceId, sample: 3 });
      expect(summary.ok).toBe(true);
      const samples = summary.result?.['samples'] as { entity_name: string; records: unknown[] }[];
      // Every entity keeps its entry; the samples that fit are the first ones, in order.
      expect(samples).toHaveLength(32);
      const counts = samples.map((entry) => entry.records.length);
      expect(counts[0]).toBe(3);
      expect(counts.reduce((sum, n) => sum + n, 0)).toBeLessThan(96);
      expect(counts).toEqual([...counts].sort((a, b) => b - a));
      expect((await client.call('aipcs_server_info')).ok).toBe(true);
    } finally {
      await client.close();
    }
  });
});
