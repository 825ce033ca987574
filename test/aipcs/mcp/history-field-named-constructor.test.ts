// A history snapshot is read against the current manifest: a field it lacks
// (appended by a later evolve, or left out by an imported artefact) reads as
// null (contract §6.3, §4.11). A field named `constructor` (a valid
// identifier) was instead read from Object.prototype, and aipcs_record_history
// answered internal_error for every event written before the field existed.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataRoot, sqliteArgs, startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';

const manifest = (schemaVersion: number) => ({
  manifest_version: 2,
  schema_version: schemaVersion,
  entities: [{ name: 'thing', attributes: [...serverManaged(), { name: 'title', type: 'string', required: true }, ...(schemaVersion > 1 ? [{ name: 'constructor', type: 'string' }] : [])] }],
  relationships: [],
  indices: [],
  query_patterns: [],
  discovery_facets: [],
  retrieval_guidance: null,
  ...(schemaVersion > 1 ? { migration_history: [{ from_schema_version: 1, to_schema_version: 2, operations: ['add thing.constructor'] }] } : {}),
});

describe('history after an evolve appended a field named constructor', () => {
  let client: AipcsClient;

  beforeAll(async () => {
    client = await startAipcs(sqliteArgs(freshDataRoot()));
  });

  afterAll(async () => {
    await client.close();
  });

  it('reads that field as null in the snapshots written before it', async () => {
    const seeded = await client.call('aipcs_service_seed', { domain_name: 'things', domain_class: 'knowledge', intent_description: 'Things.', idempotency_key: 's' });
    const serviceId = seeded.result?.['service_id'] as string;
    expect((await client.call('aipcs_service_design', { service_id: serviceId, schema: manifest(1), idempotency_key: 'd' })).ok).toBe(true);
    expect((await client.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' })).ok).toBe(true);
    expect((await client.call('aipcs_record_create', { service_id: serviceId, entity_name: 'thing', record: { title: 'Old' }, idempotency_key: 'c' })).ok).toBe(true);
    const evolved = await client.call('aipcs_service_evolve', { service_id: serviceId, schema: manifest(2), expected_service_revision: 3, expected_schema_version: 1, idempotency_key: 'e' });
    expect(evolved.ok).toBe(true);
    const history = await client.call('aipcs_record_history', { service_id: serviceId, entity_name: 'thing', record_id: null });
    // Before: internal_error.
    expect(history.error).toBeNull();
    const events = history.result?.['events'] as { after: { fields: Record<string, unknown> } }[];
    expect(events.map((event) => event.after.fields)).toEqual([{ constructor: null, title: 'Old' }]);
  });
});
