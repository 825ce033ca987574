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
