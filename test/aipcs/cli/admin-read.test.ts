// The read-only administration commands through the built CLI: `status`,
// `doctor`, `storage status`, `service list`, `service inspect` and
// `maintenance scan`, with their exact outputs and exit codes, and the proof
// that they never create, migrate or write anything.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REGISTRY_DDL_R1 } from '../../../src/aipcs/storage/sqlite/registry.js';
import { aipcs, createNote, freshDataRoot, key, materialisedService, materialisedServiceThenStop, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import { startAipcs, sqliteArgs, type AipcsClient } from '../../support/aipcs-client.js';
import { wireNotesManifest, wireNotesManifestV2 } from '../../support/wire-manifests.js';

const require = createRequire(import.meta.url);

const OP = (n: number): string => `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;
// Revisions on the public scale of spec §1.8 (SQLite registry 4, store 3), not our adapters' own numbers.
const READY_REGISTRY = { component: 'registry', backend: 'sqlite', status: 'ready', applied_revision: 4, target_revision: 4, issue_code: null };

const checks = (result: Record<string, unknown> | null) => (result?.['checks'] as Record<string, unknown>[]).map((check) => [check['check_id'], check['status'], check['issue_code']]);

describe('read-only administration', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let args: string[];
  let materialised: string;
  let seeded: string;
  let suspended: string;

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
    materialised = await materialisedService(client, 'read_notes');
    await createNote(client, materialised, { title: 'Low', confidence: 0.1 });
    await createNote(client, materialised, { title: 'Plain' });
    seeded = await seedService(client, 'read_seed');
    suspended = await materialisedService(client, 'read_suspended');
    expect(aipcs(['service', 'suspend', suspended, '--expected-revision', '3', '--operation-id', OP(1), ...args]).status).toBe(0);
  });

  afterAll(async () => {
    await client.close();
  });

  describe('status', () => {
    it('reports the registry and sorted, non-zero service counts', () => {
      const run = aipcs(['status', ...args]);
      expect(run.status).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout).toBe(
        `${JSON.stringify({
          ok: true,
          result: {
            profile: 'sqlite',
            backend: 'sqlite',
            registry: READY_REGISTRY,
            services: { design: { materialised: 2, seeded: 1 }, operational: { active: 2, suspended: 1 }, recovery: { clear: 3 }, truncated: false },
            overall: 'ready',
          },
          error: null,
        })}\n`,
      );
    });

    it('renders human lines with dotted prefixes', () => {
      const run = aipcs(['status', '--format', 'human', ...args]);
      expect(run.stdout).toContain('registry.status: ready\n');
      expect(run.stdout).toContain('services.design.materialised: 2\n');
      expect(run.stdout).toContain('overall: ready\n');
    });

    it('under stateless: no backend, empty counts, overall unavailable, exit 0', () => {
      const run = aipcs(['status', '--profile', 'stateless']);
      expect(run.status).toBe(0);
      expect(run.envelope.result).toEqual({ profile: 'stateless', backend: null, registry: null, services: { design: {}, operational: {}, recovery: {}, truncated: false }, overall: 'unavailable' });
    });

    it('reports a missing root without creating it, and flags more than 100 services as truncated', async () => {
      const missing = freshDataRoot();
      const run = aipcs(['status', ...rootArgs(missing)]);
      expect(run.envelope.result).toMatchObject({
        registry: { status: 'uninitialised', applied_revision: 0, target_revision: 4, issue_code: 'storage_uninitialised' },
        services: { design: {}, truncated: false },
        overall: 'attention_required',
      });
      expect(() => statSync(missing)).toThrow();

      const many = freshDataRoot();
      const manyClient = await serveOn(many);
      try {
        for (let i = 0; i < 101; i++) await seedService(manyClient, `s${i}`);
      } finally {
        await manyClient.close();
      }
      expect(aipcs(['status', ...rootArgs(many)]).envelope.result?.['services']).toEqual({ design: { seeded: 100 }, operational: { active: 100 }, recovery: { clear: 100 }, truncated: true });
    });

    it('shows a busy registry and a root unsafe on disk as unavailable (exit 0); commands needing the registry refuse with storage_unavailable (exit 6)', async () => {
      const root = freshDataRoot();
      await (await serveOn(root)).close();
      // In WAL mode only an exclusive locking mode keeps readers out.
      const holder = new Database(join(root, 'registry.sqlite'));
      holder.pragma('locking_mode = EXCLUSIVE');
      holder.exec('BEGIN EXCLUSIVE');
      try {
        const busy = aipcs(['status', ...rootArgs(root), '--sqlite-busy-timeout-ms', '50']);
        expect(busy.status).toBe(0);
        expect(busy.envelope.result).toMatchObject({
          registry: { status: 'unavailable', applied_revision: null, target_revision: null, issue_code: 'storage_busy' },
          overall: 'unavailable',
        });
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
      }
      const loose = freshDataRoot();
      mkdirSync(loose, { mode: 0o755 });
      chmodSync(loose, 0o755);
      const unavailable = { component: 'registry', backend: 'sqlite', status: 'unavailable', applied_revision: null, target_revision: null, issue_code: 'storage_unavailable' };
      const status = aipcs(['status', ...rootArgs(loose)]);
      expect(status.status).toBe(0);
      expect(status.envelope.result).toMatchObject({ registry: unavailable, overall: 'unavailable' });
      const storage = aipcs(['storage', 'status', ...rootArgs(loose)]);
      expect([storage.status, storage.envelope.result]).toEqual([0, unavailable]);
      const doctor = aipcs(['doctor', ...rootArgs(loose)]);
      expect(doctor.status).toBe(0);
      expect(checks(doctor.envelope.result)).toContainEqual(['registry_migration', 'fail', 'storage_unavailable']);
      for (const command of [['service', 'list'], ['service', 'inspect', '0190a4a4-0000-7000-8000-000000000001']]) {
        const run = aipcs([...command, ...rootArgs(loose)]);
        expect([run.status, run.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
        expect(run.stderr).not.toContain(loose);
      }
      expect(readdirSync(loose)).toEqual([]);
    });


    it('a root whose parent, or a default root whose HOME, does not exist is unavailable, not "run serve": serve never creates either', () => {
      const unavailable = { component: 'registry', backend: 'sqlite', status: 'unavailable', applied_revision: null, target_revision: null, issue_code: 'storage_unavailable' };
      const base = freshDataRoot();
      const orphan = join(base, 'missing', 'data');
      const home = join(base, 'no-home');
      const cases: [string[], Record<string, string>][] = [
        [rootArgs(orphan), {}],
        [['--profile', 'sqlite', '--principal-id', 'local-agent'], { HOME: home }],
      ];
      for (const [where, env] of cases) {
        const status = aipcs(['status', ...where], { env });
        expect([status.status, status.envelope.result?.['registry']]).toEqual([0, unavailable]);
        expect(aipcs(['storage', 'status', ...where], { env }).envelope.result).toEqual(unavailable);
        const list = aipcs(['service', 'list', ...where], { env });
        expect([list.status, list.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
        expect(aipcs(['serve', ...where], { env }).status).toBe(2);
      }
      expect(() => statSync(join(base, 'missing'))).toThrow();
      expect(() => statSync(home)).toThrow();
    });
    it('reports a pending intent as attention_required', async () => {
      const root = freshDataRoot();
      const setup = await serveOn(root);
      const serviceId = await seedService(setup, 'pending');
      await setup.call('aipcs_service_design', { service_id: serviceId, schema: wireNotesManifest(), idempotency_key: 'd' });
      await setup.close();
      const doomed = await startAipcs(sqliteArgs(root), { AIPCS_FAULT_INJECTION: 'materialise:admitted' });
      await expect(doomed.call('aipcs_service_materialise', { service_id: serviceId, expected_service_revision: 2, expected_schema_version: 1, idempotency_key: 'm' })).rejects.toThrow();
      await doomed.close().catch(() => undefined);
      const run = aipcs(['status', ...rootArgs(root)]);
      expect(run.envelope.result).toMatchObject({ services: { recovery: { pending: 1 } }, overall: 'attention_required' });
      const doctor = aipcs(['doctor', '--service', serviceId, ...rootArgs(root)]);
      expect(checks(doctor.envelope.result)).toContainEqual(['admission_fence', 'warning', 'operation_in_progress']);
      const suspend = aipcs(['service', 'suspend', serviceId, '--expected-revision', '2', '--operation-id', OP(2), ...rootArgs(root)]);
      expect([suspend.status, suspend.envelope.error?.code, suspend.envelope.error?.retryable]).toEqual([4, 'operation_in_progress', true]);
    });
  });

  describe('doctor', () => {
    it('passes every check for a healthy materialised service', () => {
      const run = aipcs(['doctor', '--service', materialised, ...args]);
      expect(run.status).toBe(0);
      expect(run.envelope.result).toMatchObject({ profile: 'sqlite', backend: 'sqlite', service_id: materialised, overall: 'pass' });
      expect(checks(run.envelope.result)).toEqual([
        ['configuration', 'pass', null],
        ['runtime', 'pass', null],
        ['registry_migration', 'pass', null],
        ['service_identity', 'pass', null],
        ['admission_fence', 'pass', null],
        ['service_store_migration', 'pass', null],
        ['domain_schema', 'pass', null],
      ]);
    });

    it('warns for a seeded service, fails for an unknown one, stops without --service, and exits 0 whatever the verdict', () => {
      const seededRun = aipcs(['doctor', '--service', seeded, ...args]);
      expect(seededRun.envelope.result?.['overall']).toBe('warning');
      expect(checks(seededRun.envelope.result).slice(5)).toEqual([
        ['service_store_migration', 'warning', 'service_not_materialised'],
        ['domain_schema', 'warning', 'domain_schema_not_inspectable'],
      ]);
      const unknown = aipcs(['doctor', '--service', OP(404), ...args]);
      expect(unknown.status).toBe(0);
      expect(checks(unknown.envelope.result).slice(3)).toEqual([['service_identity', 'fail', 'service_not_found']]);
      expect(checks(aipcs(['doctor', ...args]).envelope.result)).toHaveLength(3);
      const stateless = aipcs(['doctor', '--profile', 'stateless']);
      expect(stateless.status).toBe(0);
      expect(stateless.envelope.result).toMatchObject({ backend: null, service_id: null, overall: 'fail' });
      expect(checks(stateless.envelope.result)).toEqual([['configuration', 'pass', null], ['runtime', 'pass', null], ['persistent_profile', 'fail', 'persistent_storage_not_configured']]);
      const missing = freshDataRoot();
      expect(checks(aipcs(['doctor', '--service', seeded, ...rootArgs(missing)]).envelope.result)).toEqual([
        ['configuration', 'pass', null],
        ['runtime', 'pass', null],
        ['registry_migration', 'fail', 'storage_uninitialised'],
      ]);
      expect(() => statSync(missing)).toThrow();
    });

    it('fails the store checks of a materialised service whose store is gone', async () => {
      const root = freshDataRoot();
      const setup = await serveOn(root);
      const serviceId = await materialisedService(setup, 'lost');
      await setup.close();
      rmSync(join(root, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`));
      const run = aipcs(['doctor', '--service', serviceId, ...rootArgs(root)]);
      // overall is the worst status: a failure outranks the warning that follows it.
      expect(run.envelope.result?.['overall']).toBe('fail');
      expect(checks(run.envelope.result).slice(5)).toEqual([
        ['service_store_migration', 'fail', 'storage_uninitialised'],
        ['domain_schema', 'warning', 'domain_schema_not_inspectable'],
      ]);
      expect(readdirSync(join(root, 'service-stores'))).toEqual([]);
    });
  });

  describe('storage status', () => {
    it('shows the registry, or one service store', () => {
      expect(aipcs(['storage', 'status', ...args]).envelope.result).toEqual(READY_REGISTRY);
      expect(aipcs(['storage', 'status', '--service', materialised, ...args]).envelope.result).toEqual({
        component: 'service_store',
        backend: 'sqlite',
        status: 'ready',
        applied_revision: 3,
        target_revision: 3,
        issue_code: null,
      });
      expect(aipcs(['storage', 'status', '--service', seeded, ...args]).envelope.result).toEqual({
        component: 'service_store',
        backend: 'sqlite',
        status: 'uninitialised',
        applied_revision: 0,
        target_revision: null,
        issue_code: 'service_not_materialised',
      });
      const unknown = aipcs(['storage', 'status', '--service', OP(404), ...args]);
      expect([unknown.status, unknown.envelope.error?.code]).toEqual([3, 'not_found']);
      const stateless = aipcs(['storage', 'status', '--profile', 'stateless']);
      expect([stateless.status, stateless.envelope.error?.code]).toEqual([3, 'unsupported_operation']);
    });
  });

  describe('service list and inspect', () => {
    it('list the principal services in creation order, bounded by --limit', async () => {
      const run = aipcs(['service', 'list', ...args]);
      expect(run.status).toBe(0);
      const services = run.envelope.result?.['services'] as Record<string, unknown>[];
      expect(services.map((service) => service['service_id'])).toEqual([materialised, seeded, suspended]);
      const mcp = await client.call('aipcs_service_list', {});
      expect(run.envelope.result).toEqual(mcp.result);
      expect((aipcs(['service', 'list', '--limit', '1', ...args]).envelope.result?.['services'] as unknown[]).length).toBe(1);
      // 100 is the largest limit the lexical rule admits (§1.5).
      const largest = aipcs(['service', 'list', '--limit', '100', ...args]);
      expect([largest.status, largest.envelope.result]).toEqual([0, run.envelope.result]);
      for (const limit of ['0', '101', '01', 'ten']) {
        const bad = aipcs(['service', 'list', '--limit', limit, ...args]);
        expect([bad.status, bad.envelope.error?.issues[0]?.path]).toEqual([2, '--limit']);
      }
      expect(aipcs(['service', 'list', ...rootArgs(dataRoot, 'another-principal')]).envelope.result).toEqual({ services: [] });
    });

    it('inspect gives the MCP projection, not_found for unknown or foreign services', async () => {
      const run = aipcs(['service', 'inspect', materialised, ...args]);
      const mcp = await client.call('aipcs_service_inspect', { service_id: materialised });
      expect(run.envelope.result).toEqual(mcp.result);
      expect(Object.keys(run.envelope.result ?? {})).toEqual([
        'service_id', 'domain_name', 'domain_class', 'intent_description', 'design_state', 'operational_status', 'schema', 'schema_version',
        'service_revision', 'recovery_state', 'created_at', 'updated_at', 'last_activity_at', 'materialised_at', 'storage',
      ]);
      const foreign = aipcs(['service', 'inspect', materialised, ...rootArgs(dataRoot, 'another-principal')]);
      expect([foreign.status, foreign.envelope.error?.code]).toEqual([3, 'not_found']);
      const stateless = aipcs(['service', 'inspect', materialised, '--profile', 'stateless']);
      expect([stateless.status, stateless.envelope.error?.code]).toEqual([3, 'unsupported_operation']);
    });

    it('a human rendering of a full projection fits the bounds', () => {
      const run = aipcs(['service', 'inspect', materialised, '--format', 'human', ...args]);
      expect(run.status).toBe(0);
      expect(run.stdout).toContain('schema.entities[1].attributes[6].name: title\n');
      expect(run.stdout).toContain('storage.backend: sqlite\n');
    });

    it('an outdated (revision 1) registry is reported, refused for reads, and migrated only by serve', async () => {
      const root = freshDataRoot();
      mkdirSync(root, { mode: 0o700 });
      const path = join(root, 'registry.sqlite');
      const db = new Database(path);
      db.pragma('journal_mode = WAL');
      for (const ddl of REGISTRY_DDL_R1) db.exec(ddl);
      db.prepare(`INSERT INTO aipcs_registry_meta (singleton, adapter_id, applied_revision, dirty) VALUES (1, 'aipcs.sqlite.registry', 1, 0)`).run();
      db.close();
      chmodSync(path, 0o600);
      const status = aipcs(['status', ...rootArgs(root)]);
      expect(status.envelope.result).toMatchObject({
        registry: { status: 'outdated', applied_revision: 3, target_revision: 4, issue_code: 'storage_migration_required' },
        overall: 'attention_required',
      });
      const list = aipcs(['service', 'list', ...rootArgs(root)]);
      expect([list.status, list.envelope.error?.code]).toEqual([3, 'storage_migration_required']);
      // A service store's state is read through the registry: it must be ready too.
      const store = aipcs(['storage', 'status', '--service', OP(1), ...rootArgs(root)]);
      expect([store.status, store.envelope.error?.code]).toEqual([3, 'storage_migration_required']);
      const doctor = aipcs(['doctor', ...rootArgs(root)]);
      expect(checks(doctor.envelope.result)[2]).toEqual(['registry_migration', 'warning', 'storage_migration_required']);
      // Still outdated: inspection never migrates.
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result?.['status']).toBe('outdated');
      const server = await serveOn(root);
      await server.close();
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result).toEqual(READY_REGISTRY);
    });

    it('an incompatible registry is refused without sending the operator to serve, which would refuse it too', () => {
      const root = freshDataRoot();
      mkdirSync(root, { mode: 0o700 });
      const path = join(root, 'registry.sqlite');
      const db = new Database(path);
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE foreign_table (x INTEGER)');
      db.close();
      chmodSync(path, 0o600);
      // Revisions are null only when unavailable (spec §1.8): a revision not ours to name shows 0.
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result).toEqual({ component: 'registry', backend: 'sqlite', status: 'incompatible', applied_revision: 0, target_revision: 4, issue_code: 'storage_incompatible' });
      const list = aipcs(['service', 'list', ...rootArgs(root)]);
      expect([list.status, list.envelope.error?.code]).toEqual([3, 'storage_migration_required']);
      expect(list.envelope.error?.message).not.toContain('serve');
      const outdatedMessage = aipcs(['service', 'list', ...rootArgs(freshDataRoot())]).envelope.error?.message;
      expect(outdatedMessage).toContain('aipcs serve');
    });
    it('a drifted registry of ours keeps the revision its meta row names; a revision we cannot name shows 0', async () => {
      const root = freshDataRoot();
      const server = await serveOn(root);
      await server.close();
      const registry = join(root, 'registry.sqlite');
      const change = (sql: string) => {
        const db = new Database(registry);
        db.exec(sql);
        db.close();
      };
      const state = (applied: number) => ({ component: 'registry', backend: 'sqlite', status: 'incompatible', applied_revision: applied, target_revision: 4, issue_code: 'storage_incompatible' });
      change('CREATE TABLE intruder (x INTEGER)');
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result).toEqual(state(4));
      change('UPDATE aipcs_registry_meta SET applied_revision = 7');
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result).toEqual(state(0));
    });
    it('a registry whose meta row says dirty is reported dirty (storage_dirty), needing attention, and failed by doctor', async () => {
      const root = freshDataRoot();
      const server = await serveOn(root);
      await seedService(server, 'dirty_seed');
      await server.close();
      const db = new Database(join(root, 'registry.sqlite'));
      db.exec('UPDATE aipcs_registry_meta SET dirty = 1');
      db.close();
      const dirty = { component: 'registry', backend: 'sqlite', status: 'dirty', issue_code: 'storage_dirty' };
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result).toMatchObject(dirty);
      const status = aipcs(['status', ...rootArgs(root)]);
      expect(status.status).toBe(0);
      expect(status.envelope.result).toMatchObject({ registry: dirty, overall: 'attention_required' });
      const doctor = aipcs(['doctor', ...rootArgs(root)]);
      expect(doctor.envelope.result?.['overall']).toBe('fail');
      expect(checks(doctor.envelope.result).slice(2)).toEqual([['registry_migration', 'fail', 'storage_dirty']]);
    });
    it('a registry left with the journal of an interrupted write is unavailable to inspection, which says serve rolls it back', () => {
      const root = freshDataRoot();
      mkdirSync(root, { mode: 0o700 });
      const path = join(root, 'registry.sqlite');
      // A writer killed inside its transaction, its changes spilled to the file: a hot rollback journal, as a first serve killed early leaves.
      const writer = spawnSync(
        process.execPath,
        [
          '-e',
          `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const db = new D(${JSON.stringify(path)});
           db.pragma('journal_mode = DELETE'); db.pragma('cache_size = 10'); db.exec('CREATE TABLE t (x)'); db.exec('BEGIN');
           const insert = db.prepare('INSERT INTO t VALUES (?)'); for (let i = 0; i < 20000; i++) insert.run('x'.repeat(100));
           process.kill(process.pid, 'SIGKILL');`,
        ],
        { env: { ...process.env, NODE_OPTIONS: '' } },
      );
      expect(writer.signal).toBe('SIGKILL');
      for (const file of [path, `${path}-journal`]) chmodSync(file, 0o600);
      const doctor = aipcs(['doctor', '--log-level', 'info', ...rootArgs(root)]);
      expect(doctor.envelope.result?.['overall']).toBe('fail');
      expect(doctor.stderr).toContain('storage unavailable: an interrupted write left a journal that only a writer can roll back (aipcs serve does, for the registry)');
    });
    it('a registry or store put back in rollback-journal mode is not ready to inspection either: serve switches the registry back, the store stays incompatible', async () => {
      const root = freshDataRoot();
      const serviceId = await materialisedServiceThenStop(root, 'rollback_mode');
      const store = join(root, 'service-stores', `svc_${serviceId.replaceAll('-', '')}.sqlite`);
      for (const file of [join(root, 'registry.sqlite'), store]) {
        const db = new Database(file);
        db.pragma('journal_mode = DELETE');
        db.close();
      }
      // Lifecycle commands and serve need WAL (spec §3.2.3): inspection says so too, and points at serve.
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result).toMatchObject({ status: 'outdated', issue_code: 'storage_migration_required' });
      expect(checks(aipcs(['doctor', ...rootArgs(root)]).envelope.result)[2]).toEqual(['registry_migration', 'warning', 'storage_migration_required']);
      const suspend = aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', OP(90), ...rootArgs(root)]);
      expect([suspend.status, suspend.envelope.error?.code]).toEqual([3, 'storage_migration_required']);
      expect(suspend.envelope.error?.message).toContain('aipcs serve');
      const again = await serveOn(root);
      await again.close();
      expect(aipcs(['storage', 'status', ...rootArgs(root)]).envelope.result).toEqual(READY_REGISTRY);
      // The data tools refuse a store in another journal mode, and nothing switches it back.
      // Its meta row still names our revision: the state keeps it, as the reference's does.
      expect(aipcs(['storage', 'status', '--service', serviceId, ...rootArgs(root)]).envelope.result).toEqual({ component: 'service_store', backend: 'sqlite', status: 'incompatible', applied_revision: 3, target_revision: 3, issue_code: 'storage_incompatible' });
      expect(checks(aipcs(['doctor', '--service', serviceId, ...rootArgs(root)]).envelope.result)).toContainEqual(['service_store_migration', 'fail', 'storage_incompatible']);
    });
  });

  describe('maintenance scan', () => {
    it('runs every scan type with the fixed thresholds, as the MCP tool does', async () => {
      const run = aipcs(['maintenance', 'scan', '--service', materialised, ...args]);
      expect(run.status).toBe(0);
      const mcp = await client.call('aipcs_maintenance_scan', { service_id: materialised, limit: 100, stale_after_days: 90, low_confidence_below: 0.5 });
      expect(run.envelope.result).toEqual(mcp.result);
      expect(Object.keys(run.envelope.result ?? {})).toEqual(['candidates', 'unavailable_scan_types']);
    });

    it('uses the fixed 90-day stale threshold: a note last updated 60 days ago is not stale, one 120 days ago is', async () => {
      const root = freshDataRoot();
      const setup = await serveOn(root);
      const serviceId = await materialisedService(setup, 'read_stale');
      const recent = await createNote(setup, serviceId, { title: 'Sixty days' });
      const old = await createNote(setup, serviceId, { title: 'Hundred and twenty days' });
      await setup.close();
      // Age the two notes in their store (a table named after the entity, timestamps as text), as time would have.
      const stores = join(root, 'service-stores');
      const store = new Database(join(stores, readdirSync(stores).find((name) => name.endsWith('.sqlite')) as string));
      try {
        const daysEarlier = (timestamp: string, days: number): string => new Date(Date.parse(`${timestamp.slice(0, 10)}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10) + timestamp.slice(10);
        for (const [id, days] of [[recent['id'], 60], [old['id'], 120]] as const) {
          const row = store.prepare('SELECT created_at, updated_at FROM "note" WHERE id = ?').get(id) as { created_at: string; updated_at: string };
          expect(typeof row.updated_at).toBe('string');
          const aged = store.prepare('UPDATE "note" SET created_at = ?, updated_at = ? WHERE id = ?').run(daysEarlier(row.created_at, days), daysEarlier(row.updated_at, days), id);
          expect(aged.changes).toBe(1);
        }
      } finally {
        store.close();
      }
      const run = aipcs(['maintenance', 'scan', '--service', serviceId, ...rootArgs(root)]);
      expect(run.status).toBe(0);
      const stale = (run.envelope.result?.['candidates'] as { scan_type: string; record: { id: string }; detail: Record<string, unknown> }[]).filter((candidate) => candidate.scan_type === 'stale');
      expect(stale.map((candidate) => [candidate.record.id, candidate.detail['threshold_days']])).toEqual([[old['id'], 90]]);
    });

    it('returns at most 100 candidates, as the MCP tool at its largest limit', async () => {
      const root = freshDataRoot();
      const setup = await serveOn(root);
      const serviceId = await materialisedService(setup, 'read_many_notes');
      // Every note is a missing_authority candidate: one more than the limit.
      for (let n = 0; n < 101; n++) await createNote(setup, serviceId, { title: `Note ${n}` });
      await setup.close();
      const run = aipcs(['maintenance', 'scan', '--service', serviceId, ...rootArgs(root)]);
      expect(run.status).toBe(0);
      expect(run.envelope.result?.['candidates']).toHaveLength(100);
    });

    it('applies data admission: suspended or seeded → storage_unavailable (6), pending → storage_busy (4), unknown → not_found (3)', async () => {
      for (const serviceId of [suspended, seeded]) {
        const run = aipcs(['maintenance', 'scan', '--service', serviceId, ...args]);
        expect([run.status, run.envelope.error?.code]).toEqual([6, 'storage_unavailable']);
      }
      const unknown = aipcs(['maintenance', 'scan', '--service', OP(404), ...args]);
      expect([unknown.status, unknown.envelope.error?.code]).toEqual([3, 'not_found']);
      const missingFlag = aipcs(['maintenance', 'scan', ...args]);
      expect(missingFlag.status).toBe(2);

      const root = freshDataRoot();
      const setup = await serveOn(root);
      const serviceId = await materialisedService(setup, 'evolving');
      await setup.close();
      const doomed = await startAipcs(sqliteArgs(root), { AIPCS_FAULT_INJECTION: 'evolve:admitted' });
      await expect(
        doomed.call('aipcs_service_evolve', { service_id: serviceId, expected_service_revision: 3, expected_schema_version: 1, schema: wireNotesManifestV2(), idempotency_key: key('e') }),
      ).rejects.toThrow();
      await doomed.close().catch(() => undefined);
      const busy = aipcs(['maintenance', 'scan', '--service', serviceId, ...rootArgs(root)]);
      expect([busy.status, busy.envelope.error?.code, busy.envelope.error?.retryable]).toEqual([4, 'storage_busy', true]);
    });
  });
});

describe('read-only administration on a data root no server has open', () => {
  it('leaves every file as it was: no -wal or -shm appears, no byte or mtime changes', async () => {
    const dataRoot = freshDataRoot();
    const client = await serveOn(dataRoot);
    const args = rootArgs(dataRoot);
    const service = await materialisedService(client, 'closed_notes');
    await createNote(client, service, { title: 'Kept' });
    await client.close();
    const tree = (): string[] => {
      const out: string[] = [];
      const walk = (folder: string): void => {
        for (const entry of readdirSync(folder, { withFileTypes: true })) {
          const path = join(folder, entry.name);
          if (entry.isDirectory()) walk(path);
          else out.push(`${path} ${createHash('sha256').update(readFileSync(path)).digest('hex')} ${statSync(path).mtimeMs}`);
        }
      };
      walk(dataRoot);
      return out.sort();
    };
    const before = tree();
    expect(before.some((line) => line.includes('-wal') || line.includes('-shm'))).toBe(false);
    for (const command of [
      ['status'],
      ['doctor', '--service', service],
      ['storage', 'status'],
      ['storage', 'status', '--service', service],
      ['service', 'list'],
      ['service', 'inspect', service],
      ['maintenance', 'scan', '--service', service],
    ]) {
      expect(aipcs([...command, ...args]).status, command.join(' ')).toBe(0);
      expect(tree(), command.join(' ')).toEqual(before);
    }
  });
});

describe('administration under the stateless profile', () => {
  it('refuses every command but status and doctor as unsupported_operation (3), before it looks at a service or a file', () => {
    const absent = join(freshDataRoot(), 'absent.jsonl');
    const id = OP(70);
    const flags = ['--expected-revision', '2', '--operation-id', OP(71), '--yes'];
    for (const command of [
      ['storage', 'status'],
      ['storage', 'status', '--service', id],
      ['service', 'list'],
      ['service', 'inspect', id],
      ['maintenance', 'scan', '--service', id],
      ['service', 'suspend', id, ...flags],
      ['service', 'archive', id, ...flags],
      ['export', id, '--output', absent, ...flags],
      // The input does not exist: a dry run that went on would say storage_unavailable.
      ['import', '--input', absent, '--dry-run'],
      ['import', '--input', absent, '--operation-id', OP(71), '--yes'],
      ['service', 'purge', id, '--override', '--confirm-service-id', id, ...flags],
    ]) {
      const run = aipcs([...command, '--profile', 'stateless']);
      expect([run.status, run.envelope.error?.code], command.join(' ')).toEqual([3, 'unsupported_operation']);
    }
  });
});
