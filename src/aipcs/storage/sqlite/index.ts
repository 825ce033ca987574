// Opens the SQLite backend behind the storage ports: migrates (serve) or
// only inspects (admin) the registry, and attaches the per-service stores.
// The admin opening never creates a directory or file and never migrates.

import type { OperatorStoragePorts } from '../../core/application.js';
import type { MigrationState } from '../../core/ports.js';
import { checkRootText } from './location.js';
import { migrateSqliteRegistry, openSqliteRegistryForAdmin } from './registry.js';
import { SqliteServiceData } from './service-data.js';
import { SqliteServiceStores } from './service-store.js';

export interface SqliteStorageOptions {
  readonly dataRoot: string;
  readonly busyTimeoutMs: number;
  readonly defaultRoot: boolean;
  /** Idle service-store connections kept open (tests set it low; see SqliteServiceStores). */
  readonly maxOpenStores?: number | undefined;
  /** Schema objects the open service stores hold together (tests set it low; see SqliteServiceStores). */
  readonly maxOpenSchemaObjects?: number | undefined;
}

export async function openSqliteStorage(options: SqliteStorageOptions): Promise<OperatorStoragePorts> {
  const registry = await migrateSqliteRegistry(options);
  const stores = new SqliteServiceStores(options);
  return {
    backend: 'sqlite',
    registry,
    stores,
    data: new SqliteServiceData(stores),
    async close() {
      await stores.close();
      await registry.close();
    },
  };
}

export interface SqliteAdminStorage {
  /** The registry as inspection found it. */
  readonly registry: MigrationState;
  /** Open only when the registry is ready. */
  readonly ports: OperatorStoragePorts | null;
}

/**
 * The admin commands' storage: the registry is inspected and, only when it
 * is ready, opened (read-only for the inspection commands, writable for the
 * operator commands). Throws UnsafeLocationError for a root the location
 * policy's textual rules reject.
 */
export async function openSqliteStorageForAdmin(options: SqliteStorageOptions, mode: { writable: boolean }): Promise<SqliteAdminStorage> {
  const opened = await openSqliteRegistryForAdmin(options, mode);
  const registry = opened.registry;
  if (!registry) return { registry: opened.state, ports: null };
  const stores = new SqliteServiceStores({ dataRoot: options.dataRoot, busyTimeoutMs: options.busyTimeoutMs, readonly: !mode.writable, maxOpenStores: options.maxOpenStores, maxOpenSchemaObjects: options.maxOpenSchemaObjects });
  return {
    registry: opened.state,
    ports: {
      backend: 'sqlite',
      registry,
      stores,
      data: new SqliteServiceData(stores),
      async close() {
        await stores.close();
        await registry.close();
      },
    },
  };
}

/**
 * The location policy's textual rules for a data root, which composition
 * applies (ops spec §1.8): throws UnsafeLocationError for a root they
 * reject. What is on disk is the registry's state, not composition's.
 */
export function checkSqliteDataRootText(options: Pick<SqliteStorageOptions, 'dataRoot'>): void {
  checkRootText(options.dataRoot);
}
