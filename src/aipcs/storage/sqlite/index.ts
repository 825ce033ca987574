// Opens the SQLite backend behind the storage ports: migrates (serve) or
// only inspects (admin) the registry, and attaches the per-service stores.

import type { StoragePorts } from '../../core/application.js';
import { migrateSqliteRegistry } from './registry.js';
import { SqliteServiceData } from './service-data.js';
import { SqliteServiceStores } from './service-store.js';

export interface SqliteStorageOptions {
  readonly dataRoot: string;
  readonly busyTimeoutMs: number;
  readonly defaultRoot: boolean;
}

export async function openSqliteStorage(options: SqliteStorageOptions): Promise<StoragePorts> {
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
