// The reverse-reference index under `.aip/index/v1` (spec 7.5): appended
// lines, a completeness marker, and a rebuild from the objects alone that is
// built aside and published by rename. A cache, never authoritative: it
// answers raw lines; the repository confirms them against the objects.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { AipError, notWritten } from '../core/errors.js';
import type { AipObject, Id, ObjectType } from '../core/objects.js';
import { indexEntriesOf } from '../core/references.js';
import { isId } from '../core/value-rules.js';
import { readRegularText, SMALL_METADATA_MAX_BYTES } from '../../common/regular-file.js';
import { fsyncDirectory, isRealFolder, type ObjectStore } from './object-store.js';
import { errorCode } from '../../common/errors.js';
import { makeFolders } from '../../common/make-folders.js';
import { withBoundedTasks } from '../../common/bounded-tasks.js';

/**
 * One target's refs file: a line per referencing field, so about 800 000
 * references to one object; past it, reading the file (a query, verify,
 * a rebuild's check) fails with `io` EFBIG instead of loading it (D38).
 */
const MAX_REFS_FILE_BYTES = 64 * 1024 * 1024;

/**
 * Lines appended at once. An object can reference tens of thousands of
 * targets (a state's files), each in a file of its own: one append at a time,
 * a state of 20 000 files took about 9 s to index on the test machine.
 */
const APPENDS_IN_FLIGHT = 16;

export interface IndexLine {
  readonly source: Id;
  readonly type: ObjectType;
  readonly version: number;
  readonly field: string;
}

/** A line together with the target whose file holds it. */
export interface TargetedIndexLine extends IndexLine {
  readonly target: Id;
}

export interface RebuildResult {
  /** The new index's generation (the content of its completeness marker). */
  readonly generation: string;
  /** Objects whose references were indexed. */
  readonly objects: number;
  /** Stored objects that could not be read as valid objects, so index nothing (D55). */
  readonly unreadable: readonly { readonly id: Id; readonly error: AipError }[];
}

const TYPES: readonly string[] = ['artifact', 'intent', 'operation', 'state', 'evidence', 'decision'];
/** The current index version folder; any other folder under `index/` is foreign and goes at the next rebuild. */
const VERSION_DIR = 'v1';
/** Written last by a rebuild; its absence means "no usable index" (absent, foreign or interrupted). */
export const MARKER_NAME = 'complete';
/** Prefix of rebuild work folders under `.aip/tmp`. */
const BUILD_PREFIX = 'index-';

function notThere(error: unknown): boolean {
  return errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR';
}

function notOwnIndexFile(path: string, kind: string): AipError {
  return new AipError('io', `the reverse index path ${path} is not ${kind} (a symbolic link?); aip index rebuild replaces it`);
}

function lineText(source: Id, object: AipObject, field: string): string {
  return `${source} ${object.type} ${object.version} ${field}\n`;
}

/** True when the file is not empty and its last byte is not a newline. */
async function endsTorn(handle: FileHandle, size: number): Promise<boolean> {
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  const { bytesRead } = await handle.read(last, 0, 1, size - 1);
  return bytesRead === 1 && last[0] !== 0x0a;
}

/** Makes (or checks) a refs fan-out folder; false when the refs folder is gone. */
async function makeFanout(fanout: string): Promise<boolean> {
  try {
    await mkdir(fanout);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    if (errorCode(error) !== 'EEXIST') throw error;
    // Never through a symbolic link: the lines would land outside the repository.
    if (!(await isRealFolder(fanout))) throw notOwnIndexFile(fanout, 'a folder');
  }
  return true;
}

/** Appends `line` to the refs file at `path`; false when its folder is gone. */
async function appendLine(path: string, line: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, constants.O_RDWR | constants.O_CREAT | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    // A link, or a folder (EISDIR, as opening one for writing fails), in place of the file.
    if (errorCode(error) === 'ELOOP' || errorCode(error) === 'EISDIR') throw notOwnIndexFile(path, 'a regular file');
    throw notWritten(`the reverse index file ${path}`, error);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw notOwnIndexFile(path, 'a regular file');
    // A file not ending in a newline ends in a torn line (power loss, full
    // disk): start on a fresh line, or this line would be glued to it and
    // lost too. Two appenders racing here (other processes, or two fields
    // of one object naming one target) at worst leave an empty line.
    const torn = await endsTorn(handle, info.size);
    await handle.write(`${torn ? '\n' : ''}${line}`);
  } catch (error) {
    throw notWritten(`the reverse index file ${path}`, error);
  } finally {
    await handle.close();
  }
  return true;
}

/**
 * Parses an index file: malformed and torn lines are not lines; duplicates are
 * removed. Empty lines (two appenders racing after a torn line, D30) are
 * nothing; any other line that is not a line is handed to `malformed`.
 */
function parseLines(text: string, malformed?: (line: string) => void): IndexLine[] {
  const seen = new Set<string>();
  const out: IndexLine[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    // A torn last line (a crash mid-append) is simply not a line.
    const parts = line.split(' ');
    const [source, type, version, field] = parts as [string, string, string, string];
    if (parts.length !== 4 || !isId(source) || !TYPES.includes(type) || !/^[1-9][0-9]{0,8}$/.test(version) || field === '') {
      malformed?.(line);
      continue;
    }
    if (seen.has(line)) continue;
    seen.add(line);
    out.push({ source, type: type as ObjectType, version: Number(version), field });
  }
  return out;
}

export class ReverseIndex {
  readonly indexDir: string;
  readonly currentDir: string;
  readonly refsDir: string;
  readonly markerPath: string;
  private readonly tmpDir: string;

  constructor(private readonly aipDir: string) {
    this.indexDir = join(aipDir, 'index');
    this.currentDir = join(this.indexDir, VERSION_DIR);
    this.refsDir = join(this.currentDir, 'refs');
    this.markerPath = join(this.currentDir, MARKER_NAME);
    this.tmpDir = join(aipDir, 'tmp');
  }

  /**
   * The generation of the current index, or undefined when there is no
   * complete one (no `index/v1`, only foreign versions, or a build that never
   * finished). Each rebuild gets a new random generation, so a reader or writer
   * comparing it before and after its work can tell that a rebuild ran meanwhile.
   */
  async generation(): Promise<string | undefined> {
    // A symbolic link (or anything but a folder) in place of index/, v1/ or
    // refs/ is not an index: appending through it wrote lines into files
    // outside the repository. It is rebuilt like a missing index.
    for (const dir of [this.indexDir, this.currentDir, this.refsDir]) {
      if (!(await isRealFolder(dir))) return undefined;
    }
    let text: string;
    try {
      text = await readRegularText(this.markerPath, SMALL_METADATA_MAX_BYTES);
    } catch (error) {
      // A folder or FIFO in the marker's place marks nothing, like a marker
      // with other content: the index is rebuilt (it was a bare io: EISDIR).
      if (notThere(error) || errorCode(error) === 'EISDIR' || errorCode(error) === 'ENOTREG') return undefined;
      throw error;
    }
    return /^[0-9a-f]{32}\n$/.test(text) ? text.slice(0, -1) : undefined;
  }

  /**
   * Appends one line per distinct (target, field) of `object` to the live
   * index, one O_APPEND write each. It never creates `index/` or `index/v1`:
   * when they are gone (deleted, or a rebuild is swapping them) the lines are
   * skipped, and the caller's generation check sees the change and recovers.
   */
  async record(source: Id, object: AipObject): Promise<void> {
    await this.recordInto(this.refsDir, source, object);
  }

  private async recordInto(refsDir: string, source: Id, object: AipObject): Promise<void> {
    // When index/ is gone (a rebuild swapping it) the rest of the lines are skipped.
    let gone = false;
    // Fan-out folders made or checked by this call: most of an object's many targets share one.
    const fanouts = new Map<string, Promise<boolean>>();
    await withBoundedTasks(APPENDS_IN_FLIGHT, async (start) => {
      for (const { target, field } of indexEntriesOf(object)) {
        if (gone) return;
        await start(async () => {
          if (gone) return;
          const fanout = join(refsDir, target.slice(0, 2));
          let ready = fanouts.get(fanout);
          if (ready === undefined) fanouts.set(fanout, (ready = makeFanout(fanout)));
          if (!(await ready) || !(await appendLine(join(fanout, target.slice(2)), lineText(source, object, field)))) gone = true;
        });
      }
    });
  }

  /** Raw lines for `target`: parsed, duplicates removed, sorted by source then field. Nothing is confirmed here. */
  async linesFor(target: Id): Promise<IndexLine[]> {
    const path = join(this.refsDir, target.slice(0, 2), target.slice(2));
    let text: string;
    try {
      text = await readRegularText(path, MAX_REFS_FILE_BYTES);
    } catch (error) {
      if (notThere(error)) return [];
      // A folder or a FIFO in its place gave a bare "io: EISDIR" naming nothing.
      if (errorCode(error) === 'EISDIR' || errorCode(error) === 'ENOTREG') {
        throw new AipError('io', `the reverse index file ${path} is not a regular file (aip index rebuild replaces it)`);
      }
      throw error;
    }
    return parseLines(text).sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  }

  /**
   * Every line of the current index with its target, grouped by source (for
   * `verify --all`); `malformed` gets, per target, the first line of its file
   * that is not a line (torn, or garbage written by something else; D43).
   * The lines are held packed (see IndexLineTable), not as an object each.
   */
  async linesBySource(malformed?: Map<Id, string>): Promise<IndexLineTable> {
    const out = new IndexLineTable();
    let fanouts: string[];
    try {
      fanouts = await readdir(this.refsDir);
    } catch (error) {
      if (notThere(error)) return out.grouped();
      throw error;
    }
    for (const fanout of fanouts.sort()) {
      if (!/^[0-9a-f]{2}$/.test(fanout)) continue;
      let names: string[];
      try {
        names = await readdir(join(this.refsDir, fanout));
      } catch (error) {
        if (notThere(error)) continue;
        throw error;
      }
      for (const name of names.sort()) {
        const target = fanout + name;
        if (!isId(target)) continue;
        let text: string;
        try {
          text = await readRegularText(join(this.refsDir, fanout, name), MAX_REFS_FILE_BYTES);
        } catch (error) {
          // A folder or a FIFO where a refs file belongs holds no lines.
          if (notThere(error) || errorCode(error) === 'EISDIR' || errorCode(error) === 'ENOTREG') continue;
          throw error;
        }
        const onMalformed = (line: string): void => {
          if (malformed !== undefined && !malformed.has(target)) malformed.set(target, line);
        };
        for (const line of parseLines(text, onMalformed)) out.add(target, line);
      }
    }
    return out.grouped();
  }

  /**
   * Rebuilds the index from the objects alone. The caller holds the
   * repository lock. The new index is built under `.aip/tmp`, then replaces
   * the whole of `index/` (foreign version folders included) by rename, and
   * is marked complete last: a crash at any point leaves either no usable
   * index (rebuilt by the next command) or a complete one.
   */
  async rebuild(store: ObjectStore): Promise<RebuildResult> {
    await makeFolders(this.tmpDir);
    // Build folders found there are removed with their contents: never in a folder a link leads to.
    if (!(await isRealFolder(this.tmpDir))) throw new AipError('io', `${this.tmpDir} is not a folder (a symbolic link?); remove it`);
    // Only the lock holder builds, so any build folder found now is a dead one's.
    for (const name of await readdir(this.tmpDir)) {
      if (name.startsWith(BUILD_PREFIX)) await rm(join(this.tmpDir, name), { recursive: true, force: true });
    }
    const suffix = randomBytes(8).toString('hex');
    const build = join(this.tmpDir, `${BUILD_PREFIX}new-${suffix}`);
    const buildRefs = join(build, VERSION_DIR, 'refs');
    await makeFolders(buildRefs);
    const listed = new Set(await store.list());
    let objects = 0;
    const unreadable: { id: Id; error: AipError }[] = [];
    for (const id of listed) {
      const loaded = await store.load(id);
      // An unreadable object indexes nothing; the caller says so (verify reports it too).
      if (loaded.kind === 'invalid') unreadable.push({ id, error: loaded.error });
      if (loaded.kind !== 'found') continue;
      await this.recordInto(buildRefs, id, loaded.object);
      objects++;
    }

    const olds: string[] = [];
    for (let attempt = 0; ; attempt++) {
      const old = join(this.tmpDir, `${BUILD_PREFIX}old-${suffix}-${attempt}`);
      try {
        await rename(this.indexDir, old);
        olds.push(old);
      } catch (error) {
        if (!notThere(error)) throw error;
      }
      try {
        await rename(build, this.indexDir);
        break;
      } catch (error) {
        // Something outside this protocol (an older aip appending) recreated index/ in between.
        if (attempt >= 2 || (errorCode(error) !== 'ENOTEMPTY' && errorCode(error) !== 'EEXIST')) throw error;
      }
    }
    await fsyncDirectory(this.aipDir);

    // Writers do not take the lock: an object stored while the build ran may
    // have put its lines into the old index. Its file is in place by now, so
    // listing again catches it; a writer still between its append and its
    // rename sees the generation change afterwards and appends again.
    for (const id of await store.list()) {
      if (listed.has(id)) continue;
      const loaded = await store.load(id);
      if (loaded.kind === 'invalid') unreadable.push({ id, error: loaded.error });
      if (loaded.kind !== 'found') continue;
      await this.recordInto(this.refsDir, id, loaded.object);
      objects++;
    }

    const generation = randomBytes(16).toString('hex');
    const markerTmp = join(this.currentDir, `${MARKER_NAME}.${suffix}.tmp`);
    const handle = await open(markerTmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
    try {
      await handle.writeFile(`${generation}\n`);
      await handle.sync();
    } catch (error) {
      throw notWritten(`the reverse index marker ${this.markerPath}`, error);
    } finally {
      await handle.close();
    }
    await rename(markerTmp, this.markerPath);
    await fsyncDirectory(this.currentDir);
    for (const old of olds) await rm(old, { recursive: true, force: true });
    return { generation, objects, unreadable };
  }
}

/**
 * Index lines grouped by source, packed for a whole-repository verify: a
 * large repository has hundreds of thousands of lines, and an object (plus
 * five strings) per line held them at about 500 bytes each. Here IDs and
 * fields are numbered once and a line is five integers; `linesOf` gives a
 * source's lines back as objects, in the order they were added.
 */
export class IndexLineTable {
  private readonly ids = new Numbering();
  private readonly fields = new Numbering();
  private packed = new Int32Array(5 * 1024);
  private count = 0;
  /** After `grouped()`: line numbers ordered by source, and where each source's run starts. */
  private order: Int32Array | undefined;
  private starts: Int32Array | undefined;

  add(target: Id, line: IndexLine): void {
    if (this.order !== undefined) throw new AipError('internal', 'index line table already grouped');
    if (5 * (this.count + 1) > this.packed.length) {
      const bigger = new Int32Array(this.packed.length * 2);
      bigger.set(this.packed);
      this.packed = bigger;
    }
    const at = 5 * this.count++;
    this.packed[at] = this.ids.numberOf(line.source);
    this.packed[at + 1] = this.ids.numberOf(target);
    this.packed[at + 2] = TYPES.indexOf(line.type);
    this.packed[at + 3] = line.version;
    this.packed[at + 4] = this.fields.numberOf(line.field);
  }

  /** Orders the lines by source (a stable counting sort: each source keeps its lines' order). */
  grouped(): this {
    const sources = this.ids.size;
    // starts[s] is where source s's run begins in `order`; starts[sources] is the line count.
    const starts = new Int32Array(sources + 1);
    for (let i = 0; i < this.count; i++) {
      const s = this.packed[5 * i] as number;
      starts[s + 1] = (starts[s + 1] as number) + 1;
    }
    for (let s = 0; s < sources; s++) starts[s + 1] = (starts[s + 1] as number) + (starts[s] as number);
    const next = starts.slice(0, sources);
    const order = new Int32Array(this.count);
    for (let i = 0; i < this.count; i++) {
      const s = this.packed[5 * i] as number;
      const k = next[s] as number;
      order[k] = i;
      next[s] = k + 1;
    }
    this.order = order;
    this.starts = starts;
    return this;
  }

  /** The lines naming `source`, with their targets, in the order they were added. */
  linesOf(source: Id): TargetedIndexLine[] {
    const n = this.ids.existing(source);
    if (n === undefined || this.order === undefined || this.starts === undefined) return [];
    const out: TargetedIndexLine[] = [];
    for (let k = this.starts[n] as number; k < (this.starts[n + 1] as number); k++) {
      const at = 5 * (this.order[k] as number);
      out.push({
        source: this.ids.at(this.packed[at] as number) as Id,
        type: TYPES[this.packed[at + 2] as number] as ObjectType,
        version: this.packed[at + 3] as number,
        field: this.fields.at(this.packed[at + 4] as number),
        target: this.ids.at(this.packed[at + 1] as number) as Id,
      });
    }
    return out;
  }
}

/** Texts numbered in the order first seen (0, 1, ...), each held once. */
class Numbering {
  private readonly texts: string[] = [];
  private readonly numbers = new Map<string, number>();

  get size(): number {
    return this.texts.length;
  }

  numberOf(text: string): number {
    let n = this.numbers.get(text);
    if (n === undefined) {
      // A copy, so the table does not keep alive the file text it was sliced from.
      const own = Buffer.from(text, 'utf8').toString('utf8');
      n = this.texts.length;
      this.texts.push(own);
      this.numbers.set(own, n);
    }
    return n;
  }

  existing(text: string): number | undefined {
    return this.numbers.get(text);
  }

  at(n: number): string {
    return this.texts[n] as string;
  }
}
