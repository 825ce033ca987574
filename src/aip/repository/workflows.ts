// Working-tree workflows over a repository (spec 7.7 and 9.3): status,
// recording an operation from the tree, deriving an operation's resulting
// state, and snapshot = intent + operation + state with a HEAD move.
import { diffFiles, resultingState } from '../core/effects.js';
import { AipError, failure, isAipError, success, type Outcome } from '../core/errors.js';
import type { Effect, FileEntry, Id, IntentV1, OperationV1, StateV1 } from '../core/objects.js';
import { expectedInputs } from '../core/schemas.js';
import type { Repository } from './repository.js';
import { readTreeIgnoreRules, snapshotTree } from './tree.js';
import { withBoundedTasks } from '../../common/bounded-tasks.js';

export type ChangeKind = 'A' | 'D' | 'M' | 'X';

export interface Change {
  readonly path: string;
  readonly change: ChangeKind;
}

/**
 * Artifact writes a snapshot keeps in flight. Each is fsynced with its
 * folder, and concurrent fsyncs share journal commits: with one write at a
 * time, a snapshot of 5 000 new files took 18-28 s instead of 11-12 s on the
 * test machine (docs/performance.md).
 */
const ARTIFACT_WRITES_IN_FLIGHT = 16;

/** The working tree's file map; with `store`, each new file content is stored as an artifact on the way. */
export async function snapshotWorkingTree(repo: Repository, store: boolean): Promise<Outcome<Map<string, FileEntry>>> {
  const rules = await readTreeIgnoreRules(repo.root, repo.config.maxObjectBytes);
  if (!rules.ok) return rules;
  const options = {
    rules: rules.value,
    maxObjectBytes: repo.config.maxObjectBytes,
    skipVanished: true, // a swap or temp file deleted mid-walk is absent, not an error (D51)
  };
  if (!store) return snapshotTree(repo.root, options);
  const seen = new Set<Id>();
  return withBoundedTasks(ARTIFACT_WRITES_IN_FLIGHT, (start) =>
    snapshotTree(repo.root, {
      ...options,
      onContent: async (id: Id, content: Uint8Array) => {
        if (seen.has(id)) return;
        seen.add(id);
        await start(async () => {
          const put = await repo.putArtifact(content);
          if (!put.ok) throw put.error;
        });
      },
    }),
  );
}

export async function workingTreeChanges(repo: Repository, stateId: Id): Promise<Outcome<Change[]>> {
  const state = await repo.getTyped(stateId, 'state');
  const tree = await snapshotWorkingTree(repo, false);
  if (!tree.ok) return tree;
  return success(
    diffFiles(state.data.files, tree.value).map((effect): Change => {
      if (effect.before === null) return { path: effect.path, change: 'A' };
      if (effect.after === null) return { path: effect.path, change: 'D' };
      return { path: effect.path, change: effect.before.artifact === effect.after.artifact ? 'X' : 'M' };
    }),
  );
}

export interface RecordedOperation {
  readonly id: Id;
  readonly operation: OperationV1;
}

/** Snapshots the tree (storing new artifacts) and diffs it against `base`; an empty diff needs `allowEmpty`. */
async function treeEffects(repo: Repository, base: StateV1, allowEmpty: boolean): Promise<Outcome<Effect[]>> {
  const tree = await snapshotWorkingTree(repo, true);
  if (!tree.ok) return tree;
  const effects = diffFiles(base.data.files, tree.value);
  if (effects.length === 0 && !allowEmpty) {
    return failure('operation.empty', 'the working tree matches the base state (use --allow-empty to record a no-change operation)');
  }
  return success(effects);
}

/** Snapshots the tree, diffs it against `baseId` and stores new artifacts and the operation. */
export async function recordOperation(repo: Repository, intentId: Id, baseId: Id, allowEmpty: boolean): Promise<Outcome<RecordedOperation>> {
  const base = await repo.getTyped(baseId, 'state');
  await repo.getTyped(intentId, 'intent');
  const effects = await treeEffects(repo, base, allowEmpty);
  if (!effects.ok) return effects;
  return storeOperation(repo, intentId, baseId, effects.value);
}

async function storeOperation(repo: Repository, intentId: Id, baseId: Id, effects: Effect[]): Promise<Outcome<RecordedOperation>> {
  const operation: OperationV1 = {
    type: 'operation',
    version: 1,
    data: { inputs: expectedInputs(effects), intent: intentId, effects, base_state: baseId },
  };
  const put = await repo.putObject(operation);
  if (!put.ok) return put;
  return success({ id: put.value.id, operation });
}

/** Derives and stores the resulting state of a stored operation (spec 6). */
export async function deriveState(repo: Repository, operationId: Id): Promise<Outcome<{ id: Id; state: StateV1 }>> {
  const operation = await repo.getTyped(operationId, 'operation');
  const base = await repo.getTyped(operation.data.base_state, 'state', `${operationId}: data.base_state`);
  const state = resultingState(operationId, operation, base.data.files);
  const put = await repo.putObject(state);
  if (!put.ok) return put;
  return success({ id: put.value.id, state });
}

export interface SnapshotRecord {
  readonly intent: Id;
  readonly operation: Id;
  readonly state: Id;
}

export type IntentSource = { readonly existing: Id } | { readonly create: IntentV1 };

/** Intent (existing or new) + operation from the tree + resulting state; moves HEAD by compare-and-swap. */
export async function commitSnapshot(repo: Repository, intent: IntentSource, allowEmpty: boolean): Promise<Outcome<SnapshotRecord>> {
  const head = await repo.readHead();
  // The tree first: a snapshot with nothing to record (or a tree a state
  // cannot hold) must not leave a new intent behind.
  const effects = await treeEffects(repo, await repo.getTyped(head, 'state'), allowEmpty);
  if (!effects.ok) return effects;
  let intentId: Id;
  if ('existing' in intent) {
    intentId = intent.existing;
  } else {
    const put = await repo.putObject(intent.create);
    if (!put.ok) return put;
    intentId = put.value.id;
  }
  const operation = await storeOperation(repo, intentId, head, effects.value);
  if (!operation.ok) return operation;
  const state = await deriveState(repo, operation.value.id);
  if (!state.ok) return state;
  const record = { intent: intentId, operation: operation.value.id, state: state.value.id };
  try {
    await repo.moveHead(head, state.value.id);
  } catch (error) {
    if (isAipError(error) && error.code === 'head.moved') throw new SnapshotHeadMoved(error, record, head);
    throw error;
  }
  return success(record);
}

/** HEAD moved before a snapshot could move it: the snapshot's objects are stored all the same (D52). */
export class SnapshotHeadMoved extends AipError {
  constructor(
    moved: AipError,
    readonly stored: SnapshotRecord,
    readonly base: Id,
  ) {
    super('head.moved', moved.message, { cause: moved });
  }
}
