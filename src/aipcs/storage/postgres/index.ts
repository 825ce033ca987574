// Opens the PostgreSQL backend behind the storage ports: one pool for the
// registry and every service schema, the registry migrated (serve) before
// anything else runs. Failures surface as StorageFailure only, with causes
// that never carry the DSN.

import type { StoragePorts } from '../../core/application.js';
import { StorageFailure } from '../../core/ports.js';
import { SignatureCache } from './catalog.js';
import { PostgresConnection } from './connection.js';
import { inspectPostgresRegistry, migratePostgresRegistry, type RegistryStatus } from './registry.js';
import { PostgresServiceData } from './service-data.js';
import { PostgresServiceStores } from './service-store.js';

export interface PostgresStorageOptions {
  /** The connection string, read by composition from the variable named by --postgres-dsn-env. */
  readonly dsn: string;
  readonly connectTimeoutSeconds: number;
  readonly lockTimeoutMs: number;
  readonly statementTimeoutMs: number;
  /** Pool size (default 10). */
  readonly maxConnections?: number;
  /** Clock for the registry's migration history; defaults to the wall clock. */
  nowMicros?(): bigint;
}

function connect(options: PostgresStorageOptions): PostgresConnection {
  try {
    return new PostgresConnection(options);
  } catch (error) {
    // The driver may throw while parsing the DSN: keep nothing of its text.
    throw error instanceof StorageFailure ? error : new StorageFailure('unavailable');
  }
}

/**
 * Connects, checks the server (PostgreSQL 16-18, UTF8), migrates the
 * registry when needed and returns the ports. Rejects with
 * StorageFailure('unavailable' | 'busy') otherwise; nothing is left open.
 */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<StoragePorts> {
  const connection = connect(options);
  try {
    const signatures = new SignatureCache(connection);
    const now = options.nowMicros ?? (() => BigInt(Date.now()) * 1000n);
    const registry = await migratePostgresRegistry(connection, signatures, now);
    const stores = new PostgresServiceStores(connection, signatures);
    return {
      backend: 'postgresql',
      registry,
      stores,
      data: new PostgresServiceData(connection),
      async close() {
        await stores.close();
        await registry.close();
        await connection.close();
      },
    };
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error instanceof StorageFailure ? error : new StorageFailure('unavailable');
  }
}

/** Classifies the registry of a database without creating or migrating anything (admin reads). */
export async function inspectPostgresStorage(options: PostgresStorageOptions): Promise<RegistryStatus> {
  const connection = connect(options);
  try {
    return await inspectPostgresRegistry(connection, new SignatureCache(connection));
  } catch (error) {
    throw error instanceof StorageFailure ? error : new StorageFailure('unavailable');
  } finally {
    await connection.close().catch(() => undefined);
  }
}
