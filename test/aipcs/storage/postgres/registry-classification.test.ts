// PostgreSQL adapter: how the registry's own rows classify it
// (registry.ts, classifyRegistry): a migration history that is not exactly
// this build's makes the registry incompatible at the revision its meta names,
// and the admin view opens ports only over a ready registry. Written in
// mutation review R: these survived deleting the check.

import { describe, expect, it } from 'vitest';
import { openPostgresStorage, openPostgresStorageForAdmin, type PostgresStorageOptions } from '../../../../src/aipcs/storage/postgres/index.js';
import { expectClustersUnderCi, postgresClusters, queryRows, usePostgresStorage } from '../../../support/postgres.js';

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s registry classification', (_version, cluster) => {
  const fixture = usePostgresStorage(cluster);
  const withRegistry = async (change: string, check: (options: PostgresStorageOptions) => Promise<void>): Promise<void> => {
    const { options } = fixture;
    await (await openPostgresStorage(options)).close();
    const ready = await openPostgresStorageForAdmin(options, { writable: false });
    expect(ready.registry).toMatchObject({ status: 'ready' });
    expect(ready.ports).not.toBeNull();
    await ready.ports?.close();
    await queryRows(fixture.db.url, change);
    await check(options);
  };

  it.each([
    ['a migration row of another migration', `UPDATE aipcs_registry.aipcs_registry_migration SET migration_id = 'someone-else'`],
    ['no migration row', `DELETE FROM aipcs_registry.aipcs_registry_migration`],
  ])('calls a registry with %s incompatible and never starts on it', async (_name, change) => {
    await withRegistry(change, async (options) => {
      const inspected = await openPostgresStorageForAdmin(options, { writable: false });
      expect(inspected.registry).toMatchObject({ status: 'incompatible', appliedRevision: 1n });
      expect(inspected.ports).toBeNull();
      await expect(openPostgresStorage(options)).rejects.toMatchObject({ kind: 'unavailable' });
    });
  });

  // Each row-level fact of meta and history on its own (mutation review BA:
  // each survived removing its check). A meta row that names another adapter
  // or a revision this build does not know reports no revision at all.
  it.each([
    ['a second migration row after ours', `INSERT INTO aipcs_registry.aipcs_registry_migration VALUES (2, 'postgresql-registry-0002-later', 0)`, 1n],
    ['our migration id under another revision', `UPDATE aipcs_registry.aipcs_registry_migration SET revision = 7`, 1n],
    ['a meta row naming a revision this build does not know', `UPDATE aipcs_registry.aipcs_registry_meta SET applied_revision = 2`, null],
    ['a meta row naming another adapter', `UPDATE aipcs_registry.aipcs_registry_meta SET adapter_id = 'aipcs.postgresql.other'`, null],
    ['a drifted table whose meta row still names our revision', `ALTER TABLE aipcs_registry.aipcs_registry_receipt ADD COLUMN extra text`, 1n],
    [
      'a drifted table whose meta row names another adapter',
      `ALTER TABLE aipcs_registry.aipcs_registry_receipt ADD COLUMN extra text; UPDATE aipcs_registry.aipcs_registry_meta SET adapter_id = 'aipcs.postgresql.other'`,
      null,
    ],
    ['a meta table that lost its revision column', `ALTER TABLE aipcs_registry.aipcs_registry_meta DROP COLUMN applied_revision`, null],
  ])('calls a registry with %s incompatible, never dirty or unavailable', async (_name, change, appliedRevision) => {
    await withRegistry(change, async (options) => {
      const inspected = await openPostgresStorageForAdmin(options, { writable: false });
      expect(inspected.registry).toEqual({ status: 'incompatible', appliedRevision, targetRevision: 1n, reason: null });
      expect(inspected.ports).toBeNull();
      await expect(openPostgresStorage(options)).rejects.toMatchObject({ kind: 'unavailable' });
    });
  });

  // Drift only one column of the catalog signature or one clause of the
  // ownership check shows (mutation review BA: each survived hiding it).
  it.each([
    [
      'a check constraint replaced by the same one NOT VALID',
      `ALTER TABLE aipcs_registry.aipcs_registry_receipt DROP CONSTRAINT aipcs_registry_receipt_export_format_version_check,
         ADD CONSTRAINT aipcs_registry_receipt_export_format_version_check CHECK (export_format_version = 1) NOT VALID`,
      1n,
    ],
    ['a column default', `ALTER TABLE aipcs_registry.aipcs_registry_receipt ALTER COLUMN created_at SET DEFAULT 0`, 1n],
    [
      'a unique index rebuilt with NULLS NOT DISTINCT',
      `DROP INDEX aipcs_registry.aipcs_registry_claim_active_service;
       CREATE UNIQUE INDEX aipcs_registry_claim_active_service ON aipcs_registry.aipcs_registry_claim (service_id) NULLS NOT DISTINCT WHERE phase IN ('prepared', 'recovery_required')`,
      1n,
    ],
    // Its index bears the ignored prefix of equality indexes, so only the constraint list shows it.
    ['an exclusion constraint named like an equality index', `ALTER TABLE aipcs_registry.aipcs_registry_claim ADD CONSTRAINT "__aipcs_eq_extra" EXCLUDE USING btree (principal_id WITH =)`, 1n],
    // A unique index refuses rows whatever its name: never ignored as an equality index is.
    ['a unique index named like an equality index', `CREATE UNIQUE INDEX "__aipcs_eq_extra" ON aipcs_registry.aipcs_registry_claim (service_id)`, 1n],
    ['a function in the schema', `CREATE FUNCTION aipcs_registry.aipcs_extra() RETURNS integer LANGUAGE sql AS 'SELECT 1'`, 1n],
    ['a free-standing type in the schema', `CREATE TYPE aipcs_registry.aipcs_extra AS ENUM ('a')`, 1n],
    ['row security forced, though not enabled, on one table', `ALTER TABLE aipcs_registry.aipcs_registry_claim FORCE ROW LEVEL SECURITY`, 1n],
    ['CREATE alone on the schema granted to PUBLIC', `GRANT CREATE ON SCHEMA aipcs_registry TO PUBLIC`, null],
  ])('calls a registry with %s incompatible', async (_name, change, appliedRevision) => {
    await withRegistry(change, async (options) => {
      const inspected = await openPostgresStorageForAdmin(options, { writable: false });
      expect(inspected.registry).toEqual({ status: 'incompatible', appliedRevision, targetRevision: 1n, reason: null });
      expect(inspected.ports).toBeNull();
      await expect(openPostgresStorage(options)).rejects.toMatchObject({ kind: 'unavailable' });
    });
  });

  it('calls an empty registry schema someone else made incompatible at revision 0, and leaves it empty', async () => {
    const { options } = fixture;
    await queryRows(fixture.db.url, `CREATE SCHEMA aipcs_registry; REVOKE ALL ON SCHEMA aipcs_registry FROM PUBLIC`);
    const inspected = await openPostgresStorageForAdmin(options, { writable: false });
    expect(inspected.registry).toEqual({ status: 'incompatible', appliedRevision: 0n, targetRevision: 1n, reason: null });
    expect(inspected.ports).toBeNull();
    await expect(openPostgresStorage(options)).rejects.toMatchObject({ kind: 'unavailable' });
    expect(await queryRows(fixture.db.url, `SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = 'aipcs_registry'::regnamespace`)).toEqual([{ n: 0 }]);
  });

  it('opens no admin ports over a dirty registry', async () => {
    await withRegistry(`UPDATE aipcs_registry.aipcs_registry_meta SET dirty = true`, async (options) => {
      for (const writable of [false, true]) {
        const inspected = await openPostgresStorageForAdmin(options, { writable });
        expect(inspected.registry).toMatchObject({ status: 'dirty', appliedRevision: 1n });
        expect(inspected.ports).toBeNull();
      }
    });
  });
});
