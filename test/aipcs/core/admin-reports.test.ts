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
import { doctorReport, statusReport, type AdminContext } from '../../../src/aipcs/core/admin-reports.js';
import type { LifecycleService } from '../../../src/aipcs/core/lifecycle.js';
import { StorageFailure, type StoreObservation } from '../../../src/aipcs/core/ports.js';
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

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'aipcs-admin-reports-'));
    storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
    const made = await materialisedNotes(storage);
    serviceId = made.serviceId;
    lifecycle = made.app.lifecycle;
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
});
