// PostgreSQL adapter: admin storage opened read-only never removes a service
// store (service-store.ts, remove): it answers unavailable up front, for a
// store whose fence is still open and for one that is already absent alike,
// instead of classifying it first (incompatible, or a silent success). Written
// in mutation review R: deleting the read-only check survived the suite.

import { describe, expect, it } from 'vitest';
import { openPostgresStorageForAdmin } from '../../../../src/aipcs/storage/postgres/index.js';
import { materialisedNotesStore } from '../../../conformance/harness.js';
import { expectClustersUnderCi, postgresClusters, usePostgresStorage } from '../../../support/postgres.js';

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s read-only admin storage', (_version, cluster) => {
  const fixture = usePostgresStorage(cluster);

  it('refuses to remove a store, present or absent, as unavailable', async () => {
    const storage = await fixture.open();
    const { locator, layout } = await materialisedNotesStore(storage);
    const admin = await openPostgresStorageForAdmin(fixture.options, { writable: false });
    const ports = admin.ports;
    if (!ports) throw new Error('the registry is not ready');
    try {
      await expect(ports.stores.remove(locator, layout)).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(ports.stores.remove({ ...locator, namespace: `svc_${'0'.repeat(32)}` }, layout)).rejects.toMatchObject({ kind: 'unavailable' });
      expect(await ports.stores.inspect(locator)).toMatchObject({ status: 'ready' });
    } finally {
      await ports.close();
    }
  });
});
