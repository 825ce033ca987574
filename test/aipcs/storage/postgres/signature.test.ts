// The catalog signature of our own DDL (what observation compares a schema
// against) must not depend on the server's major version: a registry or
// store created on 16 or 17 then upgraded to 18 must still read as ready.
// Runs when the global setup started more than one cluster (CI: 16,17,18).

import { describe, expect, it } from 'vitest';
import { storeLayoutOf } from '../../../../src/aipcs/core/layout.js';
import { probeSignature } from '../../../../src/aipcs/storage/postgres/catalog.js';
import { PostgresConnection } from '../../../../src/aipcs/storage/postgres/connection.js';
import { registryDdl } from '../../../../src/aipcs/storage/postgres/registry.js';
import { storeDdl } from '../../../../src/aipcs/storage/postgres/service-store.js';
import { manifest } from '../../../conformance/harness.js';
import { notesManifest, notesManifestV2 } from '../../../support/manifests.js';
import { createTestDatabase, postgresClusters } from '../../../support/postgres.js';

const clusters = postgresClusters();

describe('catalog signatures across PostgreSQL majors', () => {
  it.skipIf(clusters.length < 2)(`are identical on ${clusters.map((cluster) => cluster.version).join(', ')}`, async () => {
    const layouts = [storeLayoutOf(manifest(notesManifest())), storeLayoutOf(manifest(notesManifestV2()))];
    const signatures: string[][] = [];
    for (const cluster of clusters) {
      const db = await createTestDatabase(cluster);
      const connection = new PostgresConnection({ dsn: db.url, connectTimeoutSeconds: 5, lockTimeoutMs: 2000, statementTimeoutMs: 10000 });
      try {
        const found = [await probeSignature(connection, registryDdl)];
        for (const layout of layouts) found.push(await probeSignature(connection, (schema) => storeDdl(schema, layout)));
        signatures.push(found);
      } finally {
        await connection.close();
        await db.drop();
      }
    }
    for (const other of signatures.slice(1)) expect(other).toEqual(signatures[0]);
  });
});
