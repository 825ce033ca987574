// The state of a registry or store that could not be inspected, shared by
// both adapters: `busy` (contention, retry) or `unavailable`, keeping the
// failure so that an operator's log can say why (decisions-aipcs-config 35).

import { StorageFailure, type MigrationState } from '../../core/ports.js';

export function unavailableState(error: unknown): MigrationState {
  const failure = error instanceof StorageFailure ? error : new StorageFailure('unavailable', { cause: error });
  return { status: 'unavailable', appliedRevision: null, targetRevision: null, reason: failure.kind === 'busy' ? 'busy' : 'unavailable', failure };
}
