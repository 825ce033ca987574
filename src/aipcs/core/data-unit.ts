// The shape every data mutation shares (records and branches): one write
// unit that checks the write fence, answers an exact retry from the replay
// ledger (or refuses a changed one), runs the work and records its result for
// replay, all in the same transaction. Also the mapping of storage failures
// of data tools to contract errors.

import type { JsonObject } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import type { DataAdmission, MutationAdmission } from './lifecycle.js';
import { StorageFailure, type Micros, type ServiceDataPort, type ServiceDataWriter, type StorageLocator } from './ports.js';
import { fingerprintText } from './record-rules.js';

/** Data-tool mutations through MCP carry this provenance in their fingerprints. */
export const CREATED_VIA = 'mcp';

export interface DataUnitDependencies {
  readonly data: ServiceDataPort;
  readonly principalId: string;
  nowMicros(): Micros;
  sha256(text: string): string;
}

/** Maps storage failures of data tools to the contract's codes. */
export function dataFailure(error: unknown): never {
  if (error instanceof AipcsError) throw error;
  if (error instanceof StorageFailure) {
    switch (error.kind) {
      case 'busy':
        throw new AipcsError('storage_busy', { cause: error });
      case 'constraint':
        throw new AipcsError('constraint_violation', { cause: error });
      case 'uncertain':
        throw new AipcsError('operation_uncertain_data', { cause: error });
      case 'migration_required':
        throw new AipcsError('storage_migration_required', { cause: error });
      default:
        throw new AipcsError('storage_unavailable', { cause: error });
    }
  }
  throw error;
}

export function storageLocator(admission: DataAdmission): StorageLocator {
  if (!admission.service.storage) throw new AipcsError('storage_unavailable');
  return admission.service.storage;
}

export function mutationFingerprint(deps: DataUnitDependencies, kind: string, fields: JsonObject): string {
  return deps.sha256(fingerprintText({ kind, created_via: CREATED_VIA, ...fields }));
}

/**
 * The write unit found the fence open at another generation than the
 * admission read: an evolve (which moves it with the store's layout) or a
 * suspend and resume came between them, so what the admission validated
 * against may be stale. Nothing was written; readmitting runs it afresh.
 */
class AdmissionMoved extends Error {
  constructor() {
    super('the store changed since the admission');
    this.name = 'AdmissionMoved';
  }
}

const ADMISSION_ATTEMPTS = 3;

/**
 * Runs a mutation (its admission, validation and write unit) again when its
 * write unit found the store changed since the admission. A write admitted
 * under one schema version must not commit under the next: it wrote the
 * rows of the old layout (a list field the evolve added lost its members,
 * and search stopped finding them) and answered without the new fields.
 * Still moving after a few attempts: storage_busy, which the client retries.
 */
export async function readmitting<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof AdmissionMoved)) throw error;
      if (tries >= ADMISSION_ATTEMPTS) throw new AipcsError('storage_busy');
    }
  }
}

/**
 * Fence (open, and at the generation of the admission: no transition or
 * evolve since), replay lookup, then `work`; a completed result is recorded
 * for replay in the same unit.
 */
export async function runMutation(
  deps: DataUnitDependencies,
  admission: MutationAdmission,
  key: string,
  kind: string,
  fingerprint: string,
  work: (tx: ServiceDataWriter, now: Micros) => Promise<JsonObject>,
): Promise<JsonObject> {
  try {
    return await deps.data.write(storageLocator(admission), deps.principalId, async (tx) => {
      if (!(await tx.fenceIsOpen(admission.fenceGeneration))) {
        if (await tx.fenceIsOpen()) throw new AdmissionMoved();
        throw new AipcsError('storage_unavailable');
      }
      const replay = await tx.getReplay(key);
      if (replay) {
        if (replay.kind !== kind || replay.fingerprint !== fingerprint) throw new AipcsError('changed_fingerprint');
        return { ...(replay.result as JsonObject), replayed: true };
      }
      const now = deps.nowMicros();
      const result = await work(tx, now);
      await tx.putReplay({ idempotencyKey: key, kind, fingerprint, result, completedAt: now });
      return result;
    });
  } catch (error) {
    return dataFailure(error);
  }
}
