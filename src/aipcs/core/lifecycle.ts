// Service lifecycle use cases: seed, list, inspect, design, materialise and
// evolve, with the registry's idempotency ledger and durable intent. Every
// rule and check order of contract §5 lives here once; storage is reached
// only through ports. Materialise/evolve admit a prepared claim, do the
// physical work, then finalise with compare-and-swap in a fresh unit.

import { stringifyExact, type JsonObject, type JsonValue } from '../../common/json.js';
import { WeighedCache } from '../../common/weighed-cache.js';
import { AipcsError } from '../contract/error-codes.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import { canAdvance } from './counters.js';
import { storeLayoutOf } from './layout.js';
import { StorageFailure, type BackendName, type ClaimKind, type ClaimRow, type Micros, type RegistryPort, type RegistryReader, type RegistryWriter, type ServiceRow, type ServiceStorePort, type StorageLocator, type StoreLayout, type WriteFence } from './ports.js';
import { PAGE_TEXT_BUDGET } from './records.js';
import { TextBudget } from './text-budget.js';
import { formatTimestamp, timeAfter } from './time.js';

/** Manifest services the lifecycle needs from the contract layer. */
export interface ManifestRules {
  /** The normalised echo document (contract §4.9) of a validated manifest; integers as bigint. */
  toDocument(manifest: ManifestV2): JsonObject;
  /** Reads back a stored normalised document. */
  fromDocument(document: JsonValue): ManifestV2;
  /** Whether `target` is an accepted adjacent additive successor of `current` (contract §4.11). */
  isAcceptedEvolution(current: ManifestV2, target: ManifestV2): boolean;
}

export interface LifecycleDependencies {
  readonly registry: RegistryPort;
  readonly stores: ServiceStorePort;
  readonly backend: BackendName;
  readonly principalId: string;
  readonly createdVia: 'mcp' | 'cli';
  readonly manifests: ManifestRules;
  nowMicros(): Micros;
  newServiceId(): string;
  /** Lowercase hex SHA-256 of UTF-8 text. */
  sha256(text: string): string;
  /** Canonical JSON text used for fingerprints. */
  canonical(value: unknown): string;
  /** Fault injection for crash tests; a no-op in production. */
  checkpoint?(name: string): void;
}

export interface SeedCommand {
  readonly domainName: string;
  readonly domainClass: string;
  readonly intentDescription: string;
  readonly idempotencyKey: string;
}

export interface DesignCommand {
  readonly serviceId: string;
  readonly manifest: ManifestV2;
  readonly idempotencyKey: string;
}

export interface MaterialiseCommand {
  readonly serviceId: string;
  readonly expectedServiceRevision: bigint;
  readonly expectedSchemaVersion: bigint;
  readonly idempotencyKey: string;
}

export interface EvolveCommand extends MaterialiseCommand {
  readonly manifest: ManifestV2;
}

export type RecoveryState = 'clear' | 'pending' | 'recovery_required';

/** Data tools ask this before touching a service store; see contract §6.1. */
export interface DataAdmission {
  readonly service: ServiceRow;
  readonly manifest: ManifestV2;
  readonly layout: StoreLayout;
}

/**
 * Admission for a data mutation: also the generation of the store's write
 * fence, read no later than the registry said active. The write unit
 * requires the fence open at that generation, so a mutation admitted before
 * a suspend or archive never commits after it, even once a resume has
 * opened the fence again (ops spec §4.3).
 */
export interface MutationAdmission extends DataAdmission {
  readonly fenceGeneration: bigint;
}

/** Hook that lets storage refuse an evolve at admission (unique index over duplicates). */
export type EvolvePrecheck = (service: ServiceRow, current: ManifestV2, target: ManifestV2) => Promise<boolean>;

export function namespaceOf(serviceId: string): string {
  return `svc_${serviceId.replaceAll('-', '')}`;
}

function recoveryStateOf(claim: ClaimRow | undefined): RecoveryState {
  if (!claim) return 'clear';
  return claim.phase === 'prepared' ? 'pending' : 'recovery_required';
}

/**
 * Parsed manifests kept by one server, most recently used last: enough for
 * the services an agent works with at once, while a principal's thousands of
 * services (or services purged since) do not stay parsed for good.
 */
export const MAX_CACHED_MANIFESTS = 256;

/**
 * And at most this much manifest text (JSON characters) in all: a parsed
 * manifest weighs a few times its text, and 256 of them near the megabyte
 * bound would keep about a gigabyte.
 */
export const MAX_CACHED_MANIFEST_TEXT = 16 * 1024 * 1024;

export class LifecycleService {
  /**
   * The parsed manifest of recently met services (within MAX_CACHED_MANIFESTS
   * and MAX_CACHED_MANIFEST_TEXT), for the current schema version only: an
   * evolve replaces the entry, so a long-lived server does not keep every
   * version it ever parsed.
   */
  private readonly manifestCache = new WeighedCache<string, { readonly schemaVersion: number; readonly manifest: ManifestV2 }>(MAX_CACHED_MANIFESTS, MAX_CACHED_MANIFEST_TEXT);

  constructor(
    private readonly deps: LifecycleDependencies,
    private readonly evolvePrecheck?: EvolvePrecheck,
  ) {}

  // -------------------------------------------------------------------------
  // Projection

  /** ServiceMetadata (contract §5.1), keys in contract order. */
  project(service: ServiceRow, recovery: RecoveryState): JsonObject {
    return {
      service_id: service.serviceId,
      domain_name: service.domainName,
      domain_class: service.domainClass,
      intent_description: service.intentDescription,
      design_state: service.designState,
      operational_status: service.operationalStatus,
      schema: service.manifest,
      schema_version: service.schemaVersion === null ? null : BigInt(service.schemaVersion),
      service_revision: service.serviceRevision,
      recovery_state: recovery,
      created_at: formatTimestamp(service.createdAt),
      updated_at: formatTimestamp(service.updatedAt),
      last_activity_at: formatTimestamp(service.lastActivityAt),
      materialised_at: service.materialisedAt === null ? null : formatTimestamp(service.materialisedAt),
      storage: service.storage === null ? null : { backend: service.storage.backend, namespace: service.storage.namespace },
    };
  }

  private async projectCurrent(tx: RegistryReader, service: ServiceRow): Promise<JsonObject> {
    return this.project(service, recoveryStateOf(await tx.getActiveClaim(this.deps.principalId, service.serviceId)));
  }

  /** A stored result snapshot with its recovery_state replaced. */
  private withRecovery(result: JsonValue | null, recovery: RecoveryState): JsonObject {
    const snapshot = (result ?? {}) as JsonObject;
    return { ...snapshot, recovery_state: recovery };
  }

  private fingerprint(kind: ClaimKind, fields: JsonObject): string {
    return this.deps.sha256(this.deps.canonical({ kind, principal: this.deps.principalId, created_via: this.deps.createdVia, ...fields }));
  }

  private readonly layoutCache = new WeakMap<ManifestV2, StoreLayout>();

  /** The physical layout of a manifest, derived once per cached manifest. */
  layoutOf(manifest: ManifestV2): StoreLayout {
    let layout = this.layoutCache.get(manifest);
    if (!layout) {
      layout = storeLayoutOf(manifest);
      this.layoutCache.set(manifest, layout);
    }
    return layout;
  }

  manifestOf(service: ServiceRow): ManifestV2 | null {
    if (service.manifest === null || service.schemaVersion === null) return null;
    const cached = this.manifestCache.get(service.serviceId);
    if (cached?.schemaVersion === service.schemaVersion) return cached.manifest;
    const manifest = this.deps.manifests.fromDocument(service.manifest);
    this.manifestCache.set(service.serviceId, { schemaVersion: service.schemaVersion, manifest }, stringifyExact(service.manifest).length);
    return manifest;
  }

  private wrapStorage<T>(work: () => Promise<T>, uncertain: 'operation_uncertain_lifecycle' | 'operation_uncertain_data' = 'operation_uncertain_lifecycle'): Promise<T> {
    return work().catch((error: unknown) => {
      if (error instanceof AipcsError) throw error;
      if (error instanceof StorageFailure) {
        if (error.kind === 'busy') throw new AipcsError('storage_busy', { cause: error });
        if (error.kind === 'uncertain') throw new AipcsError(uncertain, { cause: error });
        throw new AipcsError('storage_unavailable', { cause: error });
      }
      throw error;
    });
  }

  // -------------------------------------------------------------------------
  // Reads

  /**
   * The first `limit` services. For a tool result (`textBudget`), only the
   * leading ones whose projections fit PAGE_TEXT_BUDGET (the first always);
   * the admin command lists them all.
   */
  async list(limit: number, textBudget = false): Promise<JsonObject> {
    return this.wrapStorage(() =>
      this.deps.registry.read(async (tx) => {
        const services = await tx.listServices(this.deps.principalId, limit);
        // The leading services whose projections fit the page budget (always
        // the first): each carries its whole manifest, which the contract bounds
        // only by its parts, so 100 of them could make a line of gigabytes.
        const budget = new TextBudget(textBudget ? PAGE_TEXT_BUDGET : Number.POSITIVE_INFINITY);
        const projected: JsonObject[] = [];
        for (const service of services) {
          const kept = budget.prefix([await this.projectCurrent(tx, service)], projected.length === 0);
          if (kept.length === 0) break;
          projected.push(...kept);
        }
        return { services: projected };
      }),
    );
  }

  async inspect(serviceId: string): Promise<JsonObject> {
    return this.wrapStorage(() =>
      this.deps.registry.read(async (tx) => {
        const service = await tx.getService(this.deps.principalId, serviceId);
        if (!service) throw new AipcsError('not_found_service');
        return this.projectCurrent(tx, service);
      }),
    );
  }

  /** Admission for data tools (contract §6.1): the service must be materialised, active and clear. */
  async admitData(serviceId: string): Promise<DataAdmission> {
    return this.wrapStorage(async () => {
      const { service, claim } = await this.deps.registry.read(async (tx) => {
        const found = await tx.getService(this.deps.principalId, serviceId);
        return { service: found, claim: found ? await tx.getActiveClaim(this.deps.principalId, serviceId) : undefined };
      });
      return this.admitted(service, claim);
    }, 'operation_uncertain_data');
  }

  /** admitData for a data mutation, with the fence generation its write unit requires (MutationAdmission). */
  async admitMutation(serviceId: string): Promise<MutationAdmission> {
    return this.wrapStorage(async () => {
      const locator: StorageLocator = { backend: this.deps.backend, namespace: namespaceOf(serviceId) };
      const registry = this.deps.registry;
      // The fence is read before the registry rows, or in their snapshot: a
      // suspend that closes it after this read finds the generation moved.
      const stores = this.deps.stores;
      const readFence = (locator: StorageLocator): Promise<WriteFence> => (stores.peekFence ? stores.peekFence(locator) : stores.readFence(locator));
      const before = registry.readWithFence ? undefined : await readFence(locator).catch((error: unknown) => ({ error }));
      const read = async (tx: RegistryReader, fenceOf?: (locator: StorageLocator) => Promise<WriteFence>) => {
        const found = await tx.getService(this.deps.principalId, serviceId);
        const active = found ? await tx.getActiveClaim(this.deps.principalId, serviceId) : undefined;
        const admissible = fenceOf && found?.storage && found.operationalStatus === 'active' && active === undefined;
        return { service: found, claim: active, fence: admissible ? await fenceOf(found.storage ?? locator) : before };
      };
      const { service, claim, fence } = await (registry.readWithFence ? registry.readWithFence(read) : registry.read((tx) => read(tx)));
      const admission = this.admitted(service, claim);
      if (fence && 'error' in fence) throw fence.error;
      const storage = admission.service.storage;
      if (!fence || fence.state !== 'open' || storage?.backend !== locator.backend || storage.namespace !== locator.namespace) {
        throw new AipcsError('storage_unavailable');
      }
      return { ...admission, fenceGeneration: fence.generation };
    }, 'operation_uncertain_data');
  }

  private admitted(service: ServiceRow | undefined, claim: ClaimRow | undefined): DataAdmission {
    if (!service) throw new AipcsError('not_found_data');
    if (claim?.phase === 'prepared') throw new AipcsError('storage_busy');
    if (claim?.phase === 'recovery_required') throw new AipcsError('storage_unavailable');
    if (service.designState !== 'materialised' || service.operationalStatus !== 'active' || service.storage === null) {
      throw new AipcsError('storage_unavailable');
    }
    const manifest = this.manifestOf(service);
    if (!manifest) throw new AipcsError('storage_unavailable');
    return { service, manifest, layout: this.layoutOf(manifest) };
  }

  // -------------------------------------------------------------------------
  // Seed and design: one registry unit each, no prepared phase.

  async seed(command: SeedCommand): Promise<JsonObject> {
    const fingerprint = this.fingerprint('seed', {
      domain_name: command.domainName,
      domain_class: command.domainClass,
      intent_description: command.intentDescription,
    });
    return this.wrapStorage(() =>
      this.deps.registry.write(async (tx) => {
        const replay = await this.replayRegistryClaim(tx, command.idempotencyKey, 'seed', fingerprint);
        if (replay) return replay;
        const now = this.deps.nowMicros();
        const existing = await tx.findServiceByDomain(this.deps.principalId, command.domainName);
        if (existing) {
          const projection = await this.projectCurrent(tx, existing);
          await tx.insertClaim(this.completedClaim('seed', command.idempotencyKey, fingerprint, existing.serviceId, projection, now));
          return projection;
        }
        // An import of this domain is under way (ops spec §5.9 step 5 reserved
        // it): a new service here would make that import fail at publication.
        // Retry: once published, the seed returns the imported service (§12.3).
        // An import that ended recovery-required keeps its reservation for
        // good: storage_unavailable (not retryable, as the contract answers
        // for a recovery-required service), not busy, which invited retries
        // for ever.
        const reservation = await tx.domainReservation(this.deps.principalId, command.domainName);
        if (reservation === 'frozen') throw new AipcsError('storage_unavailable');
        if (reservation === 'pending') throw new AipcsError('storage_busy');
        const service: ServiceRow = {
          serviceId: this.deps.newServiceId(),
          principalId: this.deps.principalId,
          domainName: command.domainName,
          domainClass: command.domainClass,
          intentDescription: command.intentDescription,
          createdAt: now,
          updatedAt: now,
          lastActivityAt: now,
          manifest: null,
          schemaVersion: null,
          designState: 'seeded',
          operationalStatus: 'active',
          serviceRevision: 1n,
          materialisedAt: null,
          storage: null,
        };
        await tx.insertService(service);
        const projection = this.project(service, 'clear');
        await tx.insertClaim(this.completedClaim('seed', command.idempotencyKey, fingerprint, service.serviceId, projection, now));
        return projection;
      }),
    );
  }

  async design(command: DesignCommand): Promise<JsonObject> {
    const document = this.deps.manifests.toDocument(command.manifest);
    const fingerprint = this.fingerprint('design', { service_id: command.serviceId, manifest: document });
    return this.wrapStorage(() =>
      this.deps.registry.write(async (tx) => {
        const replay = await this.replayRegistryClaim(tx, command.idempotencyKey, 'design', fingerprint);
        if (replay) return replay;
        const service = await tx.getService(this.deps.principalId, command.serviceId);
        if (!service) throw new AipcsError('not_found_service');
        if (service.operationalStatus !== 'active' || service.designState !== 'seeded' || service.manifest !== null) {
          throw new AipcsError('invalid_state');
        }
        if (!canAdvance(service.serviceRevision)) throw new AipcsError('invalid_state');
        // Another intent on the service (an operator's suspend, archive or
        // export of this seeded service) would find its revision moved and
        // freeze the service: wait for it (ops spec §4.1 last row, §4.5).
        const active = await tx.getActiveClaim(this.deps.principalId, service.serviceId);
        if (active?.phase === 'prepared') throw new AipcsError('storage_busy');
        if (active?.phase === 'recovery_required') throw new AipcsError('recovery_required');
        const now = this.deps.nowMicros();
        const at = timeAfter(now, service.createdAt, service.updatedAt, service.lastActivityAt);
        const designed: ServiceRow = {
          ...service,
          manifest: document,
          schemaVersion: 1,
          serviceRevision: service.serviceRevision + 1n,
          updatedAt: at,
          lastActivityAt: at,
        };
        if (!(await tx.updateService(designed, service.serviceRevision))) throw new AipcsError('storage_busy');
        const projection = await this.projectCurrent(tx, designed);
        await tx.insertClaim(this.completedClaim('design', command.idempotencyKey, fingerprint, service.serviceId, projection, now));
        return projection;
      }),
    );
  }

  /** Seed/design key handling: replay with the current recovery state, or `conflict`. */
  private async replayRegistryClaim(tx: RegistryReader, key: string, kind: 'seed' | 'design', fingerprint: string): Promise<JsonObject | undefined> {
    const claim = await tx.getClaim(this.deps.principalId, key);
    if (!claim) return undefined;
    if (claim.kind !== kind || claim.fingerprint !== fingerprint || claim.phase !== 'completed') throw new AipcsError('conflict');
    const recovery = claim.serviceId === null ? 'clear' : recoveryStateOf(await tx.getActiveClaim(this.deps.principalId, claim.serviceId));
    return this.withRecovery(claim.result, recovery);
  }

  private completedClaim(kind: ClaimKind, key: string, fingerprint: string, serviceId: string, result: JsonObject, now: Micros): ClaimRow {
    return {
      principalId: this.deps.principalId,
      idempotencyKey: key,
      kind,
      fingerprint,
      serviceId,
      phase: 'completed',
      intent: { service_id: serviceId },
      result,
      createdAt: now,
      updatedAt: now,
    };
  }

  // -------------------------------------------------------------------------
  // Materialise and evolve: admit (prepared), act, finalise.

  async materialise(command: MaterialiseCommand): Promise<JsonObject> {
    const fingerprint = this.fingerprint('materialise', {
      service_id: command.serviceId,
      expected_service_revision: command.expectedServiceRevision,
      expected_schema_version: command.expectedSchemaVersion,
    });
    return this.runPrepared('materialise', command, fingerprint, undefined);
  }

  async evolve(command: EvolveCommand): Promise<JsonObject> {
    const target = this.deps.manifests.toDocument(command.manifest);
    const fingerprint = this.fingerprint('evolve', {
      service_id: command.serviceId,
      expected_service_revision: command.expectedServiceRevision,
      expected_schema_version: command.expectedSchemaVersion,
      target_manifest: target,
    });
    return this.runPrepared('evolve', command, fingerprint, command.manifest);
  }

  private async runPrepared(kind: 'materialise' | 'evolve', command: MaterialiseCommand, fingerprint: string, target: ManifestV2 | undefined): Promise<JsonObject> {
    const admitted = await this.wrapStorage(() => this.admitPrepared(kind, command, fingerprint, target));
    if ('replay' in admitted) return admitted.replay;
    this.deps.checkpoint?.(`${kind}:admitted`);
    // From here the intent is recorded as prepared: storage lost before it
    // is finalised leaves it pending (data tools storage_busy, other keys
    // operation_in_progress) until this key is retried, so that is
    // operation_uncertain (contract §5.2), as a failed physical step is;
    // only a store found unreachable before any step says so (reconcile).
    return this.wrapStorage(() =>
      this.reconcile(admitted.claim).catch((error: unknown) => {
        throw error instanceof StorageFailure && error.kind === 'unavailable' ? new StorageFailure('uncertain', { cause: error }) : error;
      }),
    );
  }

  private async admitPrepared(
    kind: 'materialise' | 'evolve',
    command: MaterialiseCommand,
    fingerprint: string,
    target: ManifestV2 | undefined,
  ): Promise<{ replay: JsonObject } | { claim: ClaimRow }> {
    // Evolution acceptance and the data precheck need the current manifest,
    // read before the write unit so that the precheck does not hold the registry.
    let precheckFailed = false;
    if (kind === 'evolve' && target && this.evolvePrecheck) {
      const service = await this.deps.registry.read((tx) => tx.getService(this.deps.principalId, command.serviceId));
      const current = service ? this.manifestOf(service) : null;
      if (service && current && service.designState === 'materialised' && this.deps.manifests.isAcceptedEvolution(current, target)) {
        precheckFailed = !(await this.evolvePrecheck(service, current, target));
      }
    }
    return this.deps.registry.write(async (tx) => {
      const existing = await tx.getClaim(this.deps.principalId, command.idempotencyKey);
      if (existing) {
        if (existing.kind !== kind || existing.fingerprint !== fingerprint) throw new AipcsError('changed_fingerprint');
        if (existing.phase === 'completed') return { replay: this.withRecovery(existing.result, 'clear') };
        if (existing.phase === 'recovery_required') throw new AipcsError('recovery_required');
        return { claim: existing };
      }
      const service = await tx.getService(this.deps.principalId, command.serviceId);
      if (!service || service.serviceRevision !== command.expectedServiceRevision || service.schemaVersion === null || BigInt(service.schemaVersion) !== command.expectedSchemaVersion) {
        throw new AipcsError('stale_revision');
      }
      const stateAllows =
        service.operationalStatus === 'active' && (kind === 'materialise' ? service.designState === 'seeded' && service.manifest !== null : service.designState === 'materialised');
      if (!stateAllows || !canAdvance(service.serviceRevision)) throw new AipcsError('unsupported_transition');
      const active = await tx.getActiveClaim(this.deps.principalId, service.serviceId);
      if (active?.phase === 'prepared') throw new AipcsError('operation_in_progress');
      if (active?.phase === 'recovery_required') throw new AipcsError('recovery_required');
      let targetDocument: JsonObject | null = null;
      if (kind === 'evolve' && target) {
        const current = this.manifestOf(service);
        if (!current || !this.deps.manifests.isAcceptedEvolution(current, target)) throw new AipcsError('unsupported_transition');
        if (precheckFailed) throw new AipcsError('unsupported_transition');
        targetDocument = this.deps.manifests.toDocument(target);
      }
      const now = this.deps.nowMicros();
      const claim: ClaimRow = {
        principalId: this.deps.principalId,
        idempotencyKey: command.idempotencyKey,
        kind,
        fingerprint,
        serviceId: service.serviceId,
        phase: 'prepared',
        intent: {
          service_id: service.serviceId,
          expected_service_revision: command.expectedServiceRevision,
          expected_schema_version: command.expectedSchemaVersion,
          target_manifest: targetDocument,
        },
        result: null,
        createdAt: now,
        updatedAt: now,
      };
      await tx.insertClaim(claim);
      return { claim };
    });
  }

  /** Performs (or resumes) the physical work of a prepared claim, then finalises it. */
  private async reconcile(claim: ClaimRow): Promise<JsonObject> {
    const intent = claim.intent as JsonObject;
    const serviceId = intent['service_id'] as string;
    const expectedRevision = intent['expected_service_revision'] as bigint;
    const service = await this.deps.registry.read((tx) => tx.getService(this.deps.principalId, serviceId));
    const current = service ? this.manifestOf(service) : null;
    if (!service || !current || service.serviceRevision !== expectedRevision) {
      // The service moved under a prepared intent: nothing safe can be done.
      return this.finalise(claim, () => undefined, true);
    }
    const locator = { backend: this.deps.backend, namespace: namespaceOf(serviceId) };
    // Observed before any physical step (ops spec §4.2): a store that cannot
    // be reached (an unsafe location, a lost connection) defers the intent
    // with storage_unavailable, which an operator must mend; the intent stays
    // prepared and the same key completes it afterwards. After a physical
    // step, the same failure is operation_uncertain (below).
    if ((await this.deps.stores.observe(locator, storeLayoutOf(current))).state === 'unavailable') {
      throw new AipcsError('storage_unavailable');
    }
    try {
      if (claim.kind === 'materialise') {
        await this.deps.stores.materialise(locator, storeLayoutOf(current));
      } else {
        const target = this.deps.manifests.fromDocument(intent['target_manifest'] as JsonValue);
        await this.deps.stores.evolve(locator, storeLayoutOf(current), storeLayoutOf(target));
      }
    } catch (error) {
      if (error instanceof StorageFailure && error.kind === 'busy') throw error;
      // A constraint failure of the DDL (a unique index over duplicates
      // written after the admission check) rolled the whole evolution back:
      // nothing was done, so the intent is dropped and the evolve refused as
      // at admission, leaving the agent free to mend the data (D7).
      if (error instanceof StorageFailure && error.kind === 'constraint') return this.abandon(claim);
      if (error instanceof StorageFailure && error.kind === 'incompatible') return this.finalise(claim, () => undefined, true);
      throw new StorageFailure('uncertain', { cause: error });
    }
    this.deps.checkpoint?.(`${claim.kind}:applied`);
    return this.finalise(
      claim,
      (fresh, clockNow) => {
        const now = timeAfter(clockNow, fresh.createdAt, fresh.updatedAt, fresh.lastActivityAt);
        if (claim.kind === 'materialise') {
          return { ...fresh, designState: 'materialised', serviceRevision: fresh.serviceRevision + 1n, materialisedAt: now, updatedAt: now, lastActivityAt: now, storage: locator };
        }
        const targetDocument = intent['target_manifest'] as JsonObject;
        return {
          ...fresh,
          manifest: targetDocument,
          schemaVersion: (fresh.schemaVersion ?? 0) + 1,
          serviceRevision: fresh.serviceRevision + 1n,
          updatedAt: now,
          lastActivityAt: now,
        };
      },
      false,
    );
  }

  /**
   * Drops a prepared intent whose physical step changed nothing and never
   * will, then refuses the request as admission would have. A concurrent
   * retry of the same key may have dropped it already, or finished it.
   */
  private async abandon(claim: ClaimRow): Promise<JsonObject> {
    const completed = await this.deps.registry.write(async (tx: RegistryWriter) => {
      const stored = await tx.getClaim(this.deps.principalId, claim.idempotencyKey);
      if (stored?.phase === 'completed') return stored.result;
      if (stored?.phase === 'recovery_required') throw new AipcsError('recovery_required');
      if (stored !== undefined && stored.createdAt === claim.createdAt) await tx.deleteClaim(this.deps.principalId, claim.idempotencyKey);
      return null;
    });
    if (completed === null) throw new AipcsError('unsupported_transition');
    return this.withRecovery(completed, 'clear');
  }

  /** Finalises in a fresh unit with compare-and-swap; a lost race marks the intent recovery-required. */
  private async finalise(claim: ClaimRow, next: (fresh: ServiceRow, now: Micros) => ServiceRow | undefined, terminal: boolean): Promise<JsonObject> {
    const outcome = await this.deps.registry.write(async (tx: RegistryWriter) => {
      const stored = await tx.getClaim(this.deps.principalId, claim.idempotencyKey);
      if (stored?.phase === 'completed') return { result: this.withRecovery(stored.result, 'clear') };
      if (!stored || stored.phase === 'recovery_required') return { failure: 'recovery_required' as const };
      const intent = claim.intent as JsonObject;
      const fresh = await tx.getService(this.deps.principalId, intent['service_id'] as string);
      const now = this.deps.nowMicros();
      const updated = !terminal && fresh && fresh.serviceRevision === (intent['expected_service_revision'] as bigint) ? next(fresh, now) : undefined;
      if (!updated || !fresh || !(await tx.updateService(updated, fresh.serviceRevision))) {
        await tx.updateClaim({ ...stored, phase: 'recovery_required', updatedAt: now });
        return { failure: 'recovery_required' as const };
      }
      const projection = this.project(updated, 'clear');
      await tx.updateClaim({ ...stored, phase: 'completed', result: projection, updatedAt: now });
      return { result: projection };
    });
    if ('failure' in outcome) throw new AipcsError('recovery_required');
    return outcome.result;
  }
}
