// Applying an operation's effects to a file map, diffing two file maps into
// effects, and deriving the one resulting state of an operation (spec 6).
// Pure; callers have already checked preconditions (verify-graph.ts).
import { compareUtf8 } from './cbor-profile.js';
import type { Effect, FileEntry, FileMap, Id, OperationV1, StateV1 } from './objects.js';
import { sameEntry } from './schemas.js';

export function applyEffects(base: FileMap, effects: readonly Effect[]): Map<string, FileEntry> {
  const result = new Map(base);
  for (const effect of effects) {
    if (effect.after === null) result.delete(effect.path);
    else result.set(effect.path, effect.after);
  }
  return result;
}

export function sameFiles(a: FileMap, b: FileMap): boolean {
  if (a.size !== b.size) return false;
  for (const [path, entry] of a) {
    if (!sameEntry(entry, b.get(path))) return false;
  }
  return true;
}

/** Effects turning `before` into `after`: one per differing path, sorted bytewise by path. */
export function diffFiles(before: FileMap, after: FileMap): Effect[] {
  const paths = new Set<string>([...before.keys(), ...after.keys()]);
  const effects: Effect[] = [];
  for (const path of [...paths].sort(compareUtf8)) {
    const b = before.get(path) ?? null;
    const a = after.get(path) ?? null;
    if (!sameEntry(a, b)) effects.push({ path, before: b, after: a });
  }
  return effects;
}

/** The resulting state of operation `operationId` over its base state's files (spec 6). */
export function resultingState(operationId: Id, operation: OperationV1, baseFiles: FileMap): StateV1 {
  return {
    type: 'state',
    version: 1,
    data: {
      files: applyEffects(baseFiles, operation.data.effects),
      intents: [operation.data.intent],
      parents: [operation.data.base_state],
      operations: [operationId],
    },
  };
}
