// Graph verification (spec 5.2 to 5.6): references resolve to stored objects
// of the expected type, operation/state/evidence consistency, missing
// references and cycles. Pure: objects come through the ObjectSource port.
import { applyEffects, sameFiles } from './effects.js';
import { AipError, withArticle, type AipErrorCode } from './errors.js';
import type { AipObject, FileEntry, Id, ObjectType, OperationV1, StateV1 } from './objects.js';
import { referencesOf } from './references.js';
import { WeighedCache } from '../../common/weighed-cache.js';
import { sameEntry } from './schemas.js';
import { quotedPath } from './quote.js';
import { findPathConflict } from './value-rules.js';

/** What a source returns for an ID: a valid object, nothing, or a byte/decode/schema failure. */
export type LoadResult =
  | { readonly kind: 'found'; readonly object: AipObject }
  | { readonly kind: 'missing' }
  | { readonly kind: 'invalid'; readonly error: AipError };

export interface ObjectSource {
  load(id: Id): Promise<LoadResult>;
}

export interface GraphOptions {
  /**
   * Objects already known valid with their closure (the store invariant, 5.7):
   * they are loaded for type and consistency checks but not re-verified.
   */
  readonly trusted?: (id: Id) => boolean;
  /**
   * A further check of each found object, made while it is in hand (the run
   * does not keep most objects): a problem, or undefined. Its result comes
   * back with the object's finding when the object is otherwise valid.
   */
  readonly inspect?: (id: Id, object: AipObject) => string | undefined;
  /** How many states and operations, and how many of their files and effects in all, the run keeps whole (tests shrink it). */
  readonly keptBounds?: { readonly objects: number; readonly items: number };
}

export type Verdict = { readonly ok: true; readonly object: AipObject } | { readonly ok: false; readonly error: AipError };

/**
 * A verdict as a run keeps it: a valid object by type and version, with what
 * the `inspect` option found in it. What a whole-store verify needs, without
 * reading any object twice.
 */
export type Finding =
  | { readonly ok: true; readonly type: ObjectType; readonly version: number; readonly problem: string | undefined }
  | { readonly ok: false; readonly error: AipError };

// What verification keeps of a loaded object for the run: its type, version
// and (an artifact) its length. States and operations, which later checks
// read, stay whole in a bounded cache and are read again when it let them
// go, so a whole-repository run holds neither every file's content nor every
// state of a long history of a big tree (each was its own map of the tree).
type Node =
  | FoundNode
  | { readonly kind: 'missing' }
  | { readonly kind: 'invalid'; readonly error: AipError };

interface FoundNode {
  readonly kind: 'found';
  readonly type: ObjectType;
  readonly version: number;
  readonly contentLength: number;
  /** What the `inspect` option found. */
  readonly problem: string | undefined;
}

/** States and operations a run keeps whole at most, by count and by files and effects in all. */
const MAX_KEPT_OBJECTS = 1024;
const MAX_KEPT_ITEMS = 2_000_000;

interface Frame {
  readonly id: Id;
  /** The object, unless the frames below already held their share (then read again for its check). */
  readonly object: AipObject | undefined;
  /** What holding `object` weighs (0 when not held). */
  readonly weight: number;
  /** Distinct reference targets not settled on entry; the references themselves are listed again when the object is checked. */
  readonly children: readonly Id[];
  next: number;
  cycleWith: Id | undefined;
}

/** Roughly how many items holding a decoded object costs: its map entries and array items (and 64 bytes of content as one). */
function weightOf(object: AipObject): number {
  switch (object.type) {
    case 'state':
      return 1 + object.data.files.size;
    case 'operation':
      return 1 + object.data.effects.length + object.data.inputs.length;
    case 'artifact':
      return 1 + Math.ceil(object.data.content.length / 64);
    case 'intent':
      return 1 + object.data.constraints.length + object.data.context.length + object.data.parents.length;
    default:
      return 1 + referencesOf(object).length;
  }
}

/** The memoised verdict of a valid object (an invalid one keeps its error). */
const VALID = null;

function bad(code: AipErrorCode, id: Id, message: string): AipError {
  return new AipError(code, `${id}: ${message}`);
}

/**
 * One verification run. Results are memoised for the run, so shared
 * sub-graphs are verified once; the closure is walked with an explicit stack
 * and "in progress" marks, so a cycle is reported instead of looping.
 */
export class GraphVerifier {
  private readonly nodes = new Map<Id, Node>();
  private readonly verdicts = new Map<Id, AipError | typeof VALID>();
  private readonly inProgress = new Set<Id>();
  /** File entries and paths shared by the states a run keeps (consecutive states mostly hold the same files). */
  private readonly sharedEntries = new Map<string, FileEntry>();
  private readonly sharedPaths = new Map<string, string>();
  private readonly kept: WeighedCache<Id, StateV1 | OperationV1>;
  /** The weight of the objects the frames of the walk hold, at most the kept items' bound. */
  private heldByFrames = 0;
  private readonly maxHeldByFrames: number;

  constructor(
    private readonly source: ObjectSource,
    private readonly options: GraphOptions = {},
  ) {
    const bounds = options.keptBounds ?? { objects: MAX_KEPT_OBJECTS, items: MAX_KEPT_ITEMS };
    this.kept = new WeighedCache(bounds.objects, bounds.items);
    this.maxHeldByFrames = bounds.items;
  }

  /** What the run keeps of a found object; a state (with shared file entries) or an operation also goes to the cache. */
  private foundNode(id: Id, object: AipObject): FoundNode {
    this.keep(id, object);
    return this.nodeOf(id, object);
  }

  private nodeOf(id: Id, object: AipObject): FoundNode {
    const contentLength = object.type === 'artifact' ? object.data.content.length : 0;
    return { kind: 'found', type: object.type, version: object.version, contentLength, problem: this.options.inspect?.(id, object) };
  }

  /** Records a load that found nothing valid: its node and its verdict. */
  private settleUnfound(id: Id, loaded: Exclude<LoadResult, { kind: 'found' }>): void {
    this.nodes.set(id, loaded);
    this.verdicts.set(id, loaded.kind === 'missing' ? bad('graph.missing', id, 'no such object') : loaded.error);
  }

  private keep(id: Id, object: AipObject): StateV1 | OperationV1 | undefined {
    if (object.type === 'state') {
      const state = this.shared(object);
      this.kept.set(id, state, 1 + state.data.files.size);
      return state;
    }
    if (object.type === 'operation') {
      this.kept.set(id, object, 1 + object.data.effects.length);
      return object;
    }
    return undefined;
  }

  /** The same state, its files map built from entries and paths shared across the run (same order). */
  private shared(state: StateV1): StateV1 {
    const files = new Map<string, FileEntry>();
    for (const [path, entry] of state.data.files) {
      const key = `${entry.executable ? 'x' : '-'}${entry.artifact}`;
      let kept = this.sharedEntries.get(key);
      if (kept === undefined) {
        kept = { artifact: entry.artifact, executable: entry.executable };
        this.sharedEntries.set(key, kept);
      }
      let keptPath = this.sharedPaths.get(path);
      if (keptPath === undefined) {
        keptPath = path;
        this.sharedPaths.set(path, path);
      }
      files.set(keptPath, kept);
    }
    return { ...state, data: { ...state.data, files } };
  }

  private async node(id: Id): Promise<Node> {
    const cached = this.nodes.get(id);
    if (cached) return cached;
    const loaded = await this.source.load(id);
    const node: Node = loaded.kind === 'found' ? this.foundNode(id, loaded.object) : loaded;
    this.nodes.set(id, node);
    return node;
  }

  /** Loads `id` and either settles its verdict or pushes a frame for its references; returns the object when found. */
  private async enter(id: Id, stack: Frame[]): Promise<AipObject | undefined> {
    const loaded = await this.source.load(id);
    if (loaded.kind !== 'found') {
      this.settleUnfound(id, loaded);
      return undefined;
    }
    const object = loaded.object;
    this.nodes.set(id, this.foundNode(id, object));
    if (this.options.trusted?.(id) === true) {
      this.verdicts.set(id, VALID);
      return object;
    }
    this.inProgress.add(id);
    // Artifacts (every file of a state) have no references: settled here, they
    // take no frame and leave the frame only the few objects to walk into.
    const children: Id[] = [];
    const seen = new Set<Id>();
    for (const ref of referencesOf(object)) {
      if (seen.has(ref.target) || this.verdicts.has(ref.target)) continue;
      seen.add(ref.target);
      if (ref.expect === 'artifact' && !this.inProgress.has(ref.target) && (await this.settleArtifact(ref.target))) continue;
      children.push(ref.target);
    }
    // A long history walks one frame per state down to its root: past the
    // bound, a frame keeps only the ID and its object is read again for its check.
    const weight = weightOf(object);
    const held = this.heldByFrames + weight <= this.maxHeldByFrames;
    if (held) this.heldByFrames += weight;
    const kept = held ? (this.kept.get(id) ?? object) : undefined;
    stack.push({ id, object: kept, weight: held ? weight : 0, children, next: 0, cycleWith: undefined });
    return object;
  }

  /** Settles `id` when it is an artifact, or unfound; false (nothing recorded) when it is another object, to be walked. */
  private async settleArtifact(id: Id): Promise<boolean> {
    const loaded = await this.source.load(id);
    if (loaded.kind !== 'found') {
      this.settleUnfound(id, loaded);
      return true;
    }
    if (loaded.object.type !== 'artifact') return false;
    this.nodes.set(id, this.nodeOf(id, loaded.object));
    this.verdicts.set(id, VALID);
    return true;
  }

  /** Settles the verdict of `id` and its closure; returns `id`'s object when this call loaded it. */
  private async settle(id: Id): Promise<AipObject | undefined> {
    if (this.verdicts.has(id)) return undefined;
    const stack: Frame[] = [];
    const top = await this.enter(id, stack);
    while (stack.length > 0) {
      const frame = stack[stack.length - 1] as Frame;
      if (frame.next < frame.children.length) {
        const child = frame.children[frame.next++] as Id;
        if (this.verdicts.has(child)) continue;
        if (this.inProgress.has(child)) {
          frame.cycleWith ??= child;
          continue;
        }
        await this.enter(child, stack);
        continue;
      }
      stack.pop();
      this.heldByFrames -= frame.weight;
      this.inProgress.delete(frame.id);
      if (frame.cycleWith !== undefined) {
        this.verdicts.set(frame.id, bad('graph.cycle', frame.id, `reference cycle through ${frame.cycleWith}`));
        continue;
      }
      const object = frame.object ?? (await this.again(frame.id));
      this.verdicts.set(frame.id, (await this.check(frame.id, object)) ?? VALID);
      // Just checked, so the most recently used: the next check up the history reads it.
      if (this.kept.get(frame.id) === undefined) this.keep(frame.id, object);
    }
    return top;
  }

  /** An object found on entry that its frame did not hold: from the cache, or read again. */
  private async again(id: Id): Promise<AipObject> {
    const cached = this.kept.get(id);
    if (cached !== undefined) return cached;
    const loaded = await this.source.load(id);
    if (loaded.kind !== 'found') throw new AipError('io', `${id} changed while it was being verified (run aip verify again)`);
    return loaded.object;
  }

  /** Full verification of `id` and its reference closure. */
  async verify(id: Id): Promise<Verdict> {
    const top = await this.settle(id);
    const error = this.verdicts.get(id);
    if (error) return { ok: false, error };
    const object = top ?? this.kept.get(id);
    if (object !== undefined) return { ok: true, object };
    // A valid object settled earlier as a reference, which the run did not
    // keep, is read again (it can only have been damaged since).
    const again = await this.source.load(id);
    if (again.kind === 'found') return { ok: true, object: again.object };
    return { ok: false, error: again.kind === 'missing' ? bad('graph.missing', id, 'no such object') : again.error };
  }

  /** As `verify`, but a valid object comes back as its type and what `inspect` found (never read twice). */
  async findingOf(id: Id): Promise<Finding> {
    await this.settle(id);
    const error = this.verdicts.get(id);
    if (error) return { ok: false, error };
    const node = this.nodes.get(id) as FoundNode;
    return { ok: true, type: node.type, version: node.version, problem: node.problem };
  }

  /** Checks one object whose references have all been verified; undefined when it holds. */
  private async check(id: Id, object: AipObject): Promise<AipError | undefined> {
    for (const ref of referencesOf(object)) {
      const node = await this.node(ref.target);
      if (node.kind === 'missing') return bad('graph.missing', id, `${ref.at}: ${ref.target} is not stored`);
      if (node.kind === 'invalid') return bad(node.error.code, id, `${ref.at}: ${ref.target} is invalid (${node.error.code})`);
      if (ref.expect !== undefined && node.type !== ref.expect) {
        return bad('graph.type', id, `${ref.at}: ${ref.target} is ${withArticle(node.type)}, expected ${withArticle(ref.expect)}`);
      }
      const verdict = this.verdicts.get(ref.target);
      if (verdict) return bad(verdict.code, id, `${ref.at}: ${ref.target} is invalid (${verdict.code})`);
    }
    return this.consistency(id, object);
  }

  /** A state or an operation the run found valid: from the cache, or read again. */
  private async loaded<T extends StateV1 | OperationV1>(id: Id): Promise<T> {
    const cached = this.kept.get(id);
    if (cached !== undefined) return cached as T;
    const object = this.keep(id, await this.again(id));
    if (object === undefined) throw new AipError('internal', `${id} was checked as a state or an operation but is not one`);
    return object as T;
  }

  private async consistency(id: Id, object: AipObject): Promise<AipError | undefined> {
    switch (object.type) {
      case 'operation': {
        const base = await this.loaded<StateV1>(object.data.base_state);
        for (const [i, effect] of object.data.effects.entries()) {
          const current = base.data.files.get(effect.path) ?? null;
          if (!sameEntry(effect.before, current)) {
            return bad('graph.before', id, `data.effects[${i}].before does not match the base state's entry for ${quotedPath(effect.path)}`);
          }
        }
        const conflict = findPathConflict(applyEffects(base.data.files, object.data.effects).keys());
        if (conflict) {
          return bad('graph.apply', id, `applying the effects makes ${quotedPath(conflict[0])} a file and an ancestor of ${quotedPath(conflict[1])}`);
        }
        return undefined;
      }
      case 'state': {
        const [parentId] = object.data.parents;
        const [operationId] = object.data.operations;
        if (parentId === undefined || operationId === undefined) return undefined; // the root state
        const operationNode = await this.node(operationId);
        if (operationNode.kind !== 'found' || operationNode.type !== 'operation') return undefined; // already reported as graph.type
        const operation = await this.loaded<OperationV1>(operationId);
        if (parentId !== operation.data.base_state) {
          return bad('graph.state_parent', id, `data.parents[0] is ${parentId} but the operation's base_state is ${operation.data.base_state}`);
        }
        if (object.data.intents[0] !== operation.data.intent) {
          return bad('graph.state_intents', id, `data.intents[0] is ${object.data.intents[0]} but the operation's intent is ${operation.data.intent}`);
        }
        const parent = await this.loaded<StateV1>(parentId);
        if (!sameFiles(applyEffects(parent.data.files, operation.data.effects), object.data.files)) {
          return bad('graph.state_files', id, 'data.files differ from applying the operation to the parent');
        }
        return undefined;
      }
      case 'evidence': {
        const state = await this.loaded<StateV1>(object.data.state);
        const producing = new Set(state.data.operations);
        for (const [i, op] of object.data.operations.entries()) {
          if (!producing.has(op)) return bad('graph.operations_subset', id, `data.operations[${i}] ${op} did not produce state ${object.data.state}`);
        }
        if (object.version === 2) {
          const limit = BigInt(object.data.output_limit);
          for (const stream of ['stdout', 'stderr'] as const) {
            const capture = object.data[stream];
            const node = await this.node(capture.artifact);
            const length = BigInt(node.kind === 'found' ? node.contentLength : 0);
            if (length > limit) return bad('graph.capture_length', id, `data.${stream}: ${length} bytes exceed output_limit ${limit}`);
            if (capture.truncated && length !== limit) {
              return bad('graph.capture_length', id, `data.${stream}: truncated but ${length} bytes, not output_limit ${limit}`);
            }
          }
        }
        return undefined;
      }
      default:
        return undefined;
    }
  }
}

/** Convenience: verify one object with a fresh run. */
export async function verifyGraph(id: Id, source: ObjectSource, options: GraphOptions = {}): Promise<Verdict> {
  return new GraphVerifier(source, options).verify(id);
}
