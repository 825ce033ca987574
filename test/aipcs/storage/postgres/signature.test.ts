// The expected catalog signatures are rendered from a description of what our
// DDL makes (src/aipcs/storage/postgres/catalog-shapes.ts and the entity
// tables of a layout), so that comparing a schema never builds anything
// (operations spec §3.3.3: inspection runs no DDL). Here the DDL is built on
// every cluster the global setup started (CI: 16, 17 and 18) and the server's
// own description of it must equal the rendered one, for the registry, a
// store's bookkeeping tables and stores of several layouts, evolved ones too.

import { describe, expect, it } from 'vitest';
import { storeLayoutOf } from '../../../../src/aipcs/core/layout.js';
import type { StoreLayout } from '../../../../src/aipcs/core/ports.js';
import { shapeSignature } from '../../../../src/aipcs/storage/postgres/catalog.js';
import { FOUNDATION_SHAPE, REGISTRY_SHAPE } from '../../../../src/aipcs/storage/postgres/catalog-shapes.js';
import { PostgresConnection } from '../../../../src/aipcs/storage/postgres/connection.js';
import { quoteIdentifier } from '../../../../src/aipcs/storage/shared/statements.js';
import { registryDdl } from '../../../../src/aipcs/storage/postgres/registry.js';
import { bookkeepingDdl, bookkeepingKeysDdl, evolutionDdl, PostgresServiceStores, storeDdl } from '../../../../src/aipcs/storage/postgres/service-store.js';
import type { JsonObject } from '../../../../src/common/json.js';
import { manifest } from '../../../conformance/harness.js';
import { notesManifest, notesManifestV2, serverManaged, systemColumnNamesManifest } from '../../../support/manifests.js';
import { createTestDatabase, expectClustersUnderCi, postgresClusters } from '../../../support/postgres.js';
import { probeSignature } from '../../../support/postgres-probe.js';

const clusters = postgresClusters();

/** Field names PostgreSQL quotes (keywords of several categories), text and datetime keys hashed in one index, references of every kind. */
function edgeManifest(evolved: boolean): JsonObject {
  return {
    manifest_version: 2n,
    schema_version: evolved ? 2n : 1n,
    entities: [
      {
        name: 'topic',
        attributes: [...serverManaged(), { name: 'user', type: 'string', required: true }, { name: 'parent_id', type: 'uuid' }, { name: 'order', type: 'integer' }],
      },
      {
        name: 'entry',
        attributes: [
          ...serverManaged(),
          { name: 'title', type: 'string', required: true },
          { name: 'when', type: 'datetime' },
          { name: 'between', type: 'number' },
          { name: 'default', type: 'boolean' },
          { name: 'json_table', type: 'string' },
          { name: 'topic_id', type: 'uuid', required: true },
          { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
          { name: 'body', type: 'string', retrieval_mode: 'annotation' },
          ...(evolved ? [{ name: 'select', type: 'string' }, { name: 'other_topic_id', type: 'uuid' }] : []),
        ],
      },
    ],
    relationships: [
      { name: 'topic_parent_fk', from: { entity: 'topic', field: 'parent_id' }, to: { entity: 'topic', field: 'id' }, on_delete: 'restrict' },
      { name: 'entry_topic_fk', from: { entity: 'entry', field: 'topic_id' }, to: { entity: 'topic', field: 'id' }, on_delete: 'restrict' },
      ...(evolved ? [{ name: 'entry_other_fk', from: { entity: 'entry', field: 'other_topic_id' }, to: { entity: 'topic', field: 'id' }, on_delete: 'restrict' }] : []),
    ],
    indices: [
      { name: 'entry_title_when', entity: 'entry', fields: ['title', 'when', 'between', 'topic_id'], unique: true },
      { name: 'entry_default', entity: 'entry', fields: ['default'] },
      { name: 'topic_user', entity: 'topic', fields: ['user', 'order'] },
      ...(evolved ? [{ name: 'entry_select', entity: 'entry', fields: ['select', 'json_table'] }] : []),
    ],
    ...(evolved ? { migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['add entry.select, entry.other_topic_id'] }] } : {}),
  };
}

/** The rows of a signature, one per line, so that a difference shows as a readable diff. */
const rows = (signature: string): string[] => Object.entries(JSON.parse(signature) as Record<string, unknown[]>).flatMap(([part, list]) => list.map((row) => `${part} ${JSON.stringify(row)}`));

expectClustersUnderCi();

describe.each(clusters.map((cluster) => [cluster.version, cluster] as const))('catalog signatures on PostgreSQL %s', (_version, cluster) => {
  it('the server describes our DDL exactly as the rendered shapes do', async () => {
    const pairs = [
      [edgeManifest(false), edgeManifest(true)],
      [notesManifest(), notesManifestV2()],
      [systemColumnNamesManifest(false), systemColumnNamesManifest(true)],
    ].map(([before, after]) => [storeLayoutOf(manifest(before!)), storeLayoutOf(manifest(after!))] as const);
    const db = await createTestDatabase(cluster);
    const connection = new PostgresConnection({ dsn: db.url, connectTimeoutSeconds: 5, lockTimeoutMs: 2000, statementTimeoutMs: 10000 });
    const stores = new PostgresServiceStores(connection);
    const rendered = (layout: StoreLayout) => stores.expectedSignature(layout);
    try {
      expect(rows(await probeSignature(connection, registryDdl))).toEqual(rows(shapeSignature(REGISTRY_SHAPE)));
      const foundation = (schema: string) => [`CREATE SCHEMA ${quoteIdentifier(schema)}`, ...bookkeepingDdl(schema), ...bookkeepingKeysDdl(schema)];
      expect(rows(await probeSignature(connection, foundation, '__aipcs_'))).toEqual(rows(shapeSignature(FOUNDATION_SHAPE)));
      for (const [before, after] of pairs) {
        expect(rows(await probeSignature(connection, (schema) => storeDdl(schema, before)))).toEqual(rows(await rendered(before)));
        expect(rows(await probeSignature(connection, (schema) => storeDdl(schema, after)))).toEqual(rows(await rendered(after)));
        // An evolved store must read as a fresh store of its new layout.
        const evolved = (schema: string) => [...storeDdl(schema, before), ...evolutionDdl(schema, before, after)];
        expect(rows(await probeSignature(connection, evolved))).toEqual(rows(await rendered(after)));
      }
    } finally {
      await connection.close();
      await db.drop();
    }
  });
});
