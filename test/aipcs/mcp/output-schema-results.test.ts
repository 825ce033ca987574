// Results at the edges of their output schemas (contract §9), checked by the
// MCP TypeScript SDK client the way an agent's client checks them: after
// tools/list the client validates every successful result's
// structuredContent against the tool's outputSchema and rejects the call when
// it does not match. A full page of 100 records and a history holding a
// primary_move event must both pass.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { wireNotesManifest } from '../../support/wire-manifests.js';

describe('results at the edges of their output schemas (SDK client validation)', () => {
  let client: AipcsClient;
  let serviceId: unknown;

  beforeAll(async () => {
    client = await startAipcs(sqliteArgs(freshDataRoot()));
    // The SDK client keeps the output schemas of the tools it listed and validates against them.
    const tools = await client.client.listTools();
    expect(tools.tools.find((tool) => tool.name === 'aipcs_record_list')?.outputSchema).toBeDefined();
    serviceId = (await client.call('aipcs_service_seed', { domain_name: 'edges', domain_class: 'k', intent_description: 'i', idempotency_key: 's' })).result?.['service_id'];
    expect((await client.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'd' })).ok).toBe(true);
    expect((await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' })).ok).toBe(true);
  }, 60_000);

  afterAll(async () => {
    await client.close();
  });

  it('a page of exactly 100 records', { timeout: 120_000 }, async () => {
    for (let i = 0; i < 101; i++) {
      const created = await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: `n${i}` }, idempotency_key: `c${i}` });
      expect(created.ok, JSON.stringify(created.error)).toBe(true);
    }
    const page = await client.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note', limit: 100 });
    expect(page.ok, JSON.stringify(page.error)).toBe(true);
    expect(page.result?.['records']).toHaveLength(100);
    expect(page.result?.['next_cursor']).toEqual(expect.any(String));
  });

  it('a history holding a primary_move event', { timeout: 60_000 }, async () => {
    const note = (await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'moving' }, idempotency_key: 'moving' })).result?.['record'] as Record<string, unknown>;
    const branch = async (slug: string) =>
      ((await client.call('aipcs_branch_create', { service_id: serviceId, slug, title: slug, intent: 'Where it lives.', idempotency_key: `b-${slug}` })).result?.['branch'] as Record<string, unknown>)['id'];
    const first = await branch('first-home');
    const second = await branch('second-home');
    for (const [branchId, version] of [
      [first, 1],
      [second, 2],
    ] as const) {
      const assigned = await client.call('aipcs_branch_assign_records', {
        service_id: serviceId,
        branch_id: branchId,
        role: 'primary',
        operation: 'assign',
        records: [{ entity_name: 'note', record_id: note['id'], expected_record_version: version }],
        idempotency_key: `a-${version}`,
      });
      expect(assigned.ok, JSON.stringify(assigned.error)).toBe(true);
    }
    const history = await client.call('aipcs_record_history', { service_id: serviceId, entity_name: 'note', record_id: note['id'] });
    expect(history.ok, JSON.stringify(history.error)).toBe(true);
    expect((history.result?.['events'] as { kind: string }[]).map((event) => event.kind)).toEqual(['create', 'primary_assign', 'primary_move']);
  });
});
