// Registry inspection fails closed on a row that does not decode (operations
// spec §3.2.5, "decodable rows"; the reference's forged-row tests in
// test_lifecycle_registry.py): a service whose manifest was edited into `{}`
// or whose storage columns disagree with its design state, a claim whose
// result is no JSON object, names another service or gives the service
// another name, or whose fingerprint no build makes. Storage
// refuses to open such a registry (serve fails closed) on both backends, and
// the forged row is left as it was.

import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { StoragePorts } from '../../../src/aipcs/core/application.js';
import { StorageFailure } from '../../../src/aipcs/core/ports.js';
import { openPostgresStorage } from '../../../src/aipcs/storage/postgres/index.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import { openSqliteRegistryForAdmin } from '../../../src/aipcs/storage/sqlite/registry.js';
import { materialisedNotes } from '../../conformance/harness.js';
import { freshDataRoot } from '../../support/aipcs-client.js';
import { expectClustersUnderCi, postgresClusters, queryRows, usePostgresStorage } from '../../support/postgres.js';

/** A forged row, as an UPDATE of the registry's own tables (the same column names on both backends), and the value it leaves. */
const FORGERIES: readonly [string, (schema: string) => string][] = [
  ['a manifest edited into {}', (r) => `UPDATE ${r}aipcs_registry_service SET manifest_json = '{}'`],
  ['a manifest that is no JSON', (r) => `UPDATE ${r}aipcs_registry_service SET manifest_json = 'not json'`],
  ['a manifest of another schema version', (r) => `UPDATE ${r}aipcs_registry_service SET schema_version = 2`],
  ['a materialised service without its store', (r) => `UPDATE ${r}aipcs_registry_service SET storage_namespace = NULL`],
  ['a claim result that is no JSON', (r) => `UPDATE ${r}aipcs_registry_claim SET result_json = 'not json' WHERE result_json IS NOT NULL`],
  ['a claim result that is no object', (r) => `UPDATE ${r}aipcs_registry_claim SET result_json = '[1]' WHERE result_json IS NOT NULL`],
  ['a claim fingerprint no build makes', (r) => `UPDATE ${r}aipcs_registry_claim SET fingerprint = 'garbage'`],
  ['a claim of an unknown kind', (r) => `UPDATE ${r}aipcs_registry_claim SET operation_kind = 'teleport'`],
  // Across rows: what a completed result says of its service (reference test_completion_current_service_cross_row_drift_is_incompatible).
  ['a seed result whose domain name was changed', (r) => `UPDATE ${r}aipcs_registry_claim SET result_json = replace(result_json, '"domain_name":"', '"domain_name":"changed_') WHERE operation_kind = 'seed'`],
  ['a result that names another service', (r) => `UPDATE ${r}aipcs_registry_claim SET result_json = replace(result_json, '"service_id":"', '"service_id":"0') WHERE operation_kind = 'design'`],
];

async function failureOf(promise: Promise<unknown>): Promise<StorageFailure> {
  const error = await promise.then(
    (storage) => (storage as StoragePorts).close().then(() => undefined),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StorageFailure);
  return error as StorageFailure;
}

describe('SQLite registry rows', () => {
  it.each(FORGERIES)('refuses %s, and leaves it', async (_name, forge) => {
    const dataRoot = freshDataRoot();
    const open = () => openSqliteStorage({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false });
    const storage = await open();
    await materialisedNotes(storage);
    await storage.close();
    // Reopened untouched, it is ready: the check reads every row of a real registry.
    await (await open()).close();

    const db = new Database(join(dataRoot, 'registry.sqlite'));
    expect(db.prepare(forge('')).run().changes).toBeGreaterThan(0);
    const dump = () => JSON.stringify(db.prepare('SELECT * FROM aipcs_registry_service').all()) + JSON.stringify(db.prepare('SELECT * FROM aipcs_registry_claim').all());
    const forged = dump();
    db.pragma('wal_checkpoint(TRUNCATE)');

    expect((await failureOf(open())).kind).toBe('unavailable');
    // What status, doctor and storage status see: incompatible at its revision.
    const inspected = await openSqliteRegistryForAdmin({ dataRoot, busyTimeoutMs: 5000, defaultRoot: false }, { writable: false });
    expect([inspected.state.status, inspected.state.appliedRevision, inspected.registry]).toEqual(['incompatible', 2n, null]);
    expect(dump()).toBe(forged);
    db.close();
  });
});

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s registry rows', (_version, cluster) => {
  const fixture = usePostgresStorage(cluster);

  it.each(FORGERIES)('refuses %s, and leaves it', async (_name, forge) => {
    // Not fixture.open: each storage is closed here, the last open must fail.
    const open = () => openPostgresStorage(fixture.options);
    const storage = await open();
    await materialisedNotes(storage);
    await storage.close();
    await (await open()).close();
    await queryRows(fixture.db.url, forge('aipcs_registry.'));
    expect((await failureOf(open())).kind).toBe('unavailable');
  });

  // Inspection reads the rows in pages of 500 (mutation review BA: checking
  // the first page alone survived): a forged row past the first page of
  // services, or of claims, is found too.
  it.each([
    ['service', `UPDATE aipcs_registry.aipcs_registry_service SET manifest_json = '{}' WHERE service_id = (SELECT max(service_id) FROM aipcs_registry.aipcs_registry_service)`],
    [
      'claim',
      `UPDATE aipcs_registry.aipcs_registry_claim SET fingerprint = 'garbage'
        WHERE (principal_id, idempotency_key) = (SELECT principal_id, idempotency_key FROM aipcs_registry.aipcs_registry_claim ORDER BY principal_id DESC, idempotency_key DESC LIMIT 1)`,
    ],
  ])('refuses a forged %s row past the first page of 500', async (_table, forge) => {
    const open = () => openPostgresStorage(fixture.options);
    const storage = await open();
    await materialisedNotes(storage);
    await storage.close();
    // 600 more of each, copies of the real rows under other ids and names.
    await queryRows(
      fixture.db.url,
      `INSERT INTO aipcs_registry.aipcs_registry_service
         SELECT 'copy-' || lpad(i::text, 4, '0'), principal_id, 'copy_' || i, domain_class, intent_description, created_at, updated_at, last_activity_at,
                manifest_json, schema_version, design_state, operational_status, service_revision, materialised_at, storage_backend, 'svc_' || md5(i::text)
           FROM aipcs_registry.aipcs_registry_service, generate_series(1, 600) AS i`,
    );
    await queryRows(
      fixture.db.url,
      `INSERT INTO aipcs_registry.aipcs_registry_claim
         SELECT principal_id, idempotency_key || '-copy-' || i, operation_kind, fingerprint, service_id, phase, intent_json, result_json, created_at, updated_at
           FROM aipcs_registry.aipcs_registry_claim, generate_series(1, 600) AS i WHERE phase = 'completed'`,
    );
    expect(await queryRows(fixture.db.url, `SELECT (SELECT count(*)::int FROM aipcs_registry.aipcs_registry_service) AS services, (SELECT count(*)::int FROM aipcs_registry.aipcs_registry_claim) > 1000 AS claims`)).toEqual([
      { services: 601, claims: true },
    ]);
    // Unforged, so many rows still make a ready registry.
    await (await open()).close();
    await queryRows(fixture.db.url, forge);
    expect((await failureOf(open())).kind).toBe('unavailable');
  });
});
