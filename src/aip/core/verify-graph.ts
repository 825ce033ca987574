// Graph verification (spec 5.2 to 5.6): references resolve to stored objects
// of the expected type, operation/state/evidence consistency, missing
// references and cycles. Pure: objects come through the ObjectSource port.
import { applyEffects, sameFiles } from './effects.js';
import { AipError, withArticle, type AipErrorCode } from './errors.js';
import type { AipObject, FileEntry, Id, ObjectType, StateV1 } from './objects.js';
import { referencesOf } from './references.js';
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
}

export type Verdict = { readonly ok: true; readonly object: AipObject } | { readonly ok: false; readonly error: AipError };

/**
 * A verdict as a run keeps it: a valid object by type and version, with the
 * object itself except for an artifact (whose content a run never holds on
 * to). What a whole-store verify needs, without reading any artifact twice.
 */
export type Finding =
  | { readonly ok: true; readonly type: ObjectType; readonly version: number; readonly object: AipObject | undefined }
  | { readonly ok: false; readonly error: AipError };

// What verification keeps of a loaded object: artifacts only by length, so a
// whole-repository run does not hold every file's content in memory.
type Node =
  | FoundNode
  | { readonly kind: 'missing' }
  | { readonly kind: 'invalid'; readonly error: AipError };

interface FoundNode {
  readonly kind: 'found';
  readonly type: ObjectType;
  readonly version: number;
  readonly object: AipObject | undefined;
  readonly contentLength: number;
}

interface Frame {
  readonly id: Id;
  readonly object: AipObject;
  /** Distinct reference targets; the references themselves are listed again when the object is checked. */
  readonly children: readonly Id[];
  next: number;
  cycleWith: Id | undefined;
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

  constructor(
    private readonly source: ObjectSource,
    private readonly options: GraphOptions = {},
  ) {}

  /** What the run keeps of a found object: an artifact by length, a state with shared file entries. */
  private foundNode(object: AipObject): FoundNode {
    if (object.type === 'artifact') {
      return { kind: 'found', type: 'artifact', version: object.version, object: undefined, contentLength: object.data.content.length };
    }
    return { kind: 'found', type: object.type, version: object.version, object: object.type === 'state' ? this.shared(object) : object, contentLength: 0 };
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
    const node: Node = loaded.kind === 'found' ? this.foundNode(loaded.object) : loaded;
    this.nodes.set(id, node);
    return node;
  }

  /** Loads `id` and either settles its verdict or pushes a frame for its references; returns the object when found. */
  private async enter(id: Id, stack: Frame[]): Promise<AipObject | undefined> {
    const loaded = await this.source.load(id);
    if (loaded.kind === 'missing') {
      this.nodes.set(id, loaded);
      this.verdicts.set(id, bad('graph.missing', id, 'no such object'));
      return undefined;
    }
    if (loaded.kind === 'invalid') {
      this.nodes.set(id, loaded);
      this.verdicts.set(id, loaded.error);
      return undefined;
    }
    const object = loaded.object;
    this.nodes.set(id, this.foundNode(object));
    if (this.options.trusted?.(id) === true) {
      this.verdicts.set(id, VALID);
      return object;
    }
    this.inProgress.add(id);
    stack.push({ id, object, children: [...new Set(referencesOf(object).map((r) => r.target))], next: 0, cycleWith: undefined });
    return object;
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
      this.inProgress.delete(frame.id);
      const error = frame.cycleWith !== undefined
        ? bad('graph.cycle', frame.id, `reference cycle through ${frame.cycleWith}`)
        : await this.check(frame);
      this.verdicts.set(frame.id, error ?? VALID);
    }
    return top;
  }

  /** Full verification of `id` and its reference closure. */
  async verify(id: Id): Promise<Verdict> {
    const top = await this.settle(id);
    const error = this.verdicts.get(id);
    if (error) return { ok: false, error };
    const node = this.nodes.get(id) as FoundNode;
    const object = node.object ?? top;
    if (object !== undefined) return { ok: true, object };
    // A valid artifact settled earlier as a reference: the run kept its
    // length only, so it is read again (it can only have been damaged since).
    const again = await this.source.load(id);
    if (again.kind === 'found') return { ok: true, object: again.object };
    return { ok: false, error: again.kind === 'missing' ? bad('graph.missing', id, 'no such object') : again.error };
  }

  /** As `verify`, but a valid artifact comes back without its object (never read twice). */
  async findingOf(id: Id): Promise<Finding> {
    await this.settle(id);
    const error = this.verdicts.get(id);
    if (error) return { ok: false, error };
    const node = this.nodes.get(id) as FoundNode;
    return { ok: true, type: node.type, version: node.version, object: node.object };
  }

  /** Checks one object whose references have all been verified; undefined when it holds. */
  private async check(frame: Frame): Promise<AipError | undefined> {
    const { id, object } = frame;
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

  private async loaded<T extends AipObject>(id: Id): Promise<T> {
    const node = await this.node(id);
    if (node.kind !== 'found' || node.object === undefined) throw new AipError('internal', `${id} was checked but is not loaded`);
    return node.object as T;
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
        const operation = await this.loaded<AipObject>(operationId);
        if (operation.type !== 'operation') return undefined; // already reported as graph.type
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
