// PostgreSQL adapter: a service store's namespace is exactly `svc_` and 32
// lower-case hex digits (service-store.ts, schemaOf). A name that only starts
// like one, even of a schema that does not exist, is refused as unavailable
// rather than observed as uninitialised. Written in mutation review
// R: an unanchored pattern survived the suite. Review BG: so did a locator
// of another backend with a well-formed name.

import { beforeEach, describe, expect, it } from 'vitest';
import type { OperatorStoragePorts } from '../../../../src/aipcs/core/application.js';
import { storeLayoutOf } from '../../../../src/aipcs/core/layout.js';
import { manifest } from '../../../conformance/harness.js';
import { notesManifest } from '../../../support/manifests.js';
import { expectClustersUnderCi, postgresClusters, queryRows, usePostgresStorage } from '../../../support/postgres.js';

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s store namespace', (_version, cluster) => {
  const fixture = usePostgresStorage(cluster);
  let storage: OperatorStoragePorts;

  beforeEach(async () => {
    storage = await fixture.open();
  });

  it.each([`svc_${'0'.repeat(32)}_x`, `svc_${'0'.repeat(33)}`, `svc_${'0'.repeat(32)}\n`])('refuses the namespace %j', async (namespace) => {
    const locator = { backend: 'postgresql' as const, namespace };
    const layout = storeLayoutOf(manifest(notesManifest()));
    // The well-formed name of a schema that does not exist is uninitialised.
    expect(await storage.stores.observe({ ...locator, namespace: `svc_${'0'.repeat(32)}` }, layout)).toEqual({ state: 'uninitialised' });
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'unavailable' });
  });
  // Mutation review BG: the stores port took a well-formed name of another backend's locator as its own.
  it('refuses a locator of another backend, even one with a well-formed namespace', async () => {
    const locator = { backend: 'sqlite' as const, namespace: `svc_${'0'.repeat(32)}` };
    const layout = storeLayoutOf(manifest(notesManifest()));
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'unavailable' });
    await expect(storage.stores.materialise(locator, layout)).rejects.toMatchObject({ kind: 'unavailable' });
    expect((await queryRows(fixture.db.url, `SELECT 1 FROM pg_namespace WHERE nspname = '${locator.namespace}'`)).length).toBe(0);
  });
  // Mutation review BG: removing an empty schema of the role's own under a store's name was untested.
  it('removes an empty schema of its own under the store name, as absent', async () => {
    const locator = { backend: 'postgresql' as const, namespace: `svc_${'1'.repeat(32)}` };
    await queryRows(fixture.db.url, `CREATE SCHEMA "${locator.namespace}"`);
    await storage.stores.remove(locator, storeLayoutOf(manifest(notesManifest())));
    expect((await queryRows(fixture.db.url, `SELECT 1 FROM pg_namespace WHERE nspname = '${locator.namespace}'`)).length).toBe(0);
  });
  // Mutation review BG: materialise takes the store lock before it looks, so two
  // racing materialisations of one store converge; without it, one failed.
  it('lets two racing materialisations of one store both succeed on one store', async () => {
    const locator = { backend: 'postgresql' as const, namespace: `svc_${'2'.repeat(32)}` };
    const layout = storeLayoutOf(manifest(notesManifest()));
    const other = await fixture.open();
    await Promise.all([storage.stores.materialise(locator, layout), other.stores.materialise(locator, layout)]);
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
  });
});
