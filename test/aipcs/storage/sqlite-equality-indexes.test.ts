// SQLite store layout: every filterable scalar field gets its own equality
// index, also when entity and field names joined with "__" would read alike
// ("a__b"."c" and "a"."b__c").

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { appOver, manifest } from '../../conformance/harness.js';
import { serverManaged } from '../../support/manifests.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

it('indexes fields whose entity and field names share a "__" join', async () => {
  const base = mkdtempSync(join(tmpdir(), 'aipcs-eq-index-'));
  folders.push(base);
  const dataRoot = join(base, 'data');
  const storage = await openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
  try {
    const app = appOver(storage);
    const seeded = await app.lifecycle.seed({ domainName: 'names', domainClass: 'test', intentDescription: 'Names.', idempotencyKey: 's' });
    const serviceId = seeded['service_id'] as string;
    const document = {
      manifest_version: 2n,
      schema_version: 1n,
      entities: [
        { name: 'a__b', attributes: [...serverManaged(), { name: 'c', type: 'string' }] },
        { name: 'a', attributes: [...serverManaged(), { name: 'b__c', type: 'string' }] },
      ],
    };
    await app.lifecycle.design({ serviceId, manifest: manifest(document), idempotencyKey: 'd' });
    await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' });
  } finally {
    await storage.close();
  }
  const stores = join(dataRoot, 'service-stores');
  const file = readdirSync(stores).find((name) => name.endsWith('.sqlite'));
  const db = new Database(join(stores, file as string), { readonly: true, fileMustExist: true });
  try {
    const plan = (table: string, column: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN SELECT * FROM "${table}" WHERE "${column}" = 'x' ORDER BY "id"`).all() as { detail: string }[]).map((row) => row.detail).join('\n');
    expect(plan('a__b', 'c')).toMatch(/^SEARCH .* USING INDEX/);
    expect(plan('a', 'b__c')).toMatch(/^SEARCH .* USING INDEX/);
  } finally {
    db.close();
  }
});
