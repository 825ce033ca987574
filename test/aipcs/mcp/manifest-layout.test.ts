// Manifests at the edge of what §4.1 allows for names (63-character
// entity and field names that differ only in their last character, 48-character
// index and relationship names, SQL keywords, PostgreSQL system column and
// catalogue names) must design, materialise, evolve and serve records on
// every backend.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverProfiles, startAipcs, type AipcsClient, type Envelope } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';

type Json = Record<string, unknown>;

const many = <T>(count: number, make: (index: number) => T): T[] => Array.from({ length: count }, (_, index) => make(index));
const long = (stem: string, last: string, length = 63): string => `${stem}_`.padEnd(length - 1, 'x') + last;
const E1 = long('entity', '1');
const E2 = long('entity', '2');
const F1 = long('field', '1');
const F2 = long('field', '2');
const L1 = long('list', '1');
const R1 = long('rel', '1', 48);
const R2 = long('rel', '2', 48);
const I1 = long('idx', '1', 48);
const I2 = long('idx', '2', 48);

function edgeManifest(evolved: boolean): Json {
  const domain = (): Json[] => [
    { name: F1, type: 'string' },
    { name: F2, type: 'string' },
    { name: L1, type: 'string_list', retrieval_mode: 'membership' },
    { name: 'select', type: 'integer' },
    { name: 'xmin', type: 'number' },
    { name: 'ctid', type: 'boolean' },
    { name: 'oid', type: 'datetime' },
    { name: 'rowid', type: 'string' },
  ];
  const first = [...serverManaged(), ...domain(), { name: 'peer', type: 'uuid' }, ...(evolved ? [{ name: long('added', '1'), type: 'string' }] : [])];
  const second = [...serverManaged(), ...domain(), { name: 'owner', type: 'uuid', required: true }];
  return {
    manifest_version: 2,
    schema_version: evolved ? 2 : 1,
    entities: [
      { name: E1, attributes: first },
      { name: E2, attributes: second },
      { name: 'pg_class', attributes: [...serverManaged(), { name: 'pg_attribute', type: 'string' }, { name: 'relname', type: 'string' }] },
      ...(evolved ? [{ name: long('entity', '3'), attributes: [...serverManaged(), { name: F1, type: 'uuid', required: true }] }] : []),
    ],
    relationships: [
      { name: R1, from: { entity: E2, field: 'owner' }, to: { entity: E1, field: 'id' }, on_delete: 'restrict' },
      { name: R2, from: { entity: E1, field: 'peer' }, to: { entity: E1, field: 'id' }, on_delete: 'restrict' },
      ...(evolved ? [{ name: long('rel', '3', 48), from: { entity: long('entity', '3'), field: F1 }, to: { entity: E2, field: 'id' }, on_delete: 'restrict' }] : []),
    ],
    indices: [
      { name: I1, entity: E1, fields: [F1, F2, 'select'], unique: true },
      { name: I2, entity: E2, fields: [F2, F1], unique: false },
      ...(evolved ? [{ name: long('idx', '3', 48), entity: E1, fields: [long('added', '1')], unique: true }] : []),
    ],
    discovery_facets: [
      { entity: E1, field: F1 },
      { entity: E1, field: L1 },
      { entity: E2, field: 'xmin' },
    ],
    migration_history: evolved ? [{ from_schema_version: 1, to_schema_version: 2, operations: ['add the third entity and a field'] }] : [],
  };
}

for (const profile of await serverProfiles()) {
  describe(`edge names on ${profile.name}`, () => {
    let aipcs: AipcsClient;
    let drop: () => Promise<void>;

    beforeAll(async () => {
      const storage = await profile.fresh();
      drop = storage.drop;
      aipcs = await startAipcs(storage.args, storage.env);
    });

    afterAll(async () => {
      await aipcs.close();
      await drop();
    });

    const ok = (envelope: Envelope): Json => {
      expect(envelope.error).toBeNull();
      return envelope.result as Json;
    };

    it('designs, materialises, evolves and serves records', async () => {
      const seeded = ok(await aipcs.call('aipcs_service_seed', { domain_name: 'edge', domain_class: 'audit', intent_description: 'Edge names.', idempotency_key: 'seed' }));
      const serviceId = seeded['service_id'] as string;
      ok(await aipcs.call('aipcs_service_design', { service_id: serviceId, schema: edgeManifest(false), idempotency_key: 'design' }));
      ok(await aipcs.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'materialise' }));

      const values = { [F1]: 'a', [F2]: 'b', [L1]: ['m'], select: 7, xmin: 1.5, ctid: true, oid: '2030-01-01T00:00:00Z', rowid: 'r' };
      const first = ok(await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: E1, record: values, idempotency_key: 'r1' }));
      const firstId = (first['record'] as Json)['id'] as string;
      const duplicate = await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: E1, record: values, idempotency_key: 'r2' });
      expect(duplicate.error?.code).toBe('constraint_violation');
      const second = ok(await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: E2, record: { ...values, owner: firstId }, idempotency_key: 'r3' }));
      const secondId = (second['record'] as Json)['id'] as string;

      for (const [field, value] of Object.entries({ [F1]: 'a', [F2]: 'b', [L1]: 'm', select: 7, xmin: 1.5, ctid: true, oid: '2030-01-01T00:00:00Z', rowid: 'r' })) {
        for (const entityName of [E1, E2]) {
          const page = ok(await aipcs.call('aipcs_record_search', { service_id: serviceId, entity_name: entityName, filters: { [field]: value } }));
          expect((page['records'] as unknown[]).length, `${entityName}.${field}`).toBe(1);
        }
      }

      const evolved = ok(
        await aipcs.call('aipcs_service_evolve', { service_id: serviceId, expected_service_revision: 3, expected_schema_version: 1, schema: edgeManifest(true), idempotency_key: 'evolve' }),
      );
      expect(evolved).toMatchObject({ schema_version: 2, service_revision: 4 });
      const listed = ok(await aipcs.call('aipcs_record_list', { service_id: serviceId, entity_name: E1 }));
      expect((listed['records'] as Json[])[0]?.['fields']).toMatchObject({ [long('added', '1')]: null });
      ok(await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: long('entity', '3'), record: { [F1]: secondId }, idempotency_key: 'r4' }));
      const referenced = await aipcs.call('aipcs_record_delete', { service_id: serviceId, entity_name: E1, record_id: firstId, expected_record_version: 1, idempotency_key: 'd1' });
      expect(referenced.error?.code).toBe('constraint_violation');

      ok(await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: 'pg_class', record: { pg_attribute: 'a', relname: 'r' }, idempotency_key: 'r5' }));
      const catalogue = ok(await aipcs.call('aipcs_record_search', { service_id: serviceId, entity_name: 'pg_class', filters: { relname: 'r' } }));
      expect((catalogue['records'] as unknown[]).length).toBe(1);
      const summary = ok(await aipcs.call('aipcs_service_summary', { service_id: serviceId, sample: 1 }));
      expect((summary['facets'] as unknown[]).length).toBe(3);
      ok(await aipcs.call('aipcs_maintenance_scan', { service_id: serviceId }));
      ok(await aipcs.call('aipcs_record_history', { service_id: serviceId, entity_name: E1 }));
    });

    it('admits a unique index over rows whose only repeats are nulls, and refuses one over real repeats leaving its key free', async () => {
      const attributes = [...serverManaged(), { name: 'code', type: 'string' }, { name: 'rank', type: 'integer' }];
      const base = { manifest_version: 2, schema_version: 1, entities: [{ name: 'item', attributes }] };
      const withIndex = (version: number, indices: Json[]): Json => ({
        ...base,
        schema_version: version,
        indices,
        migration_history: many(version - 1, (index) => ({ from_schema_version: index + 1, to_schema_version: index + 2, operations: ['index'] })),
      });
      const serviceId = (ok(await aipcs.call('aipcs_service_seed', { domain_name: 'nulls', domain_class: 'audit', intent_description: 'Unique over nulls.', idempotency_key: 'n-seed' }))['service_id']) as string;
      ok(await aipcs.call('aipcs_service_design', { service_id: serviceId, schema: base, idempotency_key: 'n-design' }));
      ok(await aipcs.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'n-mat' }));
      const rows: Json[] = [{}, {}, { code: 'a' }, { code: 'a', rank: 1 }, { code: 'a', rank: 2 }, { rank: 1 }];
      for (const [index, record] of rows.entries()) ok(await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: 'item', record, idempotency_key: `n-r${index}` }));

      const overNulls = withIndex(2, [{ name: 'item_code_rank', entity: 'item', fields: ['code', 'rank'], unique: true }]);
      expect(ok(await aipcs.call('aipcs_service_evolve', { service_id: serviceId, expected_service_revision: 3, expected_schema_version: 1, schema: overNulls, idempotency_key: 'n-e1' }))).toMatchObject({ schema_version: 2 });
      const repeat = await aipcs.call('aipcs_record_create', { service_id: serviceId, entity_name: 'item', record: { code: 'a', rank: 1 }, idempotency_key: 'n-r9' });
      expect(repeat.error?.code).toBe('constraint_violation');

      const overRepeats = withIndex(3, [...(overNulls['indices'] as Json[]), { name: 'item_code', entity: 'item', fields: ['code'], unique: true }]);
      const refused = await aipcs.call('aipcs_service_evolve', { service_id: serviceId, expected_service_revision: 4, expected_schema_version: 2, schema: overRepeats, idempotency_key: 'n-e2' });
      expect(refused.error?.code).toBe('unsupported_transition');
      const inspected = ok(await aipcs.call('aipcs_service_inspect', { service_id: serviceId }));
      expect(inspected).toMatchObject({ service_revision: 4, schema_version: 2, recovery_state: 'clear' });
      const plain = withIndex(3, [...(overNulls['indices'] as Json[]), { name: 'item_code', entity: 'item', fields: ['code'], unique: false }]);
      expect(ok(await aipcs.call('aipcs_service_evolve', { service_id: serviceId, expected_service_revision: 4, expected_schema_version: 2, schema: plain, idempotency_key: 'n-e2' }))).toMatchObject({ schema_version: 3 });
    });
  });
}
