// The PostgreSQL side of a service store bound to its service and revision
// (operations spec §3.2.6; decision D42): a `svc_<hex>` schema whose meta row
// names another namespace (another service's schema renamed or restored under
// this name) or a later revision (a newer build moved it on) answers
// storage_unavailable to data tools, as `doctor` reports it incompatible,
// instead of serving its records and taking writes. The meta row is changed
// through a separate connection while the server runs: every unit checks it.

import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startAipcs, type AipcsClient } from '../../support/aipcs-client.js';
import { createNote, key, materialisedService } from '../../support/aipcs-admin.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../support/postgres.js';

const schemaOf = (serviceId: string): string => `svc_${serviceId.replaceAll('-', '')}`;

describe('a PostgreSQL service store bound to its service and revision', () => {
  expectClustersUnderCi();

  let db: TestDatabase | undefined;
  let server: AipcsClient | undefined;
  let other: pg.Client | undefined;

  afterEach(async () => {
    await other?.end();
    await server?.close();
    await db?.drop();
    [db, server, other] = [undefined, undefined, undefined];
  });

  describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s', (_version, cluster) => {
    const meta = (schema: string) => `"${schema}"."__aipcs_service_store_meta"`;
    const cases = [
      {
        name: "refuses data tools on a schema whose meta names another service's store",
        change: (schema: string, peer: string) => ({ sql: `UPDATE ${meta(schema)} SET "namespace" = $1 WHERE "singleton" = 1`, params: [peer] }),
      },
      {
        name: 'refuses data tools on a schema a newer build moved to a later revision',
        change: (schema: string) => ({ sql: `UPDATE ${meta(schema)} SET "applied_revision" = "applied_revision" + 1 WHERE "singleton" = 1`, params: [] }),
      },
      { name: 'refuses data tools on a schema without its meta table', change: (schema: string) => ({ sql: `DROP TABLE ${meta(schema)}`, params: [] }) },
    ];
    it.each(cases)('$name', async ({ change }) => {
      db = await createTestDatabase(cluster);
      server = await startAipcs(['--profile', 'postgresql', '--principal-id', 'agent', '--postgres-dsn-env', 'AIPCS_TEST_POSTGRES_DSN'], { AIPCS_TEST_POSTGRES_DSN: db.url });
      const serviceId = await materialisedService(server, 'bound');
      const peer = await materialisedService(server, 'peer');
      const note = await createNote(server, serviceId, { title: 'Before' });
      const schema = schemaOf(serviceId);

      other = new pg.Client({ connectionString: db.url });
      await other.connect();
      const { sql, params } = change(schema, schemaOf(peer));
      await other.query(sql, params);

      const get = await server.call('aipcs_record_get', { service_id: serviceId, entity_name: 'note', record_id: note['id'] });
      expect(get.error?.code).toBe('storage_unavailable');
      const list = await server.call('aipcs_record_list', { service_id: serviceId, entity_name: 'note' });
      expect(list.error?.code).toBe('storage_unavailable');
      const create = await server.call('aipcs_record_create', { service_id: serviceId, entity_name: 'note', record: { title: 'After' }, idempotency_key: key('c') });
      expect(create.error?.code).toBe('storage_unavailable');
      const counted = await other.query<{ n: string }>(`SELECT count(*)::text AS n FROM "${schema}"."note"`);
      expect(counted.rows[0]?.n).toBe('1');
      // The peer, whose own meta is untouched, still serves.
      expect((await server.call('aipcs_record_list', { service_id: peer, entity_name: 'note' })).ok).toBe(true);
    }, 90_000);
  });
});
