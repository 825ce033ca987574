// PostgreSQL adapter: a registry or service schema is ours alone only when
// the connecting role owns the schema, every relation in it is owned by the
// schema's owner, and nothing in it is granted to PUBLIC (catalog.ts,
// schemaPresence). Each clause is tested on its own: the schema or a table is
// handed to another role that grants the connecting role everything back (so
// nothing but ownership is wrong), or one table is granted to PUBLIC. The
// registry then refuses to open and a service store is incompatible, never
// ready. So does a trigger added on one table (the catalog signature lists
// triggers). Written in mutation review R: each survived removing its check.
// A trigger, rule, policy, row security or a view anywhere in a store's
// schema is foundation drift, which operator inspection reports as it does
// for a SQLite store (decision D68).

import { describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../../src/aipcs/core/ports.js';
import { openPostgresStorage } from '../../../../src/aipcs/storage/postgres/index.js';
import { storeLayoutOf } from '../../../../src/aipcs/core/layout.js';
import { manifest, materialisedNotesStore } from '../../../conformance/harness.js';
import { notesManifestV2 } from '../../../support/manifests.js';
import type { ClusterInfo } from '../../../support/postgres-cluster.js';
import { expectClustersUnderCi, postgresClusters, queryRows, usePostgresStorage } from '../../../support/postgres.js';

/** Run as the cluster's superuser in the test database: `schema` and every table in it become the superuser's, the store's role keeps every privilege. */
const giveSchemaAway = (schema: string): string => `DO $$ DECLARE store_role text; t text; BEGIN
    SELECT nspowner::regrole::text INTO store_role FROM pg_namespace WHERE nspname = '${schema}';
    EXECUTE format('ALTER SCHEMA %I OWNER TO CURRENT_USER', '${schema}');
    FOR t IN SELECT relname FROM pg_class WHERE relnamespace = '"${schema}"'::regnamespace AND relkind IN ('r', 'p') LOOP
      EXECUTE format('ALTER TABLE %I.%I OWNER TO CURRENT_USER', '${schema}', t);
    END LOOP;
    EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO %s', '${schema}', store_role);
    EXECUTE format('GRANT ALL ON ALL TABLES IN SCHEMA %I TO %s', '${schema}', store_role);
    EXECUTE format('GRANT ALL ON ALL SEQUENCES IN SCHEMA %I TO %s', '${schema}', store_role);
  END $$`;

/** As the superuser: one table becomes the superuser's, the store's role keeps every privilege on it. */
const giveTableAway = (schema: string, table: string): string => `DO $$ DECLARE store_role text; BEGIN
    SELECT nspowner::regrole::text INTO store_role FROM pg_namespace WHERE nspname = '${schema}';
    EXECUTE format('ALTER TABLE %I.%I OWNER TO CURRENT_USER', '${schema}', '${table}');
    EXECUTE format('GRANT ALL ON %I.%I TO %s', '${schema}', '${table}', store_role);
  END $$`;

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s schema presence', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);
  const { open, opened } = fixture;

  const cases: { name: string; change: (schema: string, table: string) => { sql: string; asAdmin: boolean } }[] = [
    { name: 'the schema and all its tables owned by another role, every privilege granted back', change: (schema) => ({ sql: giveSchemaAway(schema), asAdmin: true }) },
    { name: 'one table owned by another role, every privilege on it granted back', change: (schema, table) => ({ sql: giveTableAway(schema, table), asAdmin: true }) },
    { name: 'one table granted to PUBLIC', change: (schema, table) => ({ sql: `GRANT SELECT ON "${schema}"."${table}" TO PUBLIC`, asAdmin: false }) },
    {
      // The function lives outside the schema, so only the trigger itself differs from what the adapter created.
      name: 'a trigger added on one table',
      change: (schema, table) => ({
        sql: `CREATE FUNCTION public.aipcs_extra_trigger() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
              CREATE TRIGGER aipcs_extra BEFORE INSERT ON "${schema}"."${table}" FOR EACH ROW EXECUTE FUNCTION public.aipcs_extra_trigger()`,
        asAdmin: false,
      }),
    },
    { name: 'a rule added on one table', change: (schema, table) => ({ sql: `CREATE RULE aipcs_extra AS ON INSERT TO "${schema}"."${table}" DO ALSO NOTIFY aipcs_extra`, asAdmin: false }) },
    { name: 'a policy added on one table', change: (schema, table) => ({ sql: `CREATE POLICY aipcs_extra ON "${schema}"."${table}" USING (true)`, asAdmin: false }) },
    { name: 'row security enabled on one table', change: (schema, table) => ({ sql: `ALTER TABLE "${schema}"."${table}" ENABLE ROW LEVEL SECURITY`, asAdmin: false }) },
    { name: 'a view added beside the tables', change: (schema, table) => ({ sql: `CREATE VIEW "${schema}"."aipcs_extra" AS SELECT * FROM "${schema}"."${table}"`, asAdmin: false }) },
    // Unlike a view, a sequence brings no rule: only the relation list shows it (mutation review BA).
    { name: 'a sequence added beside the tables', change: (schema) => ({ sql: `CREATE SEQUENCE "${schema}"."aipcs_extra"`, asAdmin: false }) },
  ];

  it.each(cases)('refuses to open a registry with $name', async ({ change }) => {
    await (await open()).close();
    const { sql, asAdmin } = change('aipcs_registry', 'aipcs_registry_claim');
    await queryRows(asAdmin ? fixture.adminUrl : fixture.db.url, sql);
    const error = await openPostgresStorage(fixture.options).then(
      (storage) => {
        opened.push(storage);
        return undefined;
      },
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(StorageFailure);
    expect((error as StorageFailure).kind).toBe('unavailable');
  });

  it.each(cases)('calls a service store with $name incompatible', async ({ change }) => {
    const storage = await open();
    const { locator, layout } = await materialisedNotesStore(storage);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
    const { sql, asAdmin } = change(locator.namespace, 'note');
    await queryRows(asAdmin ? fixture.adminUrl : fixture.db.url, sql);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'incompatible' });
    expect((await storage.stores.inspect(locator)).status).toBe('incompatible');
  });
});

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s store constraint drift', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);

  // Only pg_constraint.convalidated tells a NOT VALID foreign key from ours: its
  // definition is not part of the signature (mutation review BA: reading it
  // as always valid survived).
  it('calls a service store whose foreign key was re-added NOT VALID incompatible', async () => {
    const storage = await fixture.open();
    const { locator, layout } = await materialisedNotesStore(storage);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
    const ns = locator.namespace;
    await queryRows(
      fixture.db.url,
      `ALTER TABLE "${ns}"."note" DROP CONSTRAINT "note_project_fk",
         ADD CONSTRAINT "note_project_fk" FOREIGN KEY ("project_id") REFERENCES "${ns}"."project" ("id") ON DELETE RESTRICT ON UPDATE RESTRICT NOT DEFERRABLE NOT VALID`,
    );
    expect(await queryRows(fixture.db.url, `SELECT convalidated FROM pg_constraint WHERE conname = 'note_project_fk'`)).toEqual([{ convalidated: false }]);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'incompatible' });
    // Validated again, it is ours once more.
    await queryRows(fixture.db.url, `ALTER TABLE "${ns}"."note" VALIDATE CONSTRAINT "note_project_fk"`);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
  });
});

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s drifted store revision', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);

  it('reports the revision a drifted store names only when this build knows it', async () => {
    const storage = await fixture.open();
    const { locator } = await materialisedNotesStore(storage);
    const ready = await storage.stores.inspect(locator);
    expect(ready.status).toBe('ready');
    await queryRows(fixture.db.url, `ALTER TABLE "${locator.namespace}"."__aipcs_service_store_meta" ADD COLUMN "extra" text`);
    expect(await storage.stores.inspect(locator)).toMatchObject({ status: 'incompatible', appliedRevision: ready.appliedRevision });
    await queryRows(fixture.db.url, `UPDATE "${locator.namespace}"."__aipcs_service_store_meta" SET "applied_revision" = 99 WHERE "singleton" = 1`);
    expect(await storage.stores.inspect(locator)).toMatchObject({ status: 'incompatible', appliedRevision: null });
  });
});

// Mutation review BG: a data unit checks the store's binding from the meta row
// it reads anyway (assertStoreBinding); neither a revision this build does not
// apply nor a schema opened to PUBLIC after materialise was tested there.
describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s store binding of data units', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);

  it('refuses a store whose meta row names another revision, in observation and in a data unit', async () => {
    const storage = await fixture.open();
    const { locator, layout } = await materialisedNotesStore(storage);
    await queryRows(fixture.db.url, `UPDATE "${locator.namespace}"."__aipcs_service_store_meta" SET "applied_revision" = 2 WHERE "singleton" = 1`);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'incompatible' });
    await expect(storage.data.read(locator, 'agent-a', async () => 1)).rejects.toMatchObject({ kind: 'incompatible' });
  });

  it('refuses a data unit on a store whose schema was granted to PUBLIC after it was made', async () => {
    const storage = await fixture.open();
    const { locator } = await materialisedNotesStore(storage);
    expect(await storage.data.read(locator, 'agent-a', async () => 1)).toBe(1);
    await queryRows(fixture.db.url, `GRANT USAGE ON SCHEMA "${locator.namespace}" TO PUBLIC`);
    await expect(storage.data.read(locator, 'agent-a', async () => 1)).rejects.toMatchObject({ kind: 'incompatible' });
  });
});

// Mutation review BG: the REVOKEs after materialise and evolve only matter when
// the role's default privileges grant something to PUBLIC; nothing set any.
describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s default privileges for PUBLIC', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);

  it('keeps a materialised and an evolved store private, and ready, when the role grants PUBLIC by default', async () => {
    await queryRows(fixture.db.url, `ALTER DEFAULT PRIVILEGES GRANT USAGE ON SCHEMAS TO PUBLIC; ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO PUBLIC; ALTER DEFAULT PRIVILEGES GRANT USAGE ON SEQUENCES TO PUBLIC`);
    const storage = await fixture.open();
    const { locator, layout } = await materialisedNotesStore(storage);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
    const target = storeLayoutOf(manifest(notesManifestV2()));
    await storage.stores.evolve(locator, layout, target);
    expect(await storage.stores.observe(locator, target)).toEqual({ state: 'ready' });
    expect(await storage.data.read(locator, 'agent-a', async () => 1)).toBe(1);
  });
});
