// The admin reports (operations spec §1.8, `status` and `doctor`) over a real
// SQLite data root, for what a storage port may answer but the built CLI
// cannot be made to meet on demand: a registry read that fails after
// inspection found the registry ready, a store that is gone by the time its
// domain tables are observed (a purge between the two reads), and a store
// busy or unavailable while it is observed. The ports are the real ones with
// one member replaced (test/support/operator.ts `overriding`).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OperatorStoragePorts } from '../../../src/aipcs/core/application.js';
import { doctorReport, migrationStateObject, statusReport, type AdminContext } from '../../../src/aipcs/core/admin-reports.js';
import type { LifecycleService } from '../../../src/aipcs/core/lifecycle.js';
import { AipcsError } from '../../../src/aipcs/contract/error-codes.js';
import { StorageFailure, type MigrationState, type OperatorRegistryReader, type StoreObservation } from '../../../src/aipcs/core/ports.js';
import { openSqliteStorage } from '../../../src/aipcs/storage/sqlite/index.js';
import type { JsonObject } from '../../../src/common/json.js';
import { materialisedNotes } from '../../conformance/harness.js';
import { overriding } from '../../support/operator.js';

const READY = { status: 'ready', appliedRevision: 2n, targetRevision: 2n, reason: null } as const;

describe('admin reports over ports that fail', () => {
  let base: string;
  let storage: OperatorStoragePorts;
  let serviceId: string;
  let lifecycle: LifecycleService;
  let seedMore: (count: number) => Promise<void>;

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-admin-reports-'));
    storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
    const made = await materialisedNotes(storage);
    serviceId = made.serviceId;
    lifecycle = made.app.lifecycle;
    let seeded = 0;
    seedMore = async (count) => {
      for (let i = 0; i < count; i++, seeded++) {
        await made.app.lifecycle.seed({ domainName: `extra_${seeded}`, domainClass: 'knowledge', intentDescription: 'More.', idempotencyKey: `s-extra-${seeded}` });
      }
    };
  });

  afterEach(async () => {
    await storage.close();
    rmSync(base, { recursive: true, force: true });
  });

  const context = (ports: OperatorStoragePorts): AdminContext => ({ profile: 'sqlite', backend: 'sqlite', registry: READY, storage: ports, lifecycle, principalId: 'agent-a' });

  async function doctorChecks(ports: OperatorStoragePorts): Promise<{ overall: unknown; checks: unknown[] }> {
    const report = await doctorReport(context(ports), serviceId);
    return { overall: report['overall'], checks: (report['checks'] as JsonObject[]).map((check) => [check['check_id'], check['status'], check['issue_code']]) };
  }

  const observing = (observe: () => Promise<StoreObservation>): OperatorStoragePorts => ({ ...storage, stores: overriding(storage.stores, { observe }) });

  it('status: a ready registry whose projection cannot be read is unavailable, not attention_required', async () => {
    expect(await statusReport(context(storage))).toMatchObject({ services: { design: { materialised: 1n } }, overall: 'ready' });
    for (const kind of ['unavailable', 'busy'] as const) {
      const failing = { ...storage, registry: overriding(storage.registry, { read: async () => Promise.reject(new StorageFailure(kind)) }) };
      expect(await statusReport(context(failing))).toEqual({
        profile: 'sqlite',
        backend: 'sqlite',
        registry: { component: 'registry', backend: 'sqlite', status: 'ready', applied_revision: 4n, target_revision: 4n, issue_code: null },
        services: { design: {}, operational: {}, recovery: {}, truncated: false },
        overall: 'unavailable',
      });
    }
  });

  it('doctor: a store whose domain tables are gone when observed fails domain_schema with domain_schema_unmaterialised', async () => {
    expect(await doctorChecks(storage)).toMatchObject({ overall: 'pass' });
    expect(await doctorChecks(observing(async () => ({ state: 'uninitialised' })))).toEqual({
      overall: 'fail',
      checks: [
        ['configuration', 'pass', null],
        ['runtime', 'pass', null],
        ['registry_migration', 'pass', null],
        ['service_identity', 'pass', null],
        ['admission_fence', 'pass', null],
        ['service_store_migration', 'pass', null],
        ['domain_schema', 'fail', 'domain_schema_unmaterialised'],
      ],
    });
    expect((await doctorChecks(observing(async () => ({ state: 'incompatible' })))).checks.at(-1)).toEqual(['domain_schema', 'fail', 'domain_schema_incompatible']);
  });

  it('doctor: a store busy while observed is a domain_schema warning (storage_busy), one that fails otherwise a failure (storage_unavailable)', async () => {
    expect(await doctorChecks(observing(async () => Promise.reject(new StorageFailure('busy'))))).toMatchObject({ overall: 'warning' });
    expect((await doctorChecks(observing(async () => Promise.reject(new StorageFailure('busy'))))).checks.at(-1)).toEqual(['domain_schema', 'warning', 'storage_busy']);
    expect((await doctorChecks(observing(async () => Promise.reject(new StorageFailure('unavailable'))))).checks.at(-1)).toEqual(['domain_schema', 'fail', 'storage_unavailable']);
    expect((await doctorChecks(observing(async () => ({ state: 'unavailable' })))).checks.at(-1)).toEqual(['domain_schema', 'fail', 'storage_unavailable']);
  });

  // §1.8 lists internal_error for domain_schema: a defect must not read as a storage outage.
  it('doctor: a throw that is no storage or contract failure fails its check as internal_error', async () => {
    expect((await doctorChecks(observing(async () => Promise.reject(new TypeError('a defect'))))).checks.at(-1)).toEqual(['domain_schema', 'fail', 'internal_error']);
    const broken = { ...storage, registry: overriding(storage.registry, { read: async () => Promise.reject(new RangeError('a defect')) }) };
    expect((await doctorChecks(broken)).checks.at(-1)).toEqual(['service_identity', 'fail', 'internal_error']);
  });

  it('doctor: a registry busy while the service is read is a service_identity warning (storage_busy), and the checks stop there', async () => {
    const busy = { ...storage, registry: overriding(storage.registry, { read: async () => Promise.reject(new StorageFailure('busy')) }) };
    expect(await doctorChecks(busy)).toEqual({
      overall: 'warning',
      checks: [
        ['configuration', 'pass', null],
        ['runtime', 'pass', null],
        ['registry_migration', 'pass', null],
        ['service_identity', 'warning', 'storage_busy'],
      ],
    });
  });

  // Operations spec §1.8: at most 100 services are counted and `truncated` flags more, so exactly 100 is not truncated.
  it('status: exactly 100 services are counted in full and not truncated; a 101st is left out and flagged', async () => {
    await seedMore(99);
    expect((await statusReport(context(storage)))['services']).toEqual({ design: { materialised: 1n, seeded: 99n }, operational: { active: 100n }, recovery: { clear: 100n }, truncated: false });
    await seedMore(1);
    const services = (await statusReport(context(storage)))['services'] as JsonObject;
    expect([services['operational'], services['truncated']]).toEqual([{ active: 100n }, true]);
  });

  // Contract and operations spec: busy is the one retryable storage refusal, whichever layer names it.
  it('doctor: a port refusing with the contract error storage_busy is a warning, any other contract error a failure', async () => {
    const refusing = (error: AipcsError) => ({ ...storage, registry: overriding(storage.registry, { read: async () => Promise.reject(error) }) });
    expect((await doctorChecks(refusing(new AipcsError('storage_busy')))).checks.at(-1)).toEqual(['service_identity', 'warning', 'storage_busy']);
    expect((await doctorChecks(refusing(new AipcsError('storage_unavailable')))).checks.at(-1)).toEqual(['service_identity', 'fail', 'storage_unavailable']);
  });

  it('doctor: a store that is outdated or busy is a warning and its domain schema is not inspected; one unavailable or incompatible fails', async () => {
    const inspecting = (state: MigrationState): OperatorStoragePorts => ({ ...storage, stores: overriding(storage.stores, { inspect: async () => state }) });
    const cases: [MigrationState, unknown[], string][] = [
      [{ status: 'outdated', appliedRevision: 0n, targetRevision: 1n, reason: null }, ['service_store_migration', 'warning', 'storage_migration_required'], 'warning'],
      [{ status: 'unavailable', appliedRevision: null, targetRevision: null, reason: 'busy' }, ['service_store_migration', 'warning', 'storage_busy'], 'warning'],
      [{ status: 'unavailable', appliedRevision: null, targetRevision: null, reason: 'unavailable' }, ['service_store_migration', 'fail', 'storage_unavailable'], 'fail'],
      [{ status: 'incompatible', appliedRevision: null, targetRevision: 1n, reason: null }, ['service_store_migration', 'fail', 'storage_incompatible'], 'fail'],
    ];
    for (const [state, check, overall] of cases) {
      const report = await doctorChecks(inspecting(state));
      expect([report.overall, report.checks.slice(5)]).toEqual([overall, [check, ['domain_schema', 'warning', 'domain_schema_not_inspectable']]]);
    }
  });

  it('doctor and status: each registry state gives its registry_migration outcome and overall, and stops the checks unless ready', async () => {
    const cases: [MigrationState, unknown[], string, string][] = [
      [{ status: 'outdated', appliedRevision: 1n, targetRevision: 2n, reason: null }, ['registry_migration', 'warning', 'storage_migration_required'], 'warning', 'attention_required'],
      [{ status: 'unavailable', appliedRevision: null, targetRevision: null, reason: 'busy' }, ['registry_migration', 'warning', 'storage_busy'], 'warning', 'unavailable'],
      [{ status: 'unavailable', appliedRevision: null, targetRevision: null, reason: 'unavailable' }, ['registry_migration', 'fail', 'storage_unavailable'], 'fail', 'unavailable'],
      [{ status: 'incompatible', appliedRevision: null, targetRevision: 2n, reason: null }, ['registry_migration', 'fail', 'storage_incompatible'], 'fail', 'attention_required'],
      [{ status: 'dirty', appliedRevision: 2n, targetRevision: 2n, reason: null }, ['registry_migration', 'fail', 'storage_dirty'], 'fail', 'attention_required'],
      [{ status: 'uninitialised', appliedRevision: null, targetRevision: 2n, reason: null }, ['registry_migration', 'fail', 'storage_uninitialised'], 'fail', 'attention_required'],
    ];
    for (const [registry, check, overall, statusOverall] of cases) {
      // The ports stay open here, so only the registry state can stop the service checks.
      const stateContext: AdminContext = { ...context(storage), registry };
      const report = await doctorReport(stateContext, serviceId);
      expect([report['overall'], (report['checks'] as JsonObject[]).map((c) => [c['check_id'], c['status'], c['issue_code']]).slice(2)]).toEqual([overall, [check]]);
      const status = await statusReport(stateContext);
      expect([status['overall'], status['services']]).toEqual([statusOverall, { design: {}, operational: {}, recovery: {}, truncated: false }]);
    }
  });

  it('doctor under postgresql: the credential reference check passes between runtime and the registry', async () => {
    const report = await doctorReport({ profile: 'postgresql', backend: 'postgresql', registry: { status: 'uninitialised', appliedRevision: null, targetRevision: 1n, reason: null }, storage: null, lifecycle: null, principalId: 'agent-a' }, null);
    expect(report).toEqual({
      profile: 'postgresql',
      backend: 'postgresql',
      service_id: null,
      overall: 'fail',
      checks: [
        { check_id: 'configuration', status: 'pass', issue_code: null },
        { check_id: 'runtime', status: 'pass', issue_code: null },
        { check_id: 'credential_reference', status: 'pass', issue_code: null },
        { check_id: 'registry_migration', status: 'fail', issue_code: 'storage_uninitialised' },
      ],
    });
    expect(Object.keys(report)).toEqual(['profile', 'backend', 'service_id', 'overall', 'checks']);
  });

  // Public revision scale (operations spec §1.8): PostgreSQL registry target 2, store target 1; nothing applied stays 0.
  it('migration-state objects of PostgreSQL put our revisions on the public scale, keys in spec order', () => {
    const registry = migrationStateObject('registry', 'postgresql', { status: 'ready', appliedRevision: 1n, targetRevision: 1n, reason: null });
    expect(registry).toEqual({ component: 'registry', backend: 'postgresql', status: 'ready', applied_revision: 2n, target_revision: 2n, issue_code: null });
    expect(Object.keys(registry)).toEqual(['component', 'backend', 'status', 'applied_revision', 'target_revision', 'issue_code']);
    expect(migrationStateObject('service_store', 'postgresql', { status: 'uninitialised', appliedRevision: 0n, targetRevision: 1n, reason: null })).toEqual({
      component: 'service_store',
      backend: 'postgresql',
      status: 'uninitialised',
      applied_revision: 0n,
      target_revision: 1n,
      issue_code: 'storage_uninitialised',
    });
  });

  // Operations spec §1.8: sorted keys. Listing newest first puts seeded before materialised.
  it('status: the counts have sorted keys whatever order the services are listed in', async () => {
    await seedMore(1);
    const reversed: OperatorStoragePorts = {
      ...storage,
      registry: overriding(storage.registry, {
        read: async <T>(work: (tx: OperatorRegistryReader) => Promise<T>): Promise<T> =>
          storage.registry.read((tx) => work(overriding(tx, { listServices: async (principal: string, limit: number) => [...(await tx.listServices(principal, limit))].reverse() }))),
      }),
    };
    const services = (await statusReport(context(reversed)))['services'] as JsonObject;
    expect(services).toEqual({ design: { materialised: 1n, seeded: 1n }, operational: { active: 2n }, recovery: { clear: 2n }, truncated: false });
    expect(Object.keys(services['design'] as JsonObject)).toEqual(['materialised', 'seeded']);
  });

  // Operations spec §1.8 and §1.3: the JSON keeps the spec's key order (scripts compare text).
  it('status: keys in spec order, ready or stateless', async () => {
    const ready = await statusReport(context(storage));
    const stateless = await statusReport({ profile: 'stateless', backend: null, registry: null, storage: null, lifecycle: null, principalId: null });
    for (const report of [ready, stateless]) {
      expect(Object.keys(report)).toEqual(['profile', 'backend', 'registry', 'services', 'overall']);
      expect(Object.keys(report['services'] as JsonObject)).toEqual(['design', 'operational', 'recovery', 'truncated']);
    }
    expect(stateless).toEqual({ profile: 'stateless', backend: null, registry: null, services: { design: {}, operational: {}, recovery: {}, truncated: false }, overall: 'unavailable' });
  });
});
