// PostgreSQL adapter, physical rules on every test cluster: schemas owned by
// the connecting role with nothing granted to PUBLIC, collation "C" on every
// text column (and bytewise order even in an ICU database), fail-closed
// starts on a registry that is not exactly ours, concurrent starters, busy
// on lock waits, application errors passing through units unchanged, and
// exact round trips of integer and float extremes.

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { storeLayoutOf } from '../../../../src/aipcs/core/layout.js';
import { StorageFailure } from '../../../../src/aipcs/core/ports.js';
import type { JsonObject } from '../../../../src/common/json.js';
import { appOver, manifest, materialisedNotes, materialisedNotesStore } from '../../../conformance/harness.js';
import { notesManifest } from '../../../support/manifests.js';
import type { ClusterInfo } from '../../../support/postgres-cluster.js';
import { expectClustersUnderCi, postgresClusters, queryRows, usePostgresStorage, whileStoreLocked } from '../../../support/postgres.js';

async function failureOf(promise: Promise<unknown>): Promise<StorageFailure> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(StorageFailure);
  return error as StorageFailure;
}

expectClustersUnderCi();

describe.each(postgresClusters().map((cluster) => [cluster.version, cluster] as const))('PostgreSQL %s adapter', (_version, cluster: ClusterInfo) => {
  const fixture = usePostgresStorage(cluster);
  const { open, opened } = fixture;

  describe('ownership and privileges', () => {
    it('creates the registry and service schemas owned by the role, with nothing granted to PUBLIC', async () => {
      const storage = await open();
      const { namespace } = await materialisedNotes(storage);
      const schemas = await queryRows<{ nspname: string; owned: boolean; public_grants: boolean }>(
        fixture.db.url,
        `SELECT n.nspname, n.nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) AS owned,
                EXISTS (SELECT 1 FROM aclexplode(n.nspacl) a WHERE a.grantee = 0) AS public_grants
           FROM pg_namespace n WHERE n.nspname IN ('aipcs_registry', $1) ORDER BY 1`,
        [namespace],
      );
      expect(schemas).toEqual([
        { nspname: 'aipcs_registry', owned: true, public_grants: false },
        { nspname: namespace, owned: true, public_grants: false },
      ]);
      const publicRelations = await queryRows(
        fixture.db.url,
        `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) a
          WHERE n.nspname IN ('aipcs_registry', $1) AND a.grantee = 0`,
        [namespace],
      );
      expect(publicRelations).toEqual([]);
      // Another ordinary role of the cluster can neither see nor use them.
      const other = `aipcs_other_${randomBytes(4).toString('hex')}`;
      await queryRows(cluster.adminUrl, `CREATE ROLE ${other} LOGIN`);
      try {
        await queryRows(fixture.adminUrl, `GRANT CONNECT ON DATABASE ${fixture.db.name} TO ${other}`);
        const otherUrl = fixture.db.url.replace(/\/\/[^@]+@/, `//${other}@`);
        await expect(queryRows(otherUrl, `SELECT count(*) FROM aipcs_registry.aipcs_registry_service`)).rejects.toMatchObject({ code: '42501' });
        await expect(queryRows(otherUrl, `SELECT count(*) FROM "${namespace}"."note"`)).rejects.toMatchObject({ code: '42501' });
      } finally {
        await queryRows(fixture.adminUrl, `REVOKE CONNECT ON DATABASE ${fixture.db.name} FROM ${other}`);
        await queryRows(cluster.adminUrl, `DROP ROLE ${other}`);
      }
    });

    it('refuses to start on a registry schema that grants PUBLIC access, and leaves it untouched', async () => {
      await (await open()).close();
      await queryRows(fixture.db.url, `GRANT USAGE ON SCHEMA aipcs_registry TO PUBLIC`);
      expect((await failureOf(open())).kind).toBe('unavailable');
      await queryRows(fixture.db.url, `REVOKE USAGE ON SCHEMA aipcs_registry FROM PUBLIC`);
      await open();
    });

    it('refuses a registry schema owned by another role', async () => {
      const admin = fixture.adminUrl;
      await queryRows(admin, `CREATE SCHEMA aipcs_registry`);
      await queryRows(admin, `REVOKE ALL ON SCHEMA aipcs_registry FROM PUBLIC`);
      expect((await failureOf(open())).kind).toBe('unavailable');
    });

    it('never adopts an empty registry schema it did not create (as the reference), and leaves it', async () => {
      await queryRows(fixture.db.url, `CREATE SCHEMA aipcs_registry`);
      await queryRows(fixture.db.url, `REVOKE ALL ON SCHEMA aipcs_registry FROM PUBLIC`);
      expect((await failureOf(open())).kind).toBe('unavailable');
      expect(await queryRows(fixture.db.url, `SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = 'aipcs_registry'::regnamespace`)).toEqual([{ n: 0 }]);
    });
  });

  describe('fail-closed start', () => {
    it('leaves a foreign or altered registry untouched and refuses it', async () => {
      await queryRows(fixture.db.url, `CREATE SCHEMA aipcs_registry`);
      await queryRows(fixture.db.url, `CREATE TABLE aipcs_registry.something_else (x int)`);
      expect((await failureOf(open())).kind).toBe('unavailable');
      expect(await queryRows(fixture.db.url, `SELECT relname FROM pg_class WHERE relnamespace = 'aipcs_registry'::regnamespace ORDER BY 1`)).toEqual([{ relname: 'something_else' }]);
    });

    it('refuses a registry whose tables were changed after creation', async () => {
      await (await open()).close();
      await queryRows(fixture.db.url, `ALTER TABLE aipcs_registry.aipcs_registry_claim ADD COLUMN extra text`);
      expect((await failureOf(open())).kind).toBe('unavailable');
    });

    it('refuses a registry marked dirty', async () => {
      await (await open()).close();
      await queryRows(fixture.db.url, `UPDATE aipcs_registry.aipcs_registry_meta SET dirty = true`);
      expect((await failureOf(open())).kind).toBe('unavailable');
    });

    it('lets concurrent starters converge on one migrated registry', async () => {
      const starts = await Promise.all(Array.from({ length: 4 }, () => open()));
      expect(starts).toHaveLength(4);
      expect(await queryRows(fixture.db.url, `SELECT revision, migration_id FROM aipcs_registry.aipcs_registry_migration`)).toHaveLength(1);
    });

    it('reports a service store whose tables were altered as incompatible, never ready', async () => {
      const storage = await open();
      const { locator, layout } = await materialisedNotesStore(storage);
      expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
      await queryRows(fixture.db.url, `CREATE INDEX extra_index ON "${locator.namespace}"."note" ("title")`);
      expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'incompatible' });
      await expect(storage.stores.materialise(locator, layout)).rejects.toMatchObject({ kind: 'incompatible' });
      expect(await storage.stores.observe({ ...locator, namespace: `svc_${'0'.repeat(32)}` }, layout)).toEqual({ state: 'uninitialised' });
    });

    it('never adopts an empty service schema it did not create (as the reference), and leaves it', async () => {
      const storage = await open();
      const app = appOver(storage);
      const serviceId = (await app.lifecycle.seed({ domainName: 'notes', domainClass: 'knowledge', intentDescription: 'Notes.', idempotencyKey: 's' }))['service_id'] as string;
      await app.lifecycle.design({ serviceId, manifest: manifest(notesManifest()), idempotencyKey: 'd' });
      const locator = { backend: 'postgresql' as const, namespace: `svc_${serviceId.replaceAll('-', '')}` };
      await queryRows(fixture.db.url, `CREATE SCHEMA "${locator.namespace}"; REVOKE ALL ON SCHEMA "${locator.namespace}" FROM PUBLIC`);
      const layout = storeLayoutOf(manifest(notesManifest()));
      expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'incompatible' });
      expect((await storage.stores.inspect(locator)).status).toBe('incompatible');
      await expect(storage.stores.materialise(locator, layout)).rejects.toMatchObject({ kind: 'incompatible' });
      const materialised = await app.lifecycle.materialise({ serviceId, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: 'm' }).catch((error: unknown) => error);
      expect(materialised).toMatchObject({ code: 'recovery_required' });
      expect(await queryRows(fixture.db.url, `SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = $1::regnamespace`, [locator.namespace])).toEqual([{ n: 0 }]);
    });

    it('reports an index rebuilt with another sort order, operator class or collation as incompatible, in a store and in the registry', async () => {
      const storage = await open();
      const { locator, layout } = await materialisedNotesStore(storage);
      const table = `"${locator.namespace}"."__aipcs_memory_branch"`;
      const rebuild = (keys: string) => queryRows(fixture.db.url, `DROP INDEX "${locator.namespace}"."__aipcs_memory_branch_list"; CREATE INDEX "__aipcs_memory_branch_list" ON ${table} (${keys})`);
      // Our own DESC key reads as ours; the columns alone, rebuilt the same way, too.
      await rebuild('"principal_id", "id"');
      expect(await storage.stores.observe(locator, layout)).toEqual({ state: 'ready' });
      for (const keys of ['"principal_id" DESC, "id"', '"principal_id" NULLS FIRST, "id"', '"principal_id" text_pattern_ops, "id"', '"principal_id" COLLATE "default", "id"', '"principal_id" COLLATE "POSIX", "id"']) {
        await rebuild(keys);
        expect(await storage.stores.observe(locator, layout), keys).toEqual({ state: 'incompatible' });
      }
      await storage.close();
      await queryRows(fixture.db.url, `DROP INDEX aipcs_registry.aipcs_registry_service_list; CREATE INDEX aipcs_registry_service_list ON aipcs_registry.aipcs_registry_service ("principal_id", "created_at" DESC, "service_id")`);
      expect((await failureOf(open())).kind).toBe('unavailable');
    });
  });

  describe('collation "C"', () => {
    it('gives every text column of the registry and of a service store collation "C"', async () => {
      const storage = await open();
      const { namespace } = await materialisedNotes(storage);
      const columns = await queryRows<{ schema: string; relname: string; attname: string; collname: string | null }>(
        fixture.db.url,
        `SELECT n.nspname AS schema, c.relname, a.attname, coll.collname
           FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_collation coll ON coll.oid = a.attcollation
          WHERE n.nspname IN ('aipcs_registry', $1) AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype`,
        [namespace],
      );
      expect(columns.length).toBeGreaterThan(20);
      expect(columns.filter((column) => column.collname !== 'C')).toEqual([]);
    });

    it('orders, compares and pages bytewise in a database whose default collation is linguistic', async () => {
      const name = `aipcs_icu_${randomBytes(6).toString('hex')}`;
      const role = new URL(fixture.db.url).username;
      await queryRows(cluster.adminUrl, `CREATE DATABASE ${name} OWNER ${role} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`);
      try {
        const url = fixture.db.url.replace(/\/[^/]+$/, `/${name}`);
        // The database really is linguistic: 'a' sorts before 'B' there by default.
        expect(await queryRows(url, `SELECT 'a' < 'B' AS linguistic`)).toEqual([{ linguistic: true }]);
        const storage = await open({ dsn: url });
        const { serviceId, app } = await materialisedNotes(storage);
        for (const [i, status] of ['B', 'a', 'B', 'é', 'Z'].entries()) {
          await app.records.create({ serviceId, entityName: 'note', record: { title: `t${i}`, status: 'draft', tags: [status] }, idempotencyKey: `k${i}` });
        }
        const ids = ((await app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null }))['records'] as JsonObject[]).map((r) => r['id'] as string);
        expect(ids).toEqual([...ids].sort());
        const found = await app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null, filters: { tags: 'B' } });
        expect((found['records'] as JsonObject[]).length).toBe(2);
        const lower = await app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null, filters: { tags: 'b' } });
        expect(lower['records']).toEqual([]);
        // Facet members in code point order among equal counts: Z (0x5A) < a (0x61) < é (0xE9).
        const members = await storage.data.read({ backend: 'postgresql', namespace: `svc_${serviceId.replaceAll('-', '')}` }, 'agent-a', async (tx) => {
          const note = storeLayoutOf(manifest(notesManifest())).entities.find((entity) => entity.name === 'note');
          return note ? tx.facetValues(note, 'tags', 'list_members', 10) : [];
        });
        expect(members.map((member) => [member.value, member.count])).toEqual([
          ['B', 2n],
          ['Z', 1n],
          ['a', 1n],
          ['é', 1n],
        ]);
        await storage.close();
        opened.splice(opened.indexOf(storage), 1);
      } finally {
        await queryRows(cluster.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }
    });
  });

  describe('units of work', () => {
    it('reports a lock wait beyond lock_timeout as busy', async () => {
      const storage = await open({ lockTimeoutMs: 200 });
      const { serviceId, namespace, app } = await materialisedNotes(storage);
      await whileStoreLocked(fixture.db.url, namespace, async () => {
        await expect(app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'blocked' })).rejects.toMatchObject({ code: 'storage_busy' });
      });
      const created = await app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'blocked' });
      expect(created['replayed']).toBe(false);
    });

    it('reports waiting for a pooled connection beyond the connect timeout as busy', async () => {
      const storage = await open({ maxConnections: 1, connectTimeoutSeconds: 1 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const holder = storage.registry.read(async () => {
        entered();
        await held;
      });
      await inside;
      await expect(storage.registry.read(async (tx) => tx.listServices('agent-a', 1))).rejects.toMatchObject({ kind: 'busy' });
      release();
      await holder;
      await expect(storage.registry.read(async (tx) => tx.listServices('agent-a', 1))).resolves.toEqual([]);
    });

    // Readers run on a snapshot and take no key locks (ops spec §3.3.3 locks
    // are for writers): a registry read never waits behind a writer holding
    // the same keys (mutation review BA: readers that locked survived).
    it('reads registry keys a write unit holds locked without waiting', async () => {
      const storage = await open({ lockTimeoutMs: 200 });
      const { serviceId } = await materialisedNotes(storage);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const writer = storage.registry.write(async (tx) => {
        await tx.getService('agent-a', serviceId);
        await tx.getActiveClaim('agent-a', serviceId);
        await tx.getIdentity(serviceId);
        entered();
        await held;
      });
      await inside;
      try {
        const read = await storage.registry.read(async (tx) => [await tx.getService('agent-a', serviceId), await tx.getActiveClaim('agent-a', serviceId), await tx.getIdentity(serviceId)] as const);
        expect(read[0]?.serviceId).toBe(serviceId);
        expect(read.slice(1)).toEqual([undefined, undefined]);
      } finally {
        release();
        await writer;
      }
    });

    it('answers bootstrap from the registry alone when a service schema is gone', async () => {
      const storage = await open();
      const { serviceId, namespace, app } = await materialisedNotes(storage);
      await app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'r' });
      const before = await app.discovery.bootstrap({ limit: 100 });
      await queryRows(fixture.db.url, `ALTER SCHEMA "${namespace}" RENAME TO "moved_${namespace}"`);
      expect(await app.discovery.bootstrap({ limit: 100 })).toEqual(before);
      await expect(app.discovery.summary({ serviceId, sample: 0 })).rejects.toMatchObject({ code: 'storage_unavailable' });
      await expect(app.records.create({ serviceId, entityName: 'note', record: { title: 'y' }, idempotencyKey: 'r2' })).rejects.toMatchObject({ code: 'storage_unavailable' });
    });

    it('survives a connection killed in the middle of a unit: unavailable, then a fresh connection', async () => {
      const storage = await open();
      const { serviceId, namespace, app } = await materialisedNotes(storage);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const unit = storage.data.write({ backend: 'postgresql', namespace }, 'agent-a', async (tx) => {
        entered();
        await held;
        return tx.fenceIsOpen();
      });
      await inside;
      const admin = fixture.adminUrl;
      await queryRows(admin, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'aipcs' AND state = 'idle in transaction'`, [fixture.db.name]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      release();
      await expect(unit).rejects.toMatchObject({ kind: 'unavailable' });
      const created = await app.records.create({ serviceId, entityName: 'note', record: { title: 'after' }, idempotencyKey: 'after-kill' });
      expect(created['replayed']).toBe(false);
    });

    it('keeps its own session settings even when the DSN asks for others', async () => {
      const url = new URL(fixture.db.url);
      url.searchParams.set('options', '-c lock_timeout=1 -c search_path=public');
      const storage = await open({ dsn: url.toString(), lockTimeoutMs: 5000 });
      const { serviceId, namespace, app } = await materialisedNotes(storage);
      const holder = new pg.Client({ connectionString: fixture.db.url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`aipcs:service_store:${namespace}`]);
        const waiting = app.records.create({ serviceId, entityName: 'note', record: { title: 'x' }, idempotencyKey: 'waits' });
        await new Promise((resolve) => setTimeout(resolve, 300));
        await holder.query('COMMIT');
        // A 1 ms lock_timeout from the DSN would have failed this as busy.
        expect((await waiting)['replayed']).toBe(false);
      } finally {
        await holder.end();
      }
    });

    it('rolls back and rethrows the very application error thrown inside a unit', async () => {
      const storage = await open();
      const { namespace } = await materialisedNotes(storage);
      const appError = new Error('application outcome');
      await expect(
        storage.registry.write(async (tx) => {
          const service = (await tx.listServices('agent-a', 10))[0];
          if (service) await tx.updateService({ ...service, domainClass: 'changed' }, service.serviceRevision);
          throw appError;
        }),
      ).rejects.toBe(appError);
      expect(await queryRows(fixture.db.url, `SELECT domain_class FROM aipcs_registry.aipcs_registry_service`)).toEqual([{ domain_class: 'knowledge' }]);
      await expect(
        storage.data.write({ backend: 'postgresql', namespace }, 'agent-a', async (tx) => {
          await tx.putReplay({ idempotencyKey: 'x', kind: 'create', fingerprint: 'f', result: {}, completedAt: 1n });
          throw appError;
        }),
      ).rejects.toBe(appError);
      expect(await queryRows(fixture.db.url, `SELECT count(*)::int AS n FROM "${namespace}"."__aipcs_record_mutation"`)).toEqual([{ n: 0 }]);
    });

    it('answers unavailable for a locator of another backend or a malformed namespace', async () => {
      const storage = await open();
      await expect(storage.data.read({ backend: 'sqlite', namespace: `svc_${'a'.repeat(32)}` }, 'agent-a', async () => 1)).rejects.toMatchObject({ kind: 'unavailable' });
      await expect(storage.data.read({ backend: 'postgresql', namespace: 'public' }, 'agent-a', async () => 1)).rejects.toMatchObject({ kind: 'unavailable' });
    });
  });

  describe('exact values', () => {
    it('reads floats exactly even when the DSN or the database asks for rounded float output', async () => {
      // extra_float_digits = 0 makes float8 output round to 15 digits (and the largest double to "1.79769313486232e+308", beyond it).
      await queryRows(fixture.db.url, `ALTER DATABASE ${fixture.db.name} SET extra_float_digits = 0`);
      const url = new URL(fixture.db.url);
      url.searchParams.set('options', '-c extra_float_digits=0');
      for (const dsn of [fixture.db.url, url.toString()]) {
        const storage = await open({ dsn });
        const { serviceId, app } = await materialisedNotes(storage);
        for (const [i, confidence] of [0.30000000000000004, 1.7976931348623157e308, 5e-324, 2 / 3].entries()) {
          const created = (await app.records.create({ serviceId, entityName: 'note', record: { title: 't', confidence }, idempotencyKey: `f${i}` }))['record'] as JsonObject;
          const read = await app.records.get(serviceId, 'note', created['id'] as string);
          expect((read['fields'] as JsonObject)['confidence']).toBe(confidence);
        }
        await storage.close();
        opened.splice(opened.indexOf(storage), 1);
        await queryRows(fixture.db.url, `DROP SCHEMA aipcs_registry CASCADE`);
        for (const { nspname } of await queryRows<{ nspname: string }>(fixture.db.url, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'svc\\_%'`)) await queryRows(fixture.db.url, `DROP SCHEMA "${nspname}" CASCADE`);
      }
    });

    it('round-trips 64-bit integers, float extremes, 1 versus 1.0 and non-ASCII text', async () => {
      const storage = await open();
      const { serviceId, app } = await materialisedNotes(storage);
      const cases: JsonObject[] = [
        { title: 'max', priority: 9223372036854775807n, confidence: 1.7976931348623157e308 },
        { title: 'min', priority: -9223372036854775808n, confidence: 5e-324 },
        { title: 'one', priority: 1n, confidence: 1n },
        { title: '😀 ünïcode \u2028 "quoted" \\ back', confidence: 0.1, tags: ['ß', 'SS', 'ss'] },
      ];
      for (const [i, record] of cases.entries()) {
        const created = (await app.records.create({ serviceId, entityName: 'note', record, idempotencyKey: `v${i}` }))['record'] as JsonObject;
        const read = await app.records.get(serviceId, 'note', created['id'] as string);
        expect(read).toEqual(created);
        const fields = read['fields'] as JsonObject;
        expect(fields['title']).toBe((record['title'] as string).trim());
        if (record['priority'] !== undefined) expect(fields['priority']).toBe(record['priority']);
        if (record['tags'] !== undefined) expect(fields['tags']).toEqual(record['tags']);
        expect(typeof fields['confidence']).toBe('number');
        expect(fields['confidence']).toBe(Number(record['confidence']));
      }
      const history = await app.records.history({ serviceId, entityName: 'note', recordId: null, limit: 10, cursor: null });
      const after = (history['events'] as JsonObject[]).map((event) => ((event['after'] as JsonObject)['fields'] as JsonObject)['priority']);
      expect(after).toEqual([9223372036854775807n, -9223372036854775808n, 1n, null]);
      const byPriority = await app.records.list({ serviceId, entityName: 'note', limit: 10, cursor: null, branch: null, filters: { priority: -9223372036854775808n } });
      expect((byPriority['records'] as JsonObject[]).map((r) => (r['fields'] as JsonObject)['title'])).toEqual(['min']);
    });
  });
});
