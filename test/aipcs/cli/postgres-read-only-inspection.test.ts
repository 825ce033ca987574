// Operations spec §3.3.3: inspection runs read-only transactions over
// pg_catalog and never DDL (seed: "without migration, repair, DDL"). The
// expected shape of our schemas used to be learnt by building our DDL in a
// scratch schema that was rolled back: still DDL, refused by a server that
// forbids it (here an event trigger, as on a guarded production database)
// and impossible on a read-only standby. Every read-only command must work.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { aipcs, createNote, materialisedService } from '../../support/aipcs-admin.js';
import { startAipcs } from '../../support/aipcs-client.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters } from '../../support/postgres.js';

const DSN_ENV = 'AIPCS_TEST_INSPECTION_DSN';
const pgArgs = ['--profile', 'postgresql', '--principal-id', 'local-agent', '--postgres-dsn-env', DSN_ENV, '--postgres-connect-timeout-seconds', '5'];

const clusters = postgresClusters();
expectClustersUnderCi();

describe.each(clusters.map((cluster) => [cluster.version, cluster] as const))('read-only inspection on PostgreSQL %s', (_version, cluster) => {
  it('runs no DDL: every inspection command works while the database refuses DDL', async () => {
    const database = await createTestDatabase(cluster);
    const env = { [DSN_ENV]: database.url };
    const admin = new pg.Client({ connectionString: cluster.adminUrl.replace(/\/postgres$/, `/${database.name}`) });
    try {
      const server = await startAipcs(pgArgs, env);
      let serviceId: string;
      try {
        serviceId = await materialisedService(server, 'guarded_notes');
        await createNote(server, serviceId, { title: 'Kept', tags: ['a'] });
      } finally {
        await server.close();
      }
      await admin.connect();
      await admin.query(`CREATE FUNCTION refuse_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'DDL refused: %', tg_tag; END $$`);
      await admin.query('CREATE EVENT TRIGGER refuse_ddl ON ddl_command_start EXECUTE FUNCTION refuse_ddl()');
      const run = (argv: string[]) => aipcs([...argv, ...pgArgs], { env });

      const status = run(['status']);
      expect(status.status, status.stderr).toBe(0);
      expect(status.envelope.result).toMatchObject({ registry: { status: 'ready', issue_code: null }, overall: 'ready' });
      for (const argv of [['doctor'], ['doctor', '--service', serviceId]]) {
        const doctor = run(argv);
        expect(doctor.status, doctor.stdout).toBe(0);
        expect(doctor.envelope.result).toMatchObject({ overall: 'pass' });
      }
      expect(run(['storage', 'status', '--service', serviceId]).envelope.result).toMatchObject({ component: 'service_store', status: 'ready' });
      expect(run(['service', 'list']).envelope.result).toMatchObject({ services: [{ service_id: serviceId }] });
      expect(run(['service', 'inspect', serviceId]).envelope.result).toMatchObject({ service_id: serviceId, design_state: 'materialised' });
      const scan = run(['maintenance', 'scan', '--service', serviceId]);
      expect(scan.status, scan.stdout).toBe(0);
      expect(scan.envelope.ok).toBe(true);
      // The trigger is live: DDL through the same role is refused.
      const owner = new pg.Client({ connectionString: database.url });
      await owner.connect();
      try {
        await expect(owner.query('CREATE TABLE probe_ddl (x int)')).rejects.toThrow(/DDL refused/);
      } finally {
        await owner.end();
      }
    } finally {
      await admin.end().catch(() => undefined);
      await database.drop();
    }
  });
});
