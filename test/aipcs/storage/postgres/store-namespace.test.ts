// PostgreSQL adapter: a service store's namespace is exactly `svc_` and 32
// lower-case hex digits (service-store.ts, schemaOf). A name that only starts
// like one, even of a schema that does not exist, is refused as unavailable
// rather than observed as uninitialised. Written in mutation review
// R: an unanchored pattern survived the suite.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../../../src/aipcs/core/application.js';
import { storeLayoutOf } from '../../../../src/aipcs/core/layout.js';
import { openPostgresStorage } from '../../../../src/aipcs/storage/postgres/index.js';
import { manifest } from '../../../conformance/harness.js';
import { notesManifest } from '../../../support/manifests.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, type TestDatabase } from '../../../support/postgres.js';

const timeouts = { connectTimeoutSeconds: 5, lockTimeoutMs: 2000, statementTimeoutMs: 10000 };

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s store namespace', (_version, cluster) => {
  let db: TestDatabase;
  let storage: StoragePorts;

  beforeEach(async () => {
    db = await createTestDatabase(cluster);
    storage = await openPostgresStorage({ dsn: db.url, ...timeouts });
  });

  afterEach(async () => {
    await storage.close();
    await db.drop();
  });

  it.each([`svc_${'0'.repeat(32)}_x`, `svc_${'0'.repeat(33)}`, `svc_${'0'.repeat(32)}\n`])('refuses the namespace %j', async (namespace) => {
    const locator = { backend: 'postgresql' as const, namespace };
    const layout = storeLayoutOf(manifest(notesManifest()));
    // The well-formed name of a schema that does not exist is uninitialised.
    expect(await storage.stores.observe({ ...locator, namespace: `svc_${'0'.repeat(32)}` }, layout)).toEqual({ state: 'uninitialised' });
    expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'unavailable' });
  });
});
