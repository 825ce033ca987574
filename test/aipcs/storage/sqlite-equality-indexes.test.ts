// SQLite store layout: every filterable scalar field gets its own equality
// index, also when entity and field names joined with "__" would read alike
// ("a__b"."c" and "a"."b__c").

import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { serverManaged } from '../../support/manifests.js';
import { materialisedSqliteService } from '../../support/query-plans.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

it('indexes fields whose entity and field names share a "__" join', async () => {
  const document = {
    manifest_version: 2n,
    schema_version: 1n,
    entities: [
      { name: 'a__b', attributes: [...serverManaged(), { name: 'c', type: 'string' }] },
      { name: 'a', attributes: [...serverManaged(), { name: 'b__c', type: 'string' }] },
    ],
  };
  const { dataRoot } = await materialisedSqliteService(folders, document, async () => undefined);
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
