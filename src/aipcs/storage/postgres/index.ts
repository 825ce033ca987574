// Opens the PostgreSQL backend behind the storage ports: one pool for the
// registry and every service schema; `serve` migrates the registry before
// anything else runs, the admin opening only inspects it. Failures surface
// as StorageFailure only, with causes that never carry the DSN.

import type { OperatorStoragePorts } from '../../core/application.js';
import { StorageFailure, type MigrationState } from '../../core/ports.js';
import { PostgresConnection } from './connection.js';
import { inspectPostgresRegistry, migratePostgresRegistry, type PostgresRegistry } from './registry.js';
import { PostgresServiceData } from './service-data.js';
import { PostgresServiceStores } from './service-store.js';
import { unavailableState } from '../shared/migration-state.js';

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

function connect(options: PostgresStorageOptions, readOnly: boolean): PostgresConnection {
  try {
    return new PostgresConnection({ ...options, readOnly });
  } catch (error) {
    // The driver may throw while parsing the DSN: keep nothing of its text.
    throw error instanceof StorageFailure ? error : new StorageFailure('unavailable');
  }
}

function portsOver(connection: PostgresConnection, registry: PostgresRegistry): OperatorStoragePorts {
  const stores = new PostgresServiceStores(connection);
  return {
    backend: 'postgresql',
    registry,
    stores,
    data: new PostgresServiceData(connection, stores),
    async close() {
      await stores.close();
      await registry.close();
      await connection.close();
    },
  };
}

/**
 * `serve`: connects, checks the server (PostgreSQL 16-18, UTF8), migrates
 * the registry when needed and returns the ports. Rejects with
 * StorageFailure('unavailable' | 'busy') otherwise; nothing is left open.
 */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<OperatorStoragePorts> {
  const connection = connect(options, false);
  try {
    const now = options.nowMicros ?? (() => BigInt(Date.now()) * 1000n);
    const registry = await migratePostgresRegistry(connection, now);
    return portsOver(connection, registry);
  } catch (error) {
    await connection.close().catch(() => undefined);
    throw error instanceof StorageFailure ? error : new StorageFailure('unavailable');
  }
}

export interface PostgresAdminStorage {
  /** The registry as inspection found it. */
  readonly registry: MigrationState;
  /** Open only when the registry is ready. */
  readonly ports: OperatorStoragePorts | null;
}

/**
 * The admin commands' storage: the registry is inspected (never created or
 * migrated) and, only when it is ready, opened. With `writable: false` every
 * unit runs READ ONLY. An unreachable server or unsupported version shows as
 * an unavailable registry rather than an exception.
 */
export async function openPostgresStorageForAdmin(options: PostgresStorageOptions, mode: { readonly writable: boolean }): Promise<PostgresAdminStorage> {
  let connection: PostgresConnection;
  try {
    connection = connect(options, !mode.writable);
  } catch (error) {
    return { registry: unavailableState(error), ports: null };
  }
  const { state, registry } = await inspectPostgresRegistry(connection);
  if (!registry) {
    await connection.close().catch(() => undefined);
    return { registry: state, ports: null };
  }
  return { registry: state, ports: portsOver(connection, registry) };
}
