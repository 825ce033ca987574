// Mutation-testing gap (review mutD): a unit that waits its whole connect
// timeout in the pool's own queue, behind units holding every pooled
// connection, is contention (busy), not an outage.

import { describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../../src/aipcs/core/ports.js';
import { PostgresConnection } from '../../../../src/aipcs/storage/postgres/connection.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters } from '../../../support/postgres.js';

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('a full pool on PostgreSQL %s', (_version, cluster) => {
  it('fails a unit that waited the connect timeout for a pooled connection as busy', async () => {
    const db = await createTestDatabase(cluster);
    const connection = new PostgresConnection({ dsn: db.url, connectTimeoutSeconds: 1, lockTimeoutMs: 1000, statementTimeoutMs: 5000, maxConnections: 1 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const holder = connection.transaction('read', async () => {
      entered();
      await held;
    });
    try {
      await inside;
      const error = await connection.transaction('read', (session) => session.rows('SELECT 1')).then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(StorageFailure);
      expect((error as StorageFailure).kind).toBe('busy');
    } finally {
      release();
      await holder;
      await connection.close();
      await db.drop();
    }
  });
});
