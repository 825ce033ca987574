// Binds the storage conformance suites to the SQLite adapter: each test gets
// a fresh private data root in a temp folder.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStorage } from '../../src/aipcs/storage/sqlite/index.js';
import { branchesSuite } from './branches.suite.js';
import { discoverySuite } from './discovery.suite.js';
import { importReobserveSuite } from './import-reobserve.suite.js';
import type { StorageHarness } from './harness.js';
import { lifecycleSuite } from './lifecycle.suite.js';
import { maintenanceSuite } from './maintenance.suite.js';
import { modelSuite } from './model.suite.js';
import { operatorSuite } from './operator.suite.js';
import { recordsSuite } from './records.suite.js';

export const sqliteHarness = {
  name: 'sqlite',
  async create() {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-conformance-'));
    const dataRoot = join(base, 'data');
    return {
      open: () => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false }),
      destroy: async () => rmSync(base, { recursive: true, force: true }),
      removeFenceRow: async (namespace: string) => {
        const db = new Database(join(dataRoot, 'service-stores', `${namespace}.sqlite`));
        try {
          return db.prepare('DELETE FROM __aipcs_write_fence').run().changes;
        } finally {
          db.close();
        }
      },
      setFenceGeneration: async (namespace: string, generation: bigint) => {
        const db = new Database(join(dataRoot, 'service-stores', `${namespace}.sqlite`));
        try {
          return db.prepare('UPDATE __aipcs_write_fence SET generation = ?').run(generation).changes;
        } finally {
          db.close();
        }
      },
    };
  },
} satisfies StorageHarness;

lifecycleSuite(sqliteHarness);
recordsSuite(sqliteHarness);
branchesSuite(sqliteHarness);
discoverySuite(sqliteHarness);
maintenanceSuite(sqliteHarness);
modelSuite(sqliteHarness);
operatorSuite(sqliteHarness);
importReobserveSuite(sqliteHarness);
