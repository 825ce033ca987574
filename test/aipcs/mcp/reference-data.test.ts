// Observable behaviour of the data tools that the contract leaves implicit,
// pinned where it matches what a client of the Python reference sees, over the
// real server on stdio and on every storage profile.

import { describe, expect, it } from 'vitest';
import { serverProfiles, startAipcs } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';

const manifest = {
  manifest_version: 2,
  schema_version: 1,
  entities: [
    {
      name: 'note',
      attributes: [...serverManaged(), { name: 'title', type: 'string', required: true }, { name: 'parent_note', type: 'uuid' }],
    },
  ],
  relationships: [{ name: 'note_parent_fk', from: { entity: 'note', field: 'parent_note' }, to: { entity: 'note', field: 'id' }, on_delete: 'restrict' }],
  discovery_facets: [{ entity: 'note', field: 'title' }],
};

for (const profile of await serverProfiles()) {
  describe(`data tools as a reference client sees them (${profile.name})`, () => {
    it('orders facet values by UTF-8 bytes, counts stored values apart when only their surrounding spaces differ, and deletes a record that references only itself', async () => {
      const storage = await profile.fresh();
      const server = await startAipcs(storage.args, storage.env);
      try {
        const seeded = await server.call('aipcs_service_seed', { domain_name: 'facets', domain_class: 'knowledge', intent_description: 'Facets.', idempotency_key: 's' });
        const sid = seeded.result?.['service_id'] as string;
        expect((await server.call('aipcs_service_design', { service_id: sid, schema: manifest, idempotency_key: 'd' })).ok).toBe(true);
        expect((await server.call('aipcs_service_materialise', { service_id: sid, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' })).ok).toBe(true);
        // UTF-16 code units would put U+1F600 (a surrogate pair) before U+FFFD; the stores compare bytes.
        const titles = ['\u{1F600}', '\uFFFD', 'A ', ' A', 'A', 'A', 'b'];
        const ids: string[] = [];
        for (const [index, title] of titles.entries()) {
          const created = await server.call('aipcs_record_create', { service_id: sid, entity_name: 'note', record: { title }, idempotency_key: `c${index}` });
          ids.push((created.result?.['record'] as { id: string }).id);
        }
        const summary = await server.call('aipcs_service_summary', { service_id: sid });
        const facets = summary.result?.['facets'] as { field_name: string; values: { value: unknown; count: number }[] }[];
        // Stored " A", "A" and "A " are three values, each emitted trimmed.
        expect(facets[0]?.values).toEqual([
          { value: 'A', count: 2 },
          { value: 'A', count: 1 },
          { value: 'A', count: 1 },
          { value: 'b', count: 1 },
          { value: '\uFFFD', count: 1 },
          { value: '\u{1F600}', count: 1 },
        ]);

        const self = ids[6] as string;
        const pointed = await server.call('aipcs_record_update', { service_id: sid, entity_name: 'note', record_id: self, updates: { parent_note: self }, expected_record_version: 1, idempotency_key: 'u' });
        expect(pointed.ok).toBe(true);
        // A record referenced by another one is kept; one referenced only by itself is not "referenced by another record".
        await server.call('aipcs_record_update', { service_id: sid, entity_name: 'note', record_id: ids[5] as string, updates: { parent_note: ids[4] }, expected_record_version: 1, idempotency_key: 'u2' });
        expect((await server.call('aipcs_record_delete', { service_id: sid, entity_name: 'note', record_id: ids[4] as string, expected_record_version: 1, idempotency_key: 'x1' })).error?.code).toBe('constraint_violation');
        const deleted = await server.call('aipcs_record_delete', { service_id: sid, entity_name: 'note', record_id: self, expected_record_version: 2, idempotency_key: 'x2' });
        expect(deleted.result).toEqual({ id: self, record_version: 3, replayed: false });
      } finally {
        await server.close();
        await storage.drop();
      }
    });
  });
}
