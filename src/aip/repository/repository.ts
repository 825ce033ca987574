// A project's `.aip` repository (spec 7): layout, config, HEAD with
// compare-and-swap under the lock, verified object writes (the store
// invariant, 5.7), ID resolution, reverse queries answered from the index but
// confirmed against the objects, the index kept present, and full verification.
import { lstat, mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { constants, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { decodeWithId, encodeObject, makeArtifact, type Encoded } from '../core/codec.js';
import { AipError, failure, notWritten, success, withArticle, type Outcome } from '../core/errors.js';
import { NO_IGNORE_RULES, parseIgnoreRules, type IgnoreRules } from '../core/ignore-rules.js';
import { ROOT_STATE, ROOT_STATE_ID, type AipObject, type Id, type ObjectType, type StateV1 } from '../core/objects.js';
import { indexEntriesOf } from '../core/references.js';
import { isId } from '../core/value-rules.js';
import { quoted } from '../core/quote.js';
import { GraphVerifier, type LoadResult, type ObjectSource } from '../core/verify-graph.js';
import { DEFAULT_CONFIG, defaultConfigText, MAX_CONFIG_FILE_BYTES, parseConfig, type RepositoryConfig } from './config.js';
import { removeOnInterrupt } from '../../common/interrupt-cleanup.js';
import { makeFolders } from '../../common/make-folders.js';
import { OWNER_TAG_PATTERN, ownerTag, ownerTagGone } from '../../common/process.js';
import { ownReadFailureText, readRegularText, SMALL_METADATA_MAX_BYTES } from '../../common/regular-file.js';
import { withLock } from './lock.js';
import { ObjectStore, fsyncDirectory } from './object-store.js';
import { IndexLineTable, ReverseIndex, type IndexLine, type RebuildResult, type TargetedIndexLine } from './reverse-index.js';
import { errorCode } from '../../common/errors.js';

export interface RepositoryOptions {
  readonly warn?: (message: string) => void;
  readonly lockWaitMs?: number;
}

export interface PutResult {
  readonly id: Id;
  readonly object: AipObject;
  /** False when the object was already stored. */
  readonly stored: boolean;
}

/** A reverse reference confirmed against its source object, which comes along (already read and verified). */
export interface ReverseRef extends IndexLine {
  readonly object: AipObject;
}

export interface VerifyReport {
  readonly valid: { id: Id; type: string; version: number }[];
  /** `id` is `HEAD` for a HEAD that names no stored state (D43). */
  readonly invalid: { id: Id | 'HEAD'; code: string; message: string }[];
}

/** What `path` names, links not followed; undefined when nothing does (ENOENT, or ENOTDIR under a file). */
async function entryAt(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (error) {
    // A path too long or looping can hold no entry either: `--repo` naming one is no repository (3), not an I/O failure.
    if (['ENOENT', 'ENOTDIR', 'ENAMETOOLONG', 'ELOOP'].includes(errorCode(error) ?? '')) return undefined;
    throw error;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return (await entryAt(path))?.isDirectory() ?? false;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
}

/** `.aip` exists but is no folder: aip follows no link there (D49, D64), and init refuses it too. */
function notAFolderMessage(aipDir: string): string {
  return `${aipDir} is not a folder (a symbolic link or a file); aip opens only a real .aip folder and does not look further up`;
}

/** Prefix of the private folders `aip init` builds a repository in, beside `.aip`. */
const INIT_PREFIX = '.aip-init-';

/** repo.exists, saying how to get out when `.aip` is a half-made one (no HEAD: an init of an older aip that was interrupted). */
async function existingRepositoryError(aipDir: string): Promise<AipError> {
  if ((await isDirectory(aipDir)) && !(await exists(join(aipDir, 'HEAD')))) {
    return new AipError('repo.exists', `${aipDir} already exists but has no HEAD (left by an interrupted aip init?); if it holds nothing you need, remove it and run aip init again`);
  }
  return new AipError('repo.exists', `${aipDir} already exists`);
}

/** `{owner tag}-{16 hex}` after INIT_PREFIX: the work folder of the init run by the process the tag names. */
const INIT_WORK_NAME = new RegExp(`^${OWNER_TAG_PATTERN}-[0-9a-f]{16}$`);

/** Removes the work folders of inits killed on this host (their process is gone); a running init's, or one of another PID namespace, stays. Best effort. */
async function removeDeadInitFolders(root: string): Promise<void> {
  try {
    for (const name of await readdir(root)) {
      const match = name.startsWith(INIT_PREFIX) ? INIT_WORK_NAME.exec(name.slice(INIT_PREFIX.length)) : null;
      if (match !== null && ownerTagGone(match[1] ?? '', match[2])) await rm(join(root, name), { recursive: true, force: true });
    }
  } catch {
    // left for the next init
  }
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.${randomBytes(8).toString('hex')}.tmp`;
  // Registered before it exists: a failed write (a full disk) or a signal
  // leaves no HEAD.{hex}.tmp, which nothing would ever remove.
  const releaseOnInterrupt = removeOnInterrupt(tmp);
  try {
    const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } catch (error) {
      throw notWritten(path, error);
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  } finally {
    releaseOnInterrupt();
  }
  await fsyncDirectory(dirname(path));
}

export class Repository {
  readonly aipDir: string;
  readonly store: ObjectStore;
  readonly index: ReverseIndex;

  private constructor(
    readonly root: string,
    readonly config: RepositoryConfig,
    private readonly options: RepositoryOptions,
    aipDir = join(root, '.aip'),
  ) {
    this.aipDir = aipDir;
    this.store = new ObjectStore(this.aipDir, { maxObjectBytes: config.maxObjectBytes, ...(options.warn ? { warn: options.warn } : {}) });
    this.index = new ReverseIndex(this.aipDir);
  }

  /**
   * Creates `dir/.aip` with config, the root state, HEAD and a complete
   * index; `.aipignore` with `.git/` if absent. The repository is built in a
   * private folder beside `.aip` (`.aip-init-{owner tag}-{hex}`) and published by
   * one rename, so an interrupted init leaves no `.aip` at all (the next init
   * removes the dead one's folder) or a complete one.
   */
  static async init(dir: string, options: RepositoryOptions = {}): Promise<Repository> {
    const root = resolve(dir);
    await makeFolders(root);
    const aipDir = join(root, '.aip');
    await removeDeadInitFolders(root);
    if (await exists(aipDir)) throw await existingRepositoryError(aipDir);
    const work = join(root, `${INIT_PREFIX}${ownerTag()}-${randomBytes(8).toString('hex')}`);
    await mkdir(work);
    try {
      await mkdir(join(work, 'objects'));
      await mkdir(join(work, 'tmp'));
      await writeAtomically(join(work, 'config.json'), defaultConfigText());
      const building = new Repository(root, DEFAULT_CONFIG, options, work);
      const rootState = await building.putObject(ROOT_STATE);
      if (!rootState.ok) throw rootState.error;
      await writeAtomically(join(work, 'HEAD'), `${ROOT_STATE_ID}\n`);
      await building.ensureIndex();
      try {
        // Replaces nothing but an empty folder made since the check above.
        await rename(work, aipDir);
      } catch (error) {
        if (errorCode(error) === 'ENOTEMPTY' || errorCode(error) === 'EEXIST' || errorCode(error) === 'ENOTDIR') throw await existingRepositoryError(aipDir);
        throw error;
      }
    } catch (error) {
      await rm(work, { recursive: true, force: true });
      throw error;
    }
    await fsyncDirectory(root);
    try {
      await writeFile(join(root, '.aipignore'), '.git/\n', { flag: 'wx' });
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
    return new Repository(root, DEFAULT_CONFIG, options);
  }

  /** Opens the repository whose project root is exactly `root`. */
  static async open(root: string, options: RepositoryOptions = {}): Promise<Repository> {
    const abs = resolve(root);
    const aipEntry = await entryAt(join(abs, '.aip'));
    if (!aipEntry?.isDirectory()) {
      if (aipEntry !== undefined) throw new AipError('repo.not_found', notAFolderMessage(join(abs, '.aip')));
      // `--repo FILE`: aip init cannot make a repository there, so no hint to.
      const notFolder = await stat(abs).then((found) => !found.isDirectory(), () => false);
      throw new AipError('repo.not_found', notFolder ? `no .aip repository in ${abs}: it is not a folder` : `no .aip repository in ${abs} (to make one: aip init ${abs})`);
    }
    let text: string;
    try {
      text = await readRegularText(join(abs, '.aip', 'config.json'), MAX_CONFIG_FILE_BYTES);
    } catch (error) {
      throw new AipError('repo.config', `cannot read .aip/config.json: ${readFailure(error)}`);
    }
    const config = parseConfig(text);
    if (!config.ok) throw config.error;
    return new Repository(abs, config.value, options);
  }

  /** Finds the nearest ancestor of `start` (itself included) holding `.aip`, like Git's work tree. */
  static async find(start: string, options: RepositoryOptions = {}): Promise<Repository> {
    let dir = resolve(start);
    for (;;) {
      const aipDir = join(dir, '.aip');
      const aipEntry = await entryAt(aipDir);
      if (aipEntry?.isDirectory()) return Repository.open(dir, options);
      // Something else named `.aip` (a link, a file) stops the search: walking past it would act on a parent repository (D64).
      if (aipEntry !== undefined) throw new AipError('repo.not_found', notAFolderMessage(aipDir));
      const parent = dirname(dir);
      if (parent === dir) throw new AipError('repo.not_found', `no .aip repository in ${resolve(start)} or any parent folder (to make one here: aip init)`);
      dir = parent;
    }
  }

  // ------------------------------------------------------------ HEAD

  async readHead(): Promise<Id> {
    let text: string;
    try {
      text = await readRegularText(join(this.aipDir, 'HEAD'), SMALL_METADATA_MAX_BYTES);
    } catch (error) {
      throw new AipError('io', `cannot read .aip/HEAD: ${readFailure(error)}`);
    }
    const id = text.endsWith('\n') ? text.slice(0, -1) : text;
    if (!isId(id)) throw new AipError('io', '.aip/HEAD does not hold a state ID');
    return id;
  }

  /**
   * Compare-and-swap of HEAD under the lock: fails with head.moved if HEAD is
   * no longer `from`. A `from` of null stands for a HEAD that could not be
   * read (missing, or not a state ID): `aip head STATE` repairs it, unless
   * another command set it meanwhile.
   */
  async moveHead(from: Id | null, to: Id): Promise<void> {
    await this.locked(async () => {
      const current = from === null ? await this.readHead().catch(() => null) : await this.readHead();
      if (current !== from) throw new AipError('head.moved', `HEAD moved from ${from ?? 'an unreadable HEAD'} to ${current ?? 'an unreadable HEAD'}`);
      await writeAtomically(join(this.aipDir, 'HEAD'), `${to}\n`);
    });
  }

  async locked<T>(work: () => Promise<T>): Promise<T> {
    return withLock(join(this.aipDir, 'lock'), work, this.options.lockWaitMs === undefined ? {} : { waitMs: this.options.lockWaitMs });
  }

  // ------------------------------------------------------------ objects

  load(id: Id): Promise<LoadResult> {
    return this.store.load(id);
  }

  /**
   * A stored, decoded object; throws the read failure, or store.not_found.
   * `referencedBy` names where the ID came from when another object holds it
   * (`{source}: data.operations[0]`): its absence is then graph.missing (spec
   * 5.2), not an unknown ID the user gave (store.not_found, exit 3).
   */
  async get(id: Id, referencedBy?: string): Promise<AipObject> {
    const loaded = await this.store.load(id);
    if (loaded.kind === 'missing') {
      throw referencedBy === undefined ? new AipError('store.not_found', `no object ${id}`) : new AipError('graph.missing', `${referencedBy}: ${id} is not stored`);
    }
    if (loaded.kind === 'invalid') throw loaded.error;
    return loaded.object;
  }

  async getTyped<T extends ObjectType>(id: Id, type: T, referencedBy?: string): Promise<Extract<AipObject, { type: T }>> {
    const object = await this.get(id, referencedBy);
    if (object.type !== type) throw new AipError('graph.type', `${id} is ${withArticle(object.type)}, expected ${withArticle(type)}`);
    return object as Extract<AipObject, { type: T }>;
  }

  async artifactContent(id: Id): Promise<Outcome<Uint8Array>> {
    const loaded = await this.store.load(id);
    if (loaded.kind === 'missing') return failure('graph.missing', `artifact ${id} is not stored`);
    if (loaded.kind === 'invalid') return { ok: false, error: loaded.error };
    if (loaded.object.type !== 'artifact') return failure('graph.type', `${id} is ${withArticle(loaded.object.type)}, expected an artifact`);
    return success(loaded.object.data.content);
  }

  /** Validates, encodes, fully verifies and stores a typed object. */
  async putObject(object: AipObject): Promise<Outcome<PutResult>> {
    const encoded = encodeObject(object);
    if (!encoded.ok) return encoded;
    return this.putEncoded(encoded.value);
  }

  /** Decodes untrusted bytes, fully verifies and stores them. */
  async putBytes(bytes: Uint8Array): Promise<Outcome<PutResult>> {
    const decoded = decodeWithId(bytes, { maxObjectBytes: this.config.maxObjectBytes });
    if (!decoded.ok) return decoded;
    return this.putEncoded(decoded.value);
  }

  async putArtifact(content: Uint8Array): Promise<Outcome<PutResult>> {
    return this.putObject(makeArtifact(content));
  }

  /**
   * Stores after full verification. Stored objects are trusted (the store
   * invariant), so only the new object's own rules and direct references are
   * checked against them; every read still checks bytes against IDs.
   */
  async putEncoded(encoded: Encoded): Promise<Outcome<PutResult>> {
    const { id, bytes, object } = encoded;
    if (bytes.length > this.config.maxObjectBytes) {
      return failure('cbor.too_large', `${bytes.length} bytes exceed max_object_bytes ${this.config.maxObjectBytes}`);
    }
    if (await this.store.has(id)) {
      const existing = await this.store.readBytes(id);
      if (existing.ok) return success({ id, object, stored: false });
    }
    const store = this.store;
    const overlay: ObjectSource = {
      load: (target) => (target === id ? Promise.resolve({ kind: 'found', object }) : store.load(target)),
    };
    const verdict = await new GraphVerifier(overlay, { trusted: (target) => target !== id }).verify(id);
    if (!verdict.ok) return verdict;
    // Objects without references add no lines and need no index (artifacts: most writes).
    const generation = indexEntriesOf(object).length > 0 ? await this.ensureIndex() : undefined;
    const written = await this.store.write(id, bytes, () => this.index.record(id, object));
    if (written && generation !== undefined && (await this.index.generation()) !== generation) {
      // A rebuild ran between the append and the publish, so the lines may
      // have gone with the old index. Under the lock no rebuild is running:
      // append again (queries remove duplicates) or, with no index, build one,
      // which now includes this object.
      await this.locked(async () => {
        if ((await this.index.generation()) === undefined) await this.rebuildLocked();
        else await this.index.record(id, object);
      });
    }
    return success({ id, object, stored: written });
  }

  /** Resolves `HEAD`, a full ID, or a unique prefix of at least 6 hex digits (either case, D56). */
  async resolve(given: string): Promise<Id> {
    if (given === 'HEAD') return this.readHead();
    if (!/^[0-9A-Fa-f]+$/.test(given) || given.length > 64) throw new AipError('usage', `${quoted(given)} is not an ID, an ID prefix or HEAD`);
    // IDs are written in lowercase; a digit typed in uppercase is the same digit.
    const ref = given.toLowerCase();
    if (ref.length < 6) throw new AipError('usage', `ID prefix ${ref} is shorter than 6 hex digits`);
    const matches = await this.store.withPrefix(ref);
    if (matches.length === 0) throw new AipError('store.not_found', `no object matches ${ref}`);
    if (matches.length > 1) throw new AipError('store.ambiguous', `${ref} matches ${matches.length} objects: ${matches.join(', ')}`);
    return matches[0] as Id;
  }

  // ------------------------------------------------------------ reverse queries

  /**
   * The current index's generation. When there is no complete index (deleted,
   * only a foreign version folder, or an interrupted build) it is rebuilt
   * first, under the lock, so nothing that reads or extends the index ever
   * works on a partial one (spec 7.5: deleting `index/` is always safe).
   */
  async ensureIndex(): Promise<string> {
    const current = await this.index.generation();
    if (current !== undefined) return current;
    return this.locked(async () => (await this.index.generation()) ?? (await this.rebuildLocked()).generation);
  }

  /** `read` of one complete index: read again under the lock if a rebuild swapped the index meanwhile. */
  private async fromOneIndex<T>(read: () => Promise<T>): Promise<T> {
    const before = await this.ensureIndex();
    const result = await read();
    if ((await this.index.generation()) === before) return result;
    return this.locked(async () => {
      if ((await this.index.generation()) === undefined) await this.rebuildLocked();
      return read();
    });
  }

  /**
   * Objects referencing `target`, optionally filtered by source type and
   * field. Index lines are only hints (spec 1, 7.5): each is confirmed
   * against its source object, which must be stored, readable, of the claimed
   * type and version, and hold `target` in the claimed field. A line whose
   * source was never stored (a crash between append and publish) is dropped
   * silently; any other line that does not hold is dropped with a warning.
   */
  async reverse(target: Id, filter: { type?: ObjectType; field?: string } = {}): Promise<ReverseRef[]> {
    const out: ReverseRef[] = [];
    for (const line of await this.fromOneIndex(() => this.index.linesFor(target))) {
      if (filter.type !== undefined && line.type !== filter.type) continue;
      if (filter.field !== undefined && line.field !== filter.field) continue;
      const loaded = await this.store.load(line.source);
      if (loaded.kind === 'missing') continue;
      const problem = loaded.kind === 'invalid'
        ? `its source cannot be read (${loaded.error.code}; aip verify reports it)`
        : wrongLineReason(line, target, loaded.object, (t, field) => indexEntriesOf(loaded.object).some((e) => e.target === t && e.field === field));
      if (loaded.kind === 'invalid' || problem !== undefined) {
        const remedy = loaded.kind === 'invalid' ? '' : ' (aip index rebuild removes it)';
        this.options.warn?.(`ignoring index line "${line.source} ${line.type} ${line.version} ${line.field}" for ${target}: ${problem}${remedy}`);
        continue;
      }
      out.push({ ...line, object: loaded.object });
    }
    return out;
  }

  async statesProducedBy(operation: Id): Promise<Id[]> {
    return (await this.reverse(operation, { type: 'state', field: 'operations' })).map((l) => l.source);
  }

  async evidenceAbout(state: Id): Promise<Id[]> {
    return (await this.reverse(state, { type: 'evidence', field: 'state' })).map((l) => l.source);
  }

  /** Replaces `index/` (every version folder) with one rebuilt from the objects alone, under the lock (D55). */
  async rebuildIndex(): Promise<number> {
    return (await this.locked(async () => this.rebuildLocked())).objects;
  }

  /**
   * The rebuild itself; the caller holds the lock. A stored object that
   * cannot be read as a valid object indexes nothing and is named in a
   * warning, by `aip index rebuild` and by the automatic rebuild before a
   * query or write that finds no index alike (D55).
   */
  private async rebuildLocked(): Promise<RebuildResult> {
    const rebuilt = await this.index.rebuild(this.store);
    for (const { id, error } of rebuilt.unreadable) {
      const why = error.message.startsWith(`${id}: `) ? error.message.slice(id.length + 2) : error.message;
      this.options.warn?.(`object ${id} was not indexed: ${this.store.pathOf(id)} does not hold a valid object (${error.code}: ${why}); aip verify --all reports it`);
    }
    return rebuilt;
  }

  /**
   * Full verification from bytes (it does not rely on the store invariant).
   * With no IDs: every stored object, and the index both ways: every
   * reference of a valid object has its line, and every line naming a stored
   * source is true of it (`store.index`, reported on the source object).
   */
  async verify(ids?: readonly Id[]): Promise<VerifyReport> {
    const all = ids === undefined;
    const targets = ids ?? (await this.store.list());
    const { bySource, malformed } = all
      ? await this.fromOneIndex(async () => {
        const malformed = new Map<Id, string>();
        return { bySource: await this.index.linesBySource(malformed), malformed };
      })
      : { bySource: new IndexLineTable().grouped(), malformed: new Map<Id, string>() };
    // The index is checked against each object while the run has it in hand.
    const verifier = new GraphVerifier(this.store, all ? { inspect: (id, object) => indexProblem(id, object, bySource.linesOf(id)) } : {});
    const report: VerifyReport = { valid: [], invalid: [] };
    if (all) {
      // HEAD is not an object, but a repository whose HEAD names no stored
      // state is damaged (D43): reported under the name HEAD.
      const head = await this.headProblem();
      if (head !== undefined) report.invalid.push({ id: 'HEAD', ...head });
    }
    for (const id of targets) {
      const finding = await verifier.findingOf(id);
      if (!finding.ok) {
        report.invalid.push({ id, code: finding.error.code, message: finding.error.message });
        continue;
      }
      if (finding.problem !== undefined) {
        report.invalid.push({ id, code: 'store.index', message: `${id}: ${finding.problem} (run aip index rebuild)` });
        continue;
      }
      if (malformed.has(id)) {
        report.invalid.push({ id, code: 'store.index', message: malformedLineMessage(id, malformed.get(id) as string) });
        continue;
      }
      report.valid.push({ id, type: finding.type, version: finding.version });
    }
    // An index file of an ID that is not stored is reported under that ID.
    const listed = new Set(targets);
    for (const [target, line] of malformed) {
      if (!listed.has(target)) report.invalid.push({ id: target, code: 'store.index', message: malformedLineMessage(target, line) });
    }
    return report;
  }

  /** Why HEAD does not name a stored state, or undefined when it does (the state's own validity is reported with it). */
  private async headProblem(): Promise<{ code: string; message: string } | undefined> {
    let head: Id;
    try {
      head = await this.readHead();
    } catch (error) {
      if (error instanceof AipError) return { code: error.code, message: error.message };
      throw error;
    }
    const loaded = await this.store.load(head);
    if (loaded.kind === 'missing') return { code: 'graph.missing', message: `.aip/HEAD names ${head}, which is not stored` };
    if (loaded.kind === 'found' && loaded.object.type !== 'state') {
      return { code: 'graph.type', message: `.aip/HEAD names ${head}, ${withArticle(loaded.object.type)}, not a state` };
    }
    return undefined;
  }

  /** The ignore rules a state carries in its own root `.aipignore` (none when absent). */
  async ignoreRulesOf(state: StateV1): Promise<Outcome<IgnoreRules>> {
    const entry = state.data.files.get('.aipignore');
    if (entry === undefined) return success(NO_IGNORE_RULES);
    const content = await this.artifactContent(entry.artifact);
    if (!content.ok) return content;
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(content.value);
    } catch {
      return failure('snapshot.invalid', ".aipignore is not valid UTF-8");
    }
    return parseIgnoreRules(text);
  }
}

/** Why config.json or HEAD could not be read: the errno code, or that a FIFO or the like stands in its place. */
function readFailure(error: unknown): string {
  return ownReadFailureText(error) ?? errorCode(error) ?? 'error';
}

function malformedLineMessage(target: Id, line: string): string {
  return `${target}: the reverse index file of ${target} holds a line that is not an index line: ${quoted(line)} (run aip index rebuild)`;
}

/**
 * Why an index line naming a valid object as its source is not true of it,
 * or undefined when it is. `references(target, field)` says whether the
 * object holds `target` in `field`.
 */
function wrongLineReason(line: IndexLine, target: Id, source: { type: ObjectType; version: number }, references: (target: Id, field: string) => boolean): string | undefined {
  if (line.type !== source.type || line.version !== source.version) {
    return `its source is ${source.type}/${source.version}, not ${line.type}/${line.version}`;
  }
  return references(target, line.field) ? undefined : `its source does not reference ${target} in ${line.field}`;
}

/**
 * The first disagreement between a valid object's references and the index
 * lines naming it as source: the first reference without its line, else the
 * first line that is not true of it. Set lookups: walking the references for
 * each line was quadratic in a state's files.
 */
function indexProblem(id: Id, source: AipObject, lines: readonly TargetedIndexLine[]): string | undefined {
  const entries = indexEntriesOf(source);
  const present = new Set<string>();
  for (const l of lines) {
    if (l.type === source.type && l.version === source.version) present.add(`${l.target} ${l.field}`);
  }
  for (const { target, field } of entries) {
    if (!present.has(`${target} ${field}`)) return `the reverse index lacks its ${field} -> ${target} reference`;
  }
  const referenced = new Set(entries.map((e) => `${e.target} ${e.field}`));
  for (const line of lines) {
    const reason = wrongLineReason(line, line.target, source, (target, field) => referenced.has(`${target} ${field}`));
    if (reason !== undefined) {
      return `the reverse index of ${line.target} holds a wrong line "${id} ${line.type} ${line.version} ${line.field}": ${reason}`;
    }
  }
  return undefined;
}
