// The read-only administration reports (operations spec §1.8): migration
// state objects, `status`, `doctor` and the service-store state. Built from
// what inspection found and from registry reads; nothing here creates,
// migrates, repairs or writes anything.

import type { JsonObject } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import type { OperatorStoragePorts } from './application.js';
import type { LifecycleService } from './lifecycle.js';
import { StorageFailure, type BackendName, type ClaimRow, type MigrationState, type ServiceRow } from './ports.js';

export type ProfileName = 'stateless' | 'sqlite' | 'postgresql';
export type Component = 'registry' | 'service_store';

/** What the admin composition found: the registry state and, when ready, the ports. */
export interface AdminContext {
  readonly profile: ProfileName;
  /** null under stateless. */
  readonly backend: BackendName | null;
  /** null under stateless. */
  readonly registry: MigrationState | null;
  /** Open only when the registry is ready. */
  readonly storage: OperatorStoragePorts | null;
  readonly lifecycle: LifecycleService | null;
  readonly principalId: string | null;
}

const STATUS_ISSUES: Readonly<Record<Exclude<MigrationState['status'], 'unavailable'>, string | null>> = {
  ready: null,
  uninitialised: 'storage_uninitialised',
  outdated: 'storage_migration_required',
  incompatible: 'storage_incompatible',
  dirty: 'storage_dirty',
};

export function issueCodeOf(state: MigrationState): string | null {
  if (state.status === 'unavailable') return state.reason === 'busy' ? 'storage_busy' : 'storage_unavailable';
  return STATUS_ISSUES[state.status];
}

/**
 * Our adapters number their own revisions from 1 (decisions D16); the
 * migration-state object shows them on the public scale of operations spec
 * §1.8 (targets: SQLite registry 4, SQLite store 3, PostgreSQL registry 2,
 * PostgreSQL store 1), which scripts and clients compare against. Each of our
 * current revisions covers what the corresponding public one does (our
 * SQLite registry 1, the one before transfer, stands where the public 3
 * does), so the mapping is a fixed offset; 0 (nothing applied) stays 0.
 */
const PUBLIC_REVISION_OFFSET: Readonly<Record<BackendName, Readonly<Record<Component, bigint>>>> = {
  sqlite: { registry: 2n, service_store: 2n },
  postgresql: { registry: 1n, service_store: 0n },
};

function publicRevision(revision: bigint | null, backend: BackendName, component: Component): bigint | null {
  if (revision === null || revision <= 0n) return revision;
  return revision + PUBLIC_REVISION_OFFSET[backend][component];
}

/**
 * `{"component","backend","status","applied_revision","target_revision","issue_code"}`.
 * Only an unavailable state has null revisions (operations spec §1.8); an
 * incompatible one whose revision is not ours to name shows 0, as the
 * reference's integer field does.
 */
export function migrationStateObject(component: Component, backend: BackendName, state: MigrationState): JsonObject {
  const unavailable = state.status === 'unavailable';
  return {
    component,
    backend,
    status: state.status,
    applied_revision: unavailable ? null : publicRevision(state.appliedRevision ?? 0n, backend, component),
    target_revision: unavailable ? null : publicRevision(state.targetRevision, backend, component),
    issue_code: issueCodeOf(state),
  };
}

/** The state object of a service's store; a service that is not materialised has none yet. */
export async function serviceStoreState(storage: OperatorStoragePorts, service: ServiceRow): Promise<JsonObject> {
  if (service.designState !== 'materialised' || service.storage === null) {
    return { component: 'service_store', backend: storage.backend, status: 'uninitialised', applied_revision: 0n, target_revision: null, issue_code: 'service_not_materialised' };
  }
  return migrationStateObject('service_store', service.storage.backend, await storage.stores.inspect(service.storage));
}

function recoveryOf(claim: ClaimRow | undefined): 'clear' | 'pending' | 'recovery_required' {
  if (!claim) return 'clear';
  return claim.phase === 'prepared' ? 'pending' : 'recovery_required';
}

function sortedCounts(counts: Map<string, bigint>): JsonObject {
  const out: JsonObject = {};
  for (const key of [...counts.keys()].sort()) out[key] = counts.get(key) ?? 0n;
  return out;
}

const STATUS_SAMPLE = 100;

/** `aipcs status`: registry state, bounded service counts and the overall verdict. */
export async function statusReport(context: AdminContext): Promise<JsonObject> {
  const empty = { design: {}, operational: {}, recovery: {}, truncated: false };
  if (context.backend === null || context.registry === null) {
    return { profile: context.profile, backend: null, registry: null, services: empty, overall: 'unavailable' };
  }
  const registry = migrationStateObject('registry', context.backend, context.registry);
  let services: JsonObject = empty;
  let overall: 'ready' | 'attention_required' | 'unavailable' = context.registry.status === 'ready' ? 'ready' : context.registry.status === 'unavailable' ? 'unavailable' : 'attention_required';
  const storage = context.storage;
  const principalId = context.principalId;
  if (context.registry.status === 'ready' && storage && principalId !== null) {
    try {
      const rows = await storage.registry.read(async (tx) => {
        const listed = await tx.listServices(principalId, STATUS_SAMPLE + 1);
        const withRecovery: { service: ServiceRow; recovery: string }[] = [];
        for (const service of listed.slice(0, STATUS_SAMPLE)) withRecovery.push({ service, recovery: recoveryOf(await tx.getActiveClaim(principalId, service.serviceId)) });
        return { listed: withRecovery, truncated: listed.length > STATUS_SAMPLE };
      });
      const design = new Map<string, bigint>();
      const operational = new Map<string, bigint>();
      const recovery = new Map<string, bigint>();
      const bump = (map: Map<string, bigint>, key: string) => map.set(key, (map.get(key) ?? 0n) + 1n);
      for (const { service, recovery: state } of rows.listed) {
        bump(design, service.designState);
        bump(operational, service.operationalStatus);
        bump(recovery, state);
      }
      services = { design: sortedCounts(design), operational: sortedCounts(operational), recovery: sortedCounts(recovery), truncated: rows.truncated };
      if ([...recovery.keys()].some((key) => key !== 'clear')) overall = 'attention_required';
    } catch {
      overall = 'unavailable';
    }
  }
  return { profile: context.profile, backend: context.backend, registry, services, overall };
}

type CheckStatus = 'pass' | 'warning' | 'fail';

interface Check {
  readonly check_id: string;
  readonly status: CheckStatus;
  readonly issue_code: string | null;
}

const pass = (id: string): Check => ({ check_id: id, status: 'pass', issue_code: null });
const warn = (id: string, issue: string): Check => ({ check_id: id, status: 'warning', issue_code: issue });
const fail = (id: string, issue: string): Check => ({ check_id: id, status: 'fail', issue_code: issue });

/**
 * A failure while checking: busy storage is a warning, other storage or
 * contract failures fail as storage_unavailable, and anything else (a
 * defect of ours) fails as internal_error (§1.8), not as an outage.
 */
function failureCheck(id: string, error: unknown): Check {
  if (error instanceof StorageFailure && error.kind === 'busy') return warn(id, 'storage_busy');
  if (error instanceof AipcsError && error.code === 'storage_busy') return warn(id, 'storage_busy');
  if (error instanceof StorageFailure || error instanceof AipcsError) return fail(id, 'storage_unavailable');
  return fail(id, 'internal_error');
}

/** `aipcs doctor [--service ID]`: ordered checks, stopping where a later one cannot mean anything. */
export async function doctorReport(context: AdminContext, serviceId: string | null): Promise<JsonObject> {
  const checks: Check[] = [pass('configuration'), pass('runtime')];
  await runChecks(context, serviceId, checks);
  const rank: Record<CheckStatus, number> = { pass: 0, warning: 1, fail: 2 };
  const overall = checks.reduce<CheckStatus>((worst, check) => (rank[check.status] > rank[worst] ? check.status : worst), 'pass');
  return {
    profile: context.profile,
    backend: context.backend,
    service_id: serviceId,
    overall,
    checks: checks.map((check) => ({ check_id: check.check_id, status: check.status, issue_code: check.issue_code })),
  };
}

async function runChecks(context: AdminContext, serviceId: string | null, checks: Check[]): Promise<void> {
  if (context.backend === null || context.registry === null) {
    checks.push(fail('persistent_profile', 'persistent_storage_not_configured'));
    return;
  }
  if (context.profile === 'postgresql') checks.push(pass('credential_reference'));
  const registry = context.registry;
  if (registry.status === 'ready') checks.push(pass('registry_migration'));
  else if (registry.status === 'outdated' || (registry.status === 'unavailable' && registry.reason === 'busy')) checks.push(warn('registry_migration', issueCodeOf(registry) ?? 'storage_unavailable'));
  else checks.push(fail('registry_migration', issueCodeOf(registry) ?? 'storage_unavailable'));
  const storage = context.storage;
  const principalId = context.principalId;
  if (registry.status !== 'ready' || serviceId === null || !storage || principalId === null || !context.lifecycle) return;

  let found: { service: ServiceRow | undefined; claim: ClaimRow | undefined };
  try {
    found = await storage.registry.read(async (tx) => {
      const service = await tx.getService(principalId, serviceId);
      return { service, claim: service ? await tx.getActiveClaim(principalId, serviceId) : undefined };
    });
  } catch (error) {
    checks.push(failureCheck('service_identity', error));
    return;
  }
  const service = found.service;
  if (!service) {
    checks.push(fail('service_identity', 'service_not_found'));
    return;
  }
  checks.push(pass('service_identity'));
  const recovery = recoveryOf(found.claim);
  checks.push(recovery === 'clear' ? pass('admission_fence') : recovery === 'pending' ? warn('admission_fence', 'operation_in_progress') : fail('admission_fence', 'recovery_required'));

  const locator = service.designState === 'materialised' ? service.storage : null;
  let storeReady = false;
  if (!locator) {
    checks.push(warn('service_store_migration', 'service_not_materialised'));
  } else {
    const state = await storage.stores.inspect(locator);
    storeReady = state.status === 'ready';
    if (storeReady) checks.push(pass('service_store_migration'));
    else if (state.status === 'outdated' || (state.status === 'unavailable' && state.reason === 'busy')) checks.push(warn('service_store_migration', issueCodeOf(state) ?? 'storage_unavailable'));
    else checks.push(fail('service_store_migration', issueCodeOf(state) ?? 'storage_unavailable'));
  }

  const manifest = context.lifecycle.manifestOf(service);
  if (!locator || !storeReady || !manifest) {
    checks.push(warn('domain_schema', 'domain_schema_not_inspectable'));
    return;
  }
  try {
    const observation = await storage.stores.observe(locator, context.lifecycle.layoutOf(manifest));
    if (observation.state === 'ready') checks.push(pass('domain_schema'));
    else if (observation.state === 'uninitialised') checks.push(fail('domain_schema', 'domain_schema_unmaterialised'));
    else if (observation.state === 'incompatible') checks.push(fail('domain_schema', 'domain_schema_incompatible'));
    else checks.push(fail('domain_schema', 'storage_unavailable'));
  } catch (error) {
    checks.push(failureCheck('domain_schema', error));
  }
}
