// Operator lifecycle use cases (operations spec §1.9, §4.3, §5.10): suspend,
// resume, archive, restore and purge as prepared claims in the ledger MCP keys
// share, one bounded physical step (fence or store removal), then a finalise
// with compare-and-swap in a fresh unit. No file, terminal or output concern.

import type { JsonObject, JsonValue } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import type { OperatorStoragePorts } from './application.js';
import { canAdvance } from './counters.js';
import type { LifecycleService } from './lifecycle.js';
import {
  StorageFailure,
  TOMBSTONED_FINGERPRINT,
  type ClaimKind,
  type ClaimRow,
  type FenceState,
  type Micros,
  type OperationalStatus,
  type OperatorRegistryReader,
  type OperatorRegistryWriter,
  type ServiceRow,
  type StorageLocator,
} from './ports.js';
import { formatTimestamp27, timeAfter } from './time.js';

export interface OperatorDependencies {
  readonly storage: OperatorStoragePorts;
  readonly lifecycle: LifecycleService;
  readonly principalId: string;
  nowMicros(): Micros;
  /** Random UUIDs (receipt ids). */
  newId(): string;
  /** Lowercase hex SHA-256 of UTF-8 text. */
  sha256(text: string): string;
  /** Canonical JSON text used for fingerprints. */
  canonical(value: unknown): string;
  /** Crash tests only: a named checkpoint may end the process (`{kind}:admitted` once a claim is admitted). */
  checkpoint?(name: string): void;
}

export type TransitionKind = 'suspend' | 'resume' | 'archive' | 'restore';

export interface TransitionCommand {
  readonly kind: TransitionKind;
  readonly serviceId: string;
  readonly expectedServiceRevision: bigint;
  /** The operation id: the idempotency key in the registry ledger. */
  readonly operationId: string;
}

export type PurgeAuthority = { readonly kind: 'explicit_override' } | { readonly kind: 'verified_receipt'; readonly receiptId: string };

export interface PurgeCommand {
  readonly serviceId: string;
  readonly expectedServiceRevision: bigint;
  readonly operationId: string;
  readonly authority: PurgeAuthority;
}

interface TransitionRule {
  readonly from: readonly OperationalStatus[];
  readonly to: OperationalStatus;
  /** Where the fence of a materialised store must be before the registry changes. */
  readonly fence: FenceState;
}

/** Operations spec §1.9.3. */
export const TRANSITIONS: Readonly<Record<TransitionKind, TransitionRule>> = {
  suspend: { from: ['active'], to: 'suspended', fence: 'closed' },
  resume: { from: ['suspended'], to: 'active', fence: 'open' },
  archive: { from: ['active', 'suspended'], to: 'archived', fence: 'closed' },
  restore: { from: ['archived'], to: 'suspended', fence: 'closed' },
};

/** The claim kinds only the operator commands admit (the others are MCP lifecycle requests). */
const OPERATOR_KINDS: ReadonlySet<ClaimKind> = new Set<ClaimKind>([...(Object.keys(TRANSITIONS) as TransitionKind[]), 'export', 'import', 'purge']);

/**
 * A refusal because another operation on the service is unfinished (still
 * running, or its process was killed or the machine went down after it was
 * admitted): `operation_in_progress`, or `already_exists` for an import of a
 * service id that this principal's unfinished import holds. Only repeating
 * that operation finishes it (spec §1.9.2), so the refusal says which kind
 * of operation it is (D54). Its idempotency key is not carried: keys are
 * never printed (operations spec §2.9).
 */
export class UnfinishedOperation extends AipcsError {
  readonly operation: ClaimKind;
  /** Whether an operator command holds it (else an MCP client's lifecycle request). */
  readonly byOperator: boolean;

  constructor(situation: 'operation_in_progress' | 'already_exists', claim: Pick<ClaimRow, 'kind'>) {
    super(situation);
    this.operation = claim.kind;
    this.byOperator = OPERATOR_KINDS.has(claim.kind);
  }
}

export type KeyResolution = { readonly replay: JsonObject } | { readonly claim: ClaimRow } | undefined;

/** Maps adapter failures to the operator outcomes of spec §1.9.7. */
export function operatorFailure(error: unknown): never {
  if (error instanceof AipcsError) throw error;
  if (error instanceof StorageFailure) {
    if (error.kind === 'busy') throw new AipcsError('storage_busy', { cause: error });
    if (error.kind === 'uncertain') throw new AipcsError('operation_uncertain_lifecycle', { cause: error });
    if (error.kind === 'migration_required') throw new AipcsError('storage_migration_required', { cause: error });
    throw new AipcsError('storage_unavailable', { cause: error });
  }
  throw error;
}

export async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    return operatorFailure(error);
  }
}

/** The claim plumbing every operator command shares (lifecycle, export, import, purge). */
export class OperatorClaims {
  constructor(private readonly deps: OperatorDependencies) {}

  get principalId(): string {
    return this.deps.principalId;
  }

  /** The fingerprint of spec §4.1: kind, principal, created_via `cli` and the operation's fields. */
  fingerprint(kind: ClaimKind, fields: JsonObject): string {
    return this.deps.sha256(this.deps.canonical({ kind, principal: this.deps.principalId, created_via: 'cli', ...fields }));
  }

  /** Same key: replay, resume, or refuse; a new key gives undefined. */
  async resolve(tx: OperatorRegistryReader, key: string, kind: ClaimKind, fingerprint: string): Promise<KeyResolution> {
    const claim = await tx.getClaim(this.deps.principalId, key);
    if (!claim) return undefined;
    if (claim.fingerprint === TOMBSTONED_FINGERPRINT) throw new AipcsError('conflict');
    if (claim.kind !== kind || claim.fingerprint !== fingerprint) throw new AipcsError('changed_fingerprint');
    if (claim.phase === 'completed') return { replay: (claim.result ?? {}) as JsonObject };
    if (claim.phase === 'recovery_required') throw new AipcsError('recovery_required');
    return { claim };
  }

  /** No other intent may be active on the service (spec §4.1 last row). */
  async requireNoActiveIntent(tx: OperatorRegistryReader, serviceId: string): Promise<void> {
    const active = await tx.getActiveClaim(this.deps.principalId, serviceId);
    if (active?.phase === 'prepared') throw new UnfinishedOperation('operation_in_progress', active);
    if (active?.phase === 'recovery_required') throw new AipcsError('recovery_required');
  }

  /** A claim admitted (or resumed) and committed: the crash tests' checkpoint before its work. */
  admitted(claim: ClaimRow): void {
    this.deps.checkpoint?.(`${claim.kind}:admitted`);
  }

  prepared(kind: ClaimKind, key: string, fingerprint: string, serviceId: string, intent: JsonObject): ClaimRow {
    const now = this.deps.nowMicros();
    return { principalId: this.deps.principalId, idempotencyKey: key, kind, fingerprint, serviceId, phase: 'prepared', intent, result: null, createdAt: now, updatedAt: now };
  }

  /** The result of this claim if it is completed by now (a concurrent run of the same operation). */
  async completedResult(claim: ClaimRow): Promise<JsonObject | undefined> {
    const stored = await this.deps.storage.registry.read((tx) => tx.getClaim(this.deps.principalId, claim.idempotencyKey));
    return stored?.phase === 'completed' && stored.fingerprint === claim.fingerprint ? ((stored.result ?? {}) as JsonObject) : undefined;
  }

  /**
   * Marks a prepared claim recovery-required in its own unit and refuses.
   * When the claim is completed by now, a concurrent run of the same
   * operation finished it (which is why the service moved on under this
   * run): its result is this run's answer, as a retry would replay it,
   * never recovery_required for a service that is not frozen.
   */
  async markRecoveryRequired(claim: ClaimRow): Promise<JsonObject> {
    const finished = await this.deps.storage.registry.write(async (tx) => {
      const stored = await tx.getClaim(this.deps.principalId, claim.idempotencyKey);
      if (stored?.phase === 'completed' && stored.fingerprint === claim.fingerprint) return (stored.result ?? {}) as JsonObject;
      if (stored?.phase === 'prepared') await tx.updateClaim({ ...stored, phase: 'recovery_required', updatedAt: this.deps.nowMicros() });
      return undefined;
    });
    if (finished) return finished;
    throw new AipcsError('recovery_required');
  }

  /**
   * Finalises in a fresh unit: the claim must still be prepared and the
   * service at the revision the intent expects, else the intent becomes
   * recovery-required (a lost race is never overwritten).
   */
  async finalise(claim: ClaimRow, work: (tx: OperatorRegistryWriter, service: ServiceRow | undefined, now: Micros) => Promise<JsonObject | null>): Promise<JsonObject> {
    const outcome = await this.deps.storage.registry.write(async (tx) => {
      const stored = await tx.getClaim(this.deps.principalId, claim.idempotencyKey);
      if (stored?.phase === 'completed' && stored.fingerprint === claim.fingerprint) return { result: (stored.result ?? {}) as JsonObject };
      if (!stored || stored.phase !== 'prepared' || stored.fingerprint !== claim.fingerprint) return { failure: true as const };
      const serviceId = stored.serviceId ?? '';
      const service = await tx.getService(this.deps.principalId, serviceId);
      const now = this.deps.nowMicros();
      const result = await work(tx, service, now);
      if (result === null) {
        await tx.updateClaim({ ...stored, phase: 'recovery_required', updatedAt: now });
        return { failure: true as const };
      }
      await tx.updateClaim({ ...stored, phase: 'completed', result, updatedAt: now });
      return { result };
    });
    if ('failure' in outcome) throw new AipcsError('recovery_required');
    return outcome.result;
  }
}

/** A storage failure after admission: busy stays busy, anything else is uncertain (spec §4.3). */
function busyOrUncertain(error: unknown): never {
  if (error instanceof StorageFailure && error.kind === 'busy') throw error;
  throw new StorageFailure('uncertain', { cause: error });
}

function expectedRevisionOf(claim: ClaimRow): bigint {
  return (claim.intent as JsonObject)['expected_service_revision'] as bigint;
}

export class OperatorService {
  readonly claims: OperatorClaims;

  constructor(private readonly deps: OperatorDependencies) {
    this.claims = new OperatorClaims(deps);
  }

  private get registry() {
    return this.deps.storage.registry;
  }

  /** The current projection of one service of this principal (interactive mode reads the revision from it). */
  async current(serviceId: string): Promise<ServiceRow> {
    return guarded(async () => {
      const service = await this.registry.read((tx) => tx.getService(this.deps.principalId, serviceId));
      if (!service) throw new AipcsError('not_found_service');
      return service;
    });
  }

  /** The service projection with its current recovery state (`service inspect`). */
  async inspect(serviceId: string): Promise<JsonObject> {
    return this.deps.lifecycle.inspect(serviceId);
  }

  // -------------------------------------------------------------------------
  // suspend / resume / archive / restore

  async transition(command: TransitionCommand): Promise<JsonObject> {
    const rule = TRANSITIONS[command.kind];
    const fingerprint = this.claims.fingerprint(command.kind, {
      service_id: command.serviceId,
      expected_service_revision: command.expectedServiceRevision,
      target_operational_status: rule.to,
    });
    return guarded(async () => {
      const fenceAtMaximum = await this.fenceAtMaximum(command.serviceId);
      const admitted = await this.registry.write(async (tx) => {
        const resolved = await this.claims.resolve(tx, command.operationId, command.kind, fingerprint);
        if (resolved) return resolved;
        const service = await tx.getService(this.deps.principalId, command.serviceId);
        if (!service || service.serviceRevision !== command.expectedServiceRevision) throw new AipcsError('stale_revision');
        if (!rule.from.includes(service.operationalStatus)) throw new AipcsError('unsupported_transition');
        // The revision and the fence generation both move on by one (D40).
        if (!canAdvance(service.serviceRevision) || (service.storage !== null && fenceAtMaximum)) throw new AipcsError('unsupported_transition');
        await this.claims.requireNoActiveIntent(tx, service.serviceId);
        const claim = this.claims.prepared(command.kind, command.operationId, fingerprint, service.serviceId, {
          service_id: service.serviceId,
          expected_service_revision: command.expectedServiceRevision,
          target_operational_status: rule.to,
        });
        await tx.insertClaim(claim);
        return { claim, admittedNow: true };
      });
      if ('replay' in admitted) return admitted.replay;
      this.claims.admitted(admitted.claim);
      return this.completeTransition(command.kind, admitted.claim, 'admittedNow' in admitted);
    });
  }

  /**
   * Whether the store of a materialised service has its fence generation at
   * 2^63-1, read before admission (a store that cannot be read is left to
   * the transition's own fence step). Only a transition's intent moves the
   * fence: one that moves it after this read is still active when this
   * command is admitted, or has moved the revision and made it stale.
   */
  private async fenceAtMaximum(serviceId: string): Promise<boolean> {
    const service = await this.registry.read((tx) => tx.getService(this.deps.principalId, serviceId));
    if (!service || service.designState !== 'materialised' || !service.storage) return false;
    const fence = await this.deps.storage.stores.readFence(service.storage).catch(() => null);
    return fence !== null && !canAdvance(fence.generation);
  }

  /** `admittedNow`: the claim was admitted by this call, not resumed from an earlier attempt. */
  private async completeTransition(kind: TransitionKind, claim: ClaimRow, admittedNow: boolean): Promise<JsonObject> {
    const rule = TRANSITIONS[kind];
    const expected = expectedRevisionOf(claim);
    const service = await this.registry.read((tx) => tx.getService(this.deps.principalId, claim.serviceId ?? ''));
    if (!service || service.serviceRevision !== expected) return this.claims.markRecoveryRequired(claim);
    if (service.designState === 'materialised' && service.storage) await this.moveFence(service.storage, rule.fence, admittedNow);
    return this.claims.finalise(claim, async (tx, fresh, now) => {
      if (!fresh || fresh.serviceRevision !== expected) return null;
      const at = timeAfter(now, fresh.createdAt, fresh.updatedAt, fresh.lastActivityAt);
      const updated: ServiceRow = { ...fresh, operationalStatus: rule.to, serviceRevision: fresh.serviceRevision + 1n, updatedAt: at, lastActivityAt: at };
      if (!(await tx.updateService(updated, fresh.serviceRevision))) return null;
      return { operation: kind, operation_id: claim.idempotencyKey, service: this.deps.lifecycle.project(updated, 'clear') };
    });
  }

  /**
   * Brings the fence to `target` with compare-and-change (generation + 1),
   * also when it is already there on a transition's first attempt (archive
   * of a suspended service, restore: spec §4.3 moves the generation on every
   * transition). A resumed intent finding the target takes it as its own
   * earlier change. A change that fails is trusted only when a re-read shows
   * the target, otherwise the claim stays prepared and the caller gets busy
   * or uncertain, also when the store cannot be read at all (the intent is
   * admitted: only a retry of the same operation id moves it on).
   */
  private async moveFence(locator: StorageLocator, target: FenceState, firstAttempt: boolean): Promise<void> {
    const stores = this.deps.storage.stores;
    const current = await stores.readFence(locator).catch(busyOrUncertain);
    if (current.state === target && !firstAttempt) return;
    let changed = null;
    try {
      changed = await stores.changeFence(locator, current, target);
    } catch (error) {
      const reread = await stores.readFence(locator).catch(() => null);
      if (reread?.state === target) return;
      busyOrUncertain(error);
    }
    if (changed) return;
    const reread = await stores.readFence(locator).catch(busyOrUncertain);
    if (reread.state !== target) throw new StorageFailure('busy');
  }

  // -------------------------------------------------------------------------
  // purge

  async purge(command: PurgeCommand): Promise<JsonObject> {
    const authority = command.authority;
    const fingerprint = this.claims.fingerprint('purge', {
      service_id: command.serviceId,
      expected_service_revision: command.expectedServiceRevision,
      purge_authority: authority.kind,
      ...(authority.kind === 'verified_receipt' ? { receipt_id: authority.receiptId } : {}),
    });
    return guarded(async () => {
      const admitted = await this.registry.write(async (tx) => {
        const resolved = await this.claims.resolve(tx, command.operationId, 'purge', fingerprint);
        if (resolved) return resolved;
        const service = await tx.getService(this.deps.principalId, command.serviceId);
        if (!service || service.serviceRevision !== command.expectedServiceRevision) throw new AipcsError('stale_revision');
        if (service.operationalStatus !== 'archived') throw new AipcsError('unsupported_transition');
        if (authority.kind === 'verified_receipt') {
          // Ops §1.9.6 and §5.10: only an export receipt, verified, of this
          // principal and service, taken at this very revision while archived
          // (after the final archive), so its artefact holds all a purge destroys.
          const receipt = await tx.getReceipt(authority.receiptId);
          const valid =
            receipt !== undefined &&
            receipt.kind === 'export' &&
            receipt.verification === 'verified' &&
            receipt.principalId === this.deps.principalId &&
            receipt.serviceId === service.serviceId &&
            receipt.serviceRevision === command.expectedServiceRevision &&
            receipt.operationalStatus === 'archived';
          if (!valid) throw new AipcsError('unsupported_transition');
        }
        await this.claims.requireNoActiveIntent(tx, service.serviceId);
        const claim = this.claims.prepared('purge', command.operationId, fingerprint, service.serviceId, {
          service_id: service.serviceId,
          expected_service_revision: command.expectedServiceRevision,
          purge_authority: authority.kind,
          receipt_id: authority.kind === 'verified_receipt' ? authority.receiptId : null,
        });
        await tx.insertClaim(claim);
        return { claim };
      });
      if ('replay' in admitted) return admitted.replay;
      this.claims.admitted(admitted.claim);
      return this.completePurge(admitted.claim);
    });
  }

  private async completePurge(claim: ClaimRow): Promise<JsonObject> {
    const intent = claim.intent as JsonObject;
    const expected = expectedRevisionOf(claim);
    const service = await this.registry.read((tx) => tx.getService(this.deps.principalId, claim.serviceId ?? ''));
    if (!service || service.serviceRevision !== expected || service.operationalStatus !== 'archived') return this.claims.markRecoveryRequired(claim);
    if (service.storage) {
      // The store's tables are known from the manifest only; without one nothing can be removed safely.
      const manifest = this.deps.lifecycle.manifestOf(service);
      if (!manifest) return this.claims.markRecoveryRequired(claim);
      let removalFailure: unknown;
      try {
        await this.deps.storage.stores.remove(service.storage, this.deps.lifecycle.layoutOf(manifest));
      } catch (error) {
        // A concurrent run of this same operation may have removed the store
        // under this one (its file vanished while being verified), and may
        // have finished: its result is this one's, and a store already gone
        // is what this run wants.
        const finished = await this.claims.completedResult(claim).catch(() => undefined);
        if (finished) return finished;
        // Not this locator's store, or its fence is open: nothing may be removed.
        if (error instanceof StorageFailure && error.kind === 'incompatible') return this.claims.markRecoveryRequired(claim);
        removalFailure = error;
      }
      // Purge is never reported without independently observed absence; the
      // claim stays prepared so that the same command can retry. A removal
      // that failed with the store still there (a PostgreSQL view built on it
      // refusing the RESTRICT drop, a busy store) keeps its own failure.
      const absent = await this.deps.storage.stores.isAbsent(service.storage).catch((error: unknown) => (removalFailure === undefined ? busyOrUncertain(error) : false));
      if (!absent) throw removalFailure ?? new StorageFailure('uncertain');
    }
    return this.claims.finalise(claim, async (tx, fresh, now) => {
      if (!fresh || fresh.serviceRevision !== expected) return null;
      if (!(await tx.deleteService(this.deps.principalId, fresh.serviceId))) return null;
      await tx.deleteReceipts(this.deps.principalId, fresh.serviceId);
      await tx.tombstoneClaims(this.deps.principalId, fresh.serviceId, claim.idempotencyKey, now);
      await tx.putIdentity({
        serviceId: fresh.serviceId,
        principalId: this.deps.principalId,
        state: 'tombstoned',
        domainName: null,
        idempotencyKey: claim.idempotencyKey,
        lifecycleAt: now,
      });
      const receiptId = intent['receipt_id'] as JsonValue;
      return {
        operation: 'purge',
        operation_id: claim.idempotencyKey,
        tombstone: {
          service_id: fresh.serviceId,
          purged_at: formatTimestamp27(now),
          authority: intent['purge_authority'] as string,
          receipt_id: typeof receiptId === 'string' ? receiptId : null,
        },
      };
    });
  }
}
