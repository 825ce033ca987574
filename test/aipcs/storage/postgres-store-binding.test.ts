// The PostgreSQL side of a service store bound to its service and revision
// (operations spec §3.2.6; decision D42): a `svc_<hex>` schema whose meta row
// names another namespace (another service's schema renamed or restored under
// this name) or a later revision (a newer build moved it on) answers
// storage_unavailable to data tools, as `doctor` reports it incompatible,
// instead of serving its records and taking writes. So does a schema another
// role owns or PUBLIC was granted (§3.3.2: incompatible), which other roles
// could read. The store is changed through a separate connection while the
// server runs: every unit checks it.

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
    interface Change {
      readonly sql: string;
      readonly params: string[];
      /** Made by the cluster's superuser rather than the store's role. */
      readonly asAdmin?: boolean;
    }
    const cases: { name: string; change: (schema: string, peer: string) => Change }[] = [
      {
        name: "refuses data tools on a schema whose meta names another service's store",
        change: (schema: string, peer: string) => ({ sql: `UPDATE ${meta(schema)} SET "namespace" = $1 WHERE "singleton" = 1`, params: [peer] }),
      },
      {
        name: 'refuses data tools on a schema a newer build moved to a later revision',
        change: (schema: string) => ({ sql: `UPDATE ${meta(schema)} SET "applied_revision" = "applied_revision" + 1 WHERE "singleton" = 1`, params: [] }),
      },
      { name: 'refuses data tools on a schema without its meta table', change: (schema: string) => ({ sql: `DROP TABLE ${meta(schema)}`, params: [] }) },
      // Inspection calls these incompatible (operations spec §3.3.2); SQLite refuses an unsafe store file alike.
      { name: 'refuses data tools on a schema PUBLIC was granted USAGE on', change: (schema: string) => ({ sql: `GRANT USAGE ON SCHEMA "${schema}" TO PUBLIC`, params: [] }) },
      { name: 'refuses data tools on a schema PUBLIC was granted CREATE on', change: (schema: string) => ({ sql: `GRANT CREATE ON SCHEMA "${schema}" TO PUBLIC`, params: [] }) },
      {
        // The store's role keeps USAGE and CREATE, so only the ownership check refuses it.
        name: 'refuses data tools on a schema another role owns',
        change: (schema: string) => ({
          sql: `DO $$ DECLARE store_role text; BEGIN
                  SELECT nspowner::regrole::text INTO store_role FROM pg_namespace WHERE nspname = '${schema}';
                  EXECUTE format('ALTER SCHEMA %I OWNER TO CURRENT_USER', '${schema}');
                  EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO %s', '${schema}', store_role);
                END $$`,
          params: [],
          asAdmin: true,
        }),
      },
    ];
    it.each(cases)('$name', async ({ change }) => {
      db = await createTestDatabase(cluster);
      server = await startAipcs(['--profile', 'postgresql', '--principal-id', 'agent', '--postgres-dsn-env', 'AIPCS_TEST_POSTGRES_DSN'], { AIPCS_TEST_POSTGRES_DSN: db.url });
      const serviceId = await materialisedService(server, 'bound');
      const peer = await materialisedService(server, 'peer');
      const note = await createNote(server, serviceId, { title: 'Before' });
      const schema = schemaOf(serviceId);

      // The superuser, in this database: it may give a schema away, and reads it after.
      other = new pg.Client({ connectionString: cluster.adminUrl.replace(/\/postgres$/, `/${db.name}`) });
      await other.connect();
      const { sql, params, asAdmin = false } = change(schema, schemaOf(peer));
      if (asAdmin) {
        await other.query(sql, params);
      } else {
        // As the store's own role, as an operator would.
        const owner = new pg.Client({ connectionString: db.url });
        await owner.connect();
        await owner.query(sql, params).finally(() => owner.end());
      }

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
