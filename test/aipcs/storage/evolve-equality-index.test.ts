// An evolve that changes no structure but makes a field filterable (its
// retrieval_mode from annotation to exact, contract §4.11) must give the
// field its equality index. Equality indexes are outside the stores'
// structure signatures, so such a successor matched the store at once and
// the evolve returned before any DDL: the field was searched by scanning its
// table for good, on both backends (later evolves took it as indexed).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { OperatorStoragePorts } from '../../../src/aipcs/core/application.js';
import { openPostgresStorage } from '../../../src/aipcs/storage/postgres/index.js';
import { equalityIndexName as postgresEqualityIndexName } from '../../../src/aipcs/storage/postgres/service-store.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { equalityIndexName as sqliteEqualityIndexName } from '../../../src/aipcs/storage/sqlite/service-store.js';
import type { JsonObject } from '../../../src/common/json.js';
import { manifest, materialisedNotes } from '../../conformance/harness.js';
import { notesManifest, notesManifestV2 } from '../../support/manifests.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters, queryRows, type TestDatabase } from '../../support/postgres.js';

/** notesManifest at schema 2 with only `note.detail` changed from an annotation to an exact field. */
function detailMadeFilterable(): JsonObject {
  const base = notesManifest();
  const entities = base['entities'] as JsonObject[];
  const note = entities[1] as JsonObject;
  const attributes = (note['attributes'] as JsonObject[]).map((attribute) => (attribute['name'] === 'detail' ? { name: 'detail', type: 'string' } : attribute));
  return {
    ...base,
    schema_version: 2n,
    entities: [entities[0] as JsonObject, { ...note, attributes }],
    migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['note.detail becomes filterable'] }],
  };
}

async function evolvedTwice(storage: OperatorStoragePorts): Promise<{ namespace: string; found: JsonObject[] }> {
  const { app, serviceId, namespace } = await materialisedNotes(storage);
  await app.records.create({ serviceId, entityName: 'note', record: { title: 'One', detail: 'needle' }, idempotencyKey: 'r1' });
  const evolve = () => app.lifecycle.evolve({ serviceId, manifest: manifest(detailMadeFilterable()), expectedServiceRevision: 3n, expectedSchemaVersion: 1n, idempotencyKey: 'e' });
  await evolve();
  // The same key again (a retry after a lost answer) replays and changes nothing.
  await evolve();
  const found = (await app.records.list({ serviceId, entityName: 'note', limit: 50, cursor: null, branch: null, filters: { detail: 'needle' } }))['records'] as JsonObject[];
  return { namespace, found };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('an evolve that only makes a field filterable', () => {
  it('indexes it on SQLite', async () => {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-evolve-eq-'));
    cleanups.push(async () => rmSync(base, { recursive: true, force: true }));
    const dataRoot = join(base, 'data');
    const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    const { namespace, found } = await evolvedTwice(storage).finally(() => storage.close());
    expect(found.map((record) => (record['fields'] as JsonObject)['title'])).toEqual(['One']);
    const db = new Database(join(dataRoot, 'service-stores', `${namespace}.sqlite`), { readonly: true });
    try {
      const names = (db.prepare(`SELECT name FROM pragma_index_list('note')`).all() as { name: string }[]).map((row) => row.name);
      expect(names).toContain(sqliteEqualityIndexName('note', 'detail'));
    } finally {
      db.close();
    }
  });

  expectClustersUnderCi();
  for (const cluster of postgresClusters()) {
    it(`indexes it on PostgreSQL ${cluster.version}`, async () => {
      const db: TestDatabase = await createTestDatabase(cluster);
      cleanups.push(() => db.drop());
      const storage = await openPostgresStorage({ dsn: db.url, connectTimeoutSeconds: 5, lockTimeoutMs: 2000, statementTimeoutMs: 10000 });
      const { namespace, found } = await evolvedTwice(storage).finally(() => storage.close());
      expect(found.map((record) => (record['fields'] as JsonObject)['title'])).toEqual(['One']);
      const names = (await queryRows<{ indexname: string }>(db.url, `SELECT indexname FROM pg_indexes WHERE schemaname = '${namespace}'`)).map((row) => row.indexname);
      expect(names).toContain(postgresEqualityIndexName('note', 'detail'));
    });
  }
});

// The same on a structural evolve: a field appended to an existing entity gets
// its equality index with its column, the new entity with its table.
describe('an evolve that appends a filterable field to an existing entity', () => {
  it('indexes it on SQLite', async () => {
    const base = mkdtempSync(join(tmpdir(), 'aipcs-evolve-eq-'));
    cleanups.push(async () => rmSync(base, { recursive: true, force: true }));
    const dataRoot = join(base, 'data');
    const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    const namespace = await (async () => {
      const { app, serviceId, namespace } = await materialisedNotes(storage);
      await app.lifecycle.evolve({ serviceId, manifest: manifest(notesManifestV2()), expectedServiceRevision: 3n, expectedSchemaVersion: 1n, idempotencyKey: 'e' });
      return namespace;
    })().finally(() => storage.close());
    const db = new Database(join(dataRoot, 'service-stores', `${namespace}.sqlite`), { readonly: true });
    try {
      const names = (table: string) => (db.prepare(`SELECT name FROM pragma_index_list(?)`).all(table) as { name: string }[]).map((row) => row.name);
      expect(names('note')).toContain(sqliteEqualityIndexName('note', 'summary'));
      expect(names('person')).toContain(sqliteEqualityIndexName('person', 'full_name'));
    } finally {
      db.close();
    }
  });
});
