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
 * Fence (open, and at the generation of the admission: no transition since),
 * replay lookup, then `work`; a completed result is recorded for replay in
 * the same unit.
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
      if (!(await tx.fenceIsOpen(admission.fenceGeneration))) throw new AipcsError('storage_unavailable');
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
