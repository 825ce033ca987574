// The record tree of one identity: reading the core and memory records,
// saving one memory, and replacing the whole set with a journaled, crash-safe
// compress plus roll-forward recovery (spec 7). Owns every file under
// `{base}/{identity}/`; knows nothing about config files, MCP or the CLI.

import { isUtf8 } from 'node:buffer';
import { promises as fs, constants as fsConstants } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { join, sep } from 'node:path';
import { isJsonObject, type JsonValue, parseJson } from '../../common/json.js';
import { makeFolders } from '../../common/make-folders.js';
import { Mutex } from '../../common/mutex.js';
import { FileTooLargeError, readRegularText, readToEndBounded } from '../../common/regular-file.js';
import { acquireCollectionLock, isPendingLockName, type LockHandle, type LockOptions } from './collection-lock.js';
import { AigptError, describeCause, errnoCode, failedTo } from '../core/errors.js';
import {
  BatchFileError,
  exists,
  FILE_BATCH,
  type FaultHook,
  fsyncDir,
  listTemps,
  noFault,
  removeStaleTemps,
  replaceFileAtomic,
  writeExclusiveSyncedBatch,
  writeNewFileAtomic,
} from './fs-atomic.js';
import { CORE_RKEY, LOCK_TIMEOUT_MS, MAX_COMPRESS_ITEMS, MAX_JOURNAL_BYTES, MAX_MEMORY_TEXT_BYTES, MAX_RECORD_FILE_BYTES, MAX_RECORDS_READ } from '../core/limits.js';
import { coreRecordJson, formatCreatedAt, isWellFormedText, memoryRecordJson, parseRecordText, renderCompact } from '../core/record-format.js';
import { compareFileNames, isRecordFileName, type RecordTree, recordStem } from '../core/record-paths.js';
import { isGeneratedTid, isValidTid, MAX_TID_MICROS, TidGenerator, tidMicros } from '../core/tid.js';

export const JOURNAL_FILE = '.compress-journal';

/** What a reader that sees the journal says (spec 7.5: it reads the folder as it is). */
export const COMPRESS_PENDING = 'a compress is in progress or was interrupted (the next write finishes it); records may be mixed';
const STAGED_SUFFIX = '.json.tmp-compress';
const CORE_FILE = `${CORE_RKEY}.json`;
/** Leftovers of interrupted writes (`.*.tmp-*`, which includes `.*.tmp-compress`). */
const TEMP_NAME = /^\..*\.tmp-/;
/** Reads of the memory set that met a concurrent compress, and the first pause between them (then 4x each time). */
const READ_ATTEMPTS = 4;
const READ_RETRY_PAUSE_MS = 5;
/** Record files read at once, at most. */
const MAX_READ_BATCH = 32;
/** Bytes of record files one batch reads before the next batch is made smaller. */
const READ_BATCH_BYTES = 1024 * 1024;

/**
 * How many record files the next batch reads: up to MAX_READ_BATCH while
 * they are small, fewer while they are large. A valid 1 MiB record dense
 * with extra members (`[]` repeated) parses into a tree tens of times its
 * size, and 32 of them in hand at once took readers to 1.2-2.8 GB.
 */
export class ReadBatchSize {
  next = 8;

  /** Adjusts to what the last batch read. */
  after(outcomes: readonly RecordFileOutcome[]): void {
    let bytes = 0;
    for (const outcome of outcomes) if (outcome.ok) bytes += outcome.bytes;
    this.next = bytes <= READ_BATCH_BYTES ? Math.min(MAX_READ_BATCH, this.next * 2) : Math.max(1, Math.floor((this.next * READ_BATCH_BYTES) / bytes));
  }
}

/**
 * A temp file recovery may delete. A name ending in `.json` (`.a.tmp-1.json`)
 * matches the pattern but is a record the reference reads (spec 3.2), and
 * only compress deletes records (spec 9); our own temp names never end so.
 */
function isTempName(name: string): boolean {
  return TEMP_NAME.test(name) && !isRecordFileName(name);
}

export interface MemoryStoreOptions {
  readonly did: string;
  readonly handle: string;
  readonly tree: RecordTree;
  /** The configured memory limit (bot.memory). */
  readonly memoryLimit: bigint;
  readonly clock?: () => Date;
  readonly tids?: TidGenerator;
  readonly lock?: LockOptions;
  readonly fault?: FaultHook;
  /**
   * This process's write order (writers in call order, so they do not poll
   * the file lock against each other and their TIDs follow the calls);
   * shared by the stores of one process, as the config may name a new tree at any time.
   */
  readonly writes?: Mutex;
}

export interface MemoryRecord {
  readonly name: string;
  readonly path: string;
  readonly text: string;
  /** The whole parsed file, for re-serialisation. */
  readonly value: JsonValue;
}

export interface SkippedFile {
  readonly path: string;
  readonly reason: string;
}

export interface MemoryReadResult {
  readonly records: readonly MemoryRecord[];
  /** The files read that are unreadable or not records (never those left out by a bound: `notRead` counts them). */
  readonly skipped: readonly SkippedFile[];
  /** Entries selected by the reference's rule (3.2), readable or not. */
  readonly selected: number;
  /**
   * How many of the oldest entries were left out by a read bound, unread and
   * unnamed: beyond the file-count bound, or beyond the byte budget the
   * caller asked for.
   */
  readonly notRead: number;
  /** A compress journal is present: another process is mid-compress, or one crashed. */
  readonly compressPending: boolean;
  /**
   * The records read are neither the journal's old set nor its new one: some
   * of each (a compress killed while publishing, or one seen mid-switch).
   * Only with compressPending; a journal that cannot be read counts as mixed.
   */
  readonly compressMixed: boolean;
}

/** One selected memory file of a scan: its record, or why it was skipped. */
export type ScanItem = { readonly record: MemoryRecord } | { readonly skipped: SkippedFile };

export interface MemoryListing {
  /**
   * Entries selected by the reference's rule (3.2), readable or not (those
   * later found removed included: see `gone`).
   */
  readonly selected: number;
  /** The oldest entries beyond the file-count bound: visited as skipped, not read. */
  readonly notRead: number;
  readonly compressPending: boolean;
  /** Listed but removed before they were read (a compress replacing the set); 0 in the listing handed to onListed. */
  readonly gone: number;
}

export interface CoreReadResult {
  readonly path: string;
  readonly value: JsonValue;
  /** value.content.text when it is a string. */
  readonly text: string | undefined;
}

export interface RecoveryReport {
  readonly rolledForward: boolean;
  readonly removedTemps: readonly string[];
  readonly problems: readonly string[];
}

/** Spec 8's fixed text, for save_memory content and for any compress item alike. */
const CONTENT_TOO_LARGE = `content exceeds ${MAX_MEMORY_TEXT_BYTES} bytes`;

/** Why a memory text cannot be stored, or undefined when it can. */
export function checkMemoryText(text: string): string | undefined {
  if (Buffer.byteLength(text, 'utf8') > MAX_MEMORY_TEXT_BYTES) return CONTENT_TOO_LARGE;
  if (!isWellFormedText(text)) return 'content is not well-formed Unicode (lone surrogate)';
  return undefined;
}

/** Why a compress list is refused, or undefined when it is acceptable. */
export function checkCompressItems(items: readonly string[], memoryLimit: bigint): string | undefined {
  // The limit first: it is the bound an agent can act on (spec 6), and one
  // that retried with the server's own cap would only meet the limit next.
  if (BigInt(items.length) > memoryLimit) return `compress got ${items.length} items but the memory limit is ${memoryLimit}`;
  if (items.length > MAX_COMPRESS_ITEMS) return `compress got ${items.length} items but at most ${MAX_COMPRESS_ITEMS} are accepted`;
  for (const [index, item] of items.entries()) {
    const problem = checkMemoryText(item);
    if (problem === undefined) continue;
    // The size message is fixed by the spec; the other problem names the item.
    return problem === CONTENT_TOO_LARGE ? problem : `items[${index}]: ${problem}`;
  }
  return undefined;
}

interface Journal {
  readonly create: readonly string[];
  readonly remove: readonly string[];
  /** Old record names that are not UTF-8 (journal member `deleteRaw`, hex), so JSON cannot hold them as text. */
  readonly removeRaw: readonly Buffer[];
}

/**
 * A selected entry of the memory folder. Node would decode a name that is
 * not UTF-8 with U+FFFD, and that text names no file: such an entry is
 * opened and removed by its raw bytes (the reference reads it as a memory).
 */
interface RecordEntry {
  /** The name as text (lossy when it is not UTF-8), for messages and TIDs. */
  readonly name: string;
  /** The name's bytes, kept only when it is not UTF-8 (a million small Buffers cost hundreds of MB). */
  readonly raw: Buffer | undefined;
  readonly isDirectory: boolean;
}

/** What one pass over the memory folder keeps (see MemoryStore.listFolder). */
interface FolderListing {
  /** The newest selected entries, at most the number asked for, in the reference's (bytewise) order. */
  readonly entries: RecordEntry[];
  /** Entries selected by the reference's rule (3.2) in the whole folder, kept or not. */
  readonly selected: number;
  /** The greatest timestamp of a record TID a generator can follow (-1: none): the floor for new TIDs. */
  readonly tidFloor: number;
  /** A compress journal is present. */
  readonly journal: boolean;
  /** Leftover temp files of interrupted writes. */
  readonly temps: string[];
  /** Lock waiters' pending files, for the holder's sweep of dead ones (LockHandle.removeDeadWaiters). */
  readonly waiters: string[];
}

export class MemoryStore {
  readonly tree: RecordTree;
  readonly memoryLimit: bigint;
  private readonly did: string;
  private readonly handle: string;
  private readonly clock: () => Date;
  private readonly tids: TidGenerator;
  private readonly lockOptions: LockOptions;
  private readonly fault: FaultHook;
  private readonly writes: Mutex;

  constructor(options: MemoryStoreOptions) {
    this.tree = options.tree;
    this.memoryLimit = options.memoryLimit;
    this.did = options.did;
    this.handle = options.handle;
    this.clock = options.clock ?? (() => new Date());
    this.tids = options.tids ?? new TidGenerator();
    this.lockOptions = options.lock ?? {};
    this.fault = options.fault ?? noFault;
    this.writes = options.writes ?? new Mutex();
  }

  // -------------------------------------------------------------------------
  // Initialisation (spec 2.5 steps 2-3) and recovery (7.5)

  /** Creates the core record (empty text) and the memory folder when missing. Takes no lock: readers run it too. */
  async ensureRecordTree(): Promise<void> {
    await this.ensureCore();
    await this.ensureMemoryDir();
  }

  /** A writer's start: ensureRecordTree, then recovery (under the lock) if a write was interrupted. */
  async ensureLayout(): Promise<RecoveryReport | undefined> {
    await this.ensureRecordTree();
    return this.recoverIfInterrupted();
  }

  /**
   * Recovers under the lock when the memory folder holds a journal or a temp
   * file, or the core folder a first-run temp file; undefined when there was nothing to do.
   */
  async recoverIfInterrupted({ waitMs }: { readonly waitMs?: number } = {}): Promise<RecoveryReport | undefined> {
    await this.ensureMemoryDir({ writer: true });
    if (!needsRecovery(await this.listFolder(0)) && (await listTemps(this.tree.coreDir, CORE_FILE)).length === 0) return undefined;
    return this.withLock(() => this.recoverLocked(), {}, waitMs);
  }

  private async ensureCore(): Promise<void> {
    const { coreDir, coreFile } = this.tree;
    // Anything but an existing entry means creating it; what stands in the
    // way (a file where the folder belongs, no permission) is then reported
    // as the creation or write that failed (spec 5.5).
    if (await fs.lstat(coreFile).then(() => true, () => false)) return;
    try {
      await makeFolders(coreDir);
    } catch (error) {
      throw failedTo('create_failed', coreDir, error);
    }
    const content = coreRecordJson({ did: this.did, handle: this.handle, text: '', createdAt: formatCreatedAt(this.clock()) });
    try {
      await writeNewFileAtomic(coreDir, CORE_FILE, content);
    } catch (error) {
      throw failedTo('write_failed', coreFile, error);
    }
  }

  private async ensureMemoryDir({ writer = false }: { readonly writer?: boolean } = {}): Promise<void> {
    try {
      await makeFolders(this.tree.memoryDir);
    } catch (error) {
      // Spec 2.5: "already exists" is not an error of the first-run step,
      // even when what exists is not a folder. The reading commands then go
      // on (status counts 0 for a folder it cannot list, read-core works) and
      // the listing reports it. A writer needs the folder: for it this is
      // the reference's `Failed to create {folder}` (spec 5.5).
      if (errnoCode(error) === 'EEXIST' && !writer) return;
      throw failedTo('create_failed', this.tree.memoryDir, error);
    }
  }

  /** Runs recovery now, under the lock, whether or not anything looks interrupted. */
  async recover(): Promise<RecoveryReport> {
    return this.withLock(() => this.recoverLocked());
  }

  private async recoverLocked(): Promise<RecoveryReport> {
    const dir = this.tree.memoryDir;
    const problems: string[] = [];
    const journal = await this.readJournal();
    if (journal === 'invalid') {
      // Journals are published by rename, so an unreadable one was never a commit.
      await fs.rm(join(dir, JOURNAL_FILE), { force: true });
      problems.push(`discarded an unreadable ${JOURNAL_FILE}: its compress never committed`);
    } else if (journal !== undefined) {
      problems.push(...(await this.rollForward(journal)));
    }
    // Under the lock every temp file belongs to a writer that died: staged
    // records of an uncommitted compress, or half-written saves.
    const removedTemps: string[] = [];
    for (const name of (await this.listFolder(0)).temps) {
      if (await unlinkTempFile(join(dir, name))) removedTemps.push(name);
    }
    // A first run killed while creating the core left its temp file, which
    // nothing else removes. Readers create the core without the lock, so
    // only one too old to be a live write is removed.
    removedTemps.push(...(await removeStaleTemps(this.tree.coreDir, CORE_FILE, 2 * (this.lockOptions.timeoutMs ?? LOCK_TIMEOUT_MS))));
    if (removedTemps.length > 0 || journal === 'invalid') await fsyncDir(dir);
    return { rolledForward: journal !== undefined && journal !== 'invalid', removedTemps, problems };
  }

  /** Whether `records` hold both names the journal creates and names it deletes (see MemoryReadResult.compressMixed). */
  private async mixesCompressSets(records: readonly MemoryRecord[]): Promise<boolean> {
    const journal = await this.readJournal().catch(() => 'invalid' as const);
    if (journal === undefined) return false; // finished since the listing
    if (journal === 'invalid') return true;
    const created = new Set(journal.create.map((tid) => `${tid}.json`));
    const deleted = new Set(journal.remove);
    const names = records.map((record) => record.name);
    return names.some((name) => created.has(name)) && names.some((name) => deleted.has(name));
  }

  /** undefined: no journal; 'invalid': present but not a committed journal. */
  private async readJournal(): Promise<Journal | 'invalid' | undefined> {
    const path = join(this.tree.memoryDir, JOURNAL_FILE);
    let text: string;
    try {
      // Never blocks: a FIFO in the journal's place fails the write instead of hanging it.
      text = await readRegularText(path, MAX_JOURNAL_BYTES);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw failedTo('read_failed', path, error);
    }
    let value: JsonValue;
    try {
      value = parseJson(text, { maxBytes: MAX_JOURNAL_BYTES, maxDepth: 4 });
    } catch {
      return 'invalid';
    }
    if (!isJsonObject(value)) return 'invalid';
    const { version, create, delete: remove, deleteRaw } = value;
    if (version !== 1n) {
      throw new AigptError('read_failed', `Failed to read ${path}: unsupported journal version; refusing to touch the folder`);
    }
    const isList = (list: JsonValue | undefined, ok: (name: string) => boolean): list is string[] =>
      Array.isArray(list) && list.every((item) => typeof item === 'string' && ok(item));
    // Names are checked so a damaged journal can never reach outside the folder.
    // A backslash separates folders only on Windows; elsewhere it is part of a name compress deletes.
    const isName = (name: string): boolean => isRecordFileName(name) && !/[/\0]/.test(name) && !(sep === '\\' && name.includes('\\'));
    if (!isList(create, isValidTid) || !isList(remove, isName)) return 'invalid';
    let removeRaw: Buffer[] = [];
    if (deleteRaw !== undefined) {
      if (!isList(deleteRaw, (hex) => /^(?:[0-9a-f]{2})+$/.test(hex))) return 'invalid';
      removeRaw = deleteRaw.map((hex) => Buffer.from(hex, 'hex'));
      if (!removeRaw.every((raw) => isName(raw.toString('utf8')))) return 'invalid';
    }
    return { create, remove, removeRaw };
  }

  /** Completes a committed compress: publish every staged record, delete every old one, drop the journal. */
  private async rollForward(journal: Journal): Promise<string[]> {
    const dir = this.tree.memoryDir;
    const problems: string[] = [];
    // FILE_BATCH renames (then unlinks) at a time; every rename is done
    // before the first unlink, and fault points come in list order.
    for (let start = 0; start < journal.create.length; start += FILE_BATCH) {
      const batch = journal.create.slice(start, start + FILE_BATCH);
      const outcomes = await Promise.allSettled(batch.map((tid) => this.publishStaged(tid)));
      for (const [index, outcome] of outcomes.entries()) {
        if (outcome.status === 'rejected') throw failedTo('write_failed', join(dir, `${batch[index]!}.json`), outcome.reason);
        if (outcome.value !== undefined) problems.push(outcome.value);
        this.fault('compress:published');
      }
    }
    const remove = [...journal.remove, ...journal.removeRaw];
    for (let start = 0; start < remove.length; start += FILE_BATCH) {
      const batch = remove.slice(start, start + FILE_BATCH);
      const outcomes = await Promise.allSettled(batch.map((name) => unlinkIfPresent(typeof name === 'string' ? join(dir, name) : this.rawPath(name))));
      for (const [index, outcome] of outcomes.entries()) {
        if (outcome.status === 'rejected') throw failedTo('write_failed', join(dir, batch[index]!.toString()), outcome.reason);
        this.fault('compress:removed-old');
      }
    }
    await fsyncDir(dir);
    this.fault('compress:switched');
    await fs.rm(join(dir, JOURNAL_FILE), { force: true });
    this.fault('compress:journal-removed');
    await fsyncDir(dir);
    return problems;
  }

  /**
   * Removes the staged records of a compress that failed before its commit
   * point, so that a full disk is not left fuller; what cannot be removed
   * now, the next write's recovery removes.
   */
  private async removeStaged(tids: readonly string[]): Promise<void> {
    const dir = this.tree.memoryDir;
    await Promise.allSettled(tids.map((tid) => fs.rm(join(dir, `.${tid}${STAGED_SUFFIX}`), { force: true })));
  }

  /** Renames one staged record to its name; a problem to report when it is missing. */
  private async publishStaged(tid: string): Promise<string | undefined> {
    const dir = this.tree.memoryDir;
    try {
      await fs.rename(join(dir, `.${tid}${STAGED_SUFFIX}`), join(dir, `${tid}.json`));
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw error;
      // Already published by an earlier, interrupted roll-forward; anything else is damage we report.
      if (!(await this.entryExists(`${tid}.json`))) return `staged record ${tid} is missing; it cannot be restored`;
    }
    return undefined;
  }

  private async entryExists(name: string): Promise<boolean> {
    try {
      await fs.lstat(join(this.tree.memoryDir, name));
      return true;
    } catch {
      return false;
    }
  }

  // -------------------------------------------------------------------------
  // Reading (no lock: readers see the folder as it is)

  async readCore(): Promise<CoreReadResult> {
    const path = this.tree.coreFile;
    const outcome = await readRecordFile(path);
    if (!outcome.ok) {
      throw new AigptError(outcome.stage === 'read' ? 'read_failed' : 'parse_failed', recordFileFailure(outcome, path));
    }
    return { path, value: outcome.value, text: outcome.text };
  }

  /**
   * One streamed pass over the memory folder, keeping the newest `keep`
   * selected entries (in a bounded heap) and what the writers need of the
   * rest; empty when the folder does not exist. fs.readdir held every name of
   * a folder at once: a million entries made `aigpt server` grow to 1.4 GB
   * before the 10 000-file bound (spec 8) skipped any of them.
   */
  private async listFolder(keep: number): Promise<FolderListing> {
    const heap = new EntryHeap(keep);
    let selected = 0;
    let tidFloor = -1;
    let journal = false;
    const temps: string[] = [];
    const waiters: string[] = [];
    try {
      // Raw names: Node decodes a name that is not UTF-8 with U+FFFD, which names no file.
      // (@types/node lists only text encodings for opendir; Node gives Buffer names for 'buffer'.)
      const dir = await fs.opendir(this.tree.memoryDir, { encoding: 'buffer' as BufferEncoding, bufferSize: 256 });
      for await (const dirent of dir) {
        const raw = dirent.name as unknown as Buffer;
        const name = raw.toString('utf8');
        if (name === JOURNAL_FILE) journal = true;
        else if (isTempName(name)) temps.push(name);
        else if (isPendingLockName(name)) waiters.push(name);
        // The extension test on the decoded name equals Rust's on the bytes: dots and "json" are ASCII.
        if (!isRecordFileName(name)) continue;
        selected++;
        tidFloor = Math.max(tidFloor, followableTidMicros(name));
        heap.offer({ name, raw: isUtf8(raw) ? undefined : raw, isDirectory: dirent.isDirectory() });
      }
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return { entries: [], selected: 0, tidFloor: -1, journal: false, temps: [], waiters: [] };
      throw failedTo('read_failed', this.tree.memoryDir, error);
    }
    return { entries: heap.sorted(), selected, tidFloor, journal, temps, waiters };
  }

  /** The names the reference would read as memories, in its order. */
  async listMemoryNames(): Promise<string[]> {
    return (await this.listFolder(Infinity)).entries.map((entry) => entry.name);
  }

  /** The path of an entry by its raw name bytes. */
  private rawPath(raw: Buffer): Buffer {
    return Buffer.concat([Buffer.from(join(this.tree.memoryDir, '/')), raw]);
  }

  private entryPath(entry: RecordEntry): string | Buffer {
    return entry.raw === undefined ? join(this.tree.memoryDir, entry.name) : this.rawPath(entry.raw);
  }

  async countMemories(): Promise<number> {
    return (await this.listFolder(0)).selected;
  }

  /**
   * Reads the newest memory files, at most MAX_RECORDS_READ of them, and only
   * as many (newest first) as fit in `maxBytes` bytes of record files (or of
   * their re-serialised form where it is larger); the older ones are skipped
   * unread and counted in `notRead`. A whole dump goes through scanMemories,
   * which keeps nothing.
   */
  async readMemories(options: { readonly maxBytes: number }): Promise<MemoryReadResult> {
    // A file listed but gone when read was removed meanwhile: only compress
    // removes records, so the listing caught the old set being replaced
    // (spec 7.4 step 5) and this read holds part of it. Read again, a few
    // times, so that a reader racing a compress gets a whole set instead of
    // a silent fraction of the old one (an agent compressing from that would
    // drop the rest). A compress of thousands of files can outlast the retries;
    // the last read is then answered as it is.
    for (let attempt = 1; ; attempt++) {
      const { result, gone } = await this.readMemoriesOnce(options);
      // A listing taken after the new set was published but before the old
      // one was unlinked loses no file yet holds both sets: read again too.
      if ((gone === 0 && !result.compressMixed) || attempt === READ_ATTEMPTS) return result;
      await delay(READ_RETRY_PAUSE_MS * 4 ** (attempt - 1));
    }
  }

  private async readMemoriesOnce(options: { readonly maxBytes: number }): Promise<{ result: MemoryReadResult; gone: number }> {
    const listing = await this.listFolder(MAX_RECORDS_READ);
    this.fault('read:listed');
    const read = (entry: RecordEntry): Promise<RecordFileOutcome> => readRecordFile(this.entryPath(entry), join(this.tree.memoryDir, entry.name));
    const overflow = listing.selected - listing.entries.length;
    // Newest first, a batch at a time, so no more than the budget (plus one
    // batch) is ever held; an unreadable file costs nothing, as it adds no record.
    const kept: RecordFileOutcome[] = [];
    let used = 0;
    let end = listing.entries.length;
    const sizes = new ReadBatchSize();
    reading: while (end > 0) {
      const start = Math.max(0, end - sizes.next);
      const batch = await mapLimited(listing.entries.slice(start, end), MAX_READ_BATCH, read);
      sizes.after(batch);
      for (let index = batch.length - 1; index >= 0; index--) {
        let outcome = batch[index]!;
        let size = outcome.ok && outcome.text !== undefined ? answerBytes(outcome) : 0;
        if (size > options.maxBytes) {
          // A record that alone outgrows the budget (a 1 MiB file of numbers
          // re-serialised) is skipped by itself instead of ending the read
          // there and hiding every older memory.
          const fileTooLarge = outcome.ok && outcome.bytes > options.maxBytes;
          outcome = { ok: false, stage: 'read', cause: `larger than the ${options.maxBytes}-byte read bound${fileTooLarge ? '' : ' when re-serialised'}` };
          size = 0;
        }
        if (used + size > options.maxBytes) {
          end = start + index + 1;
          break reading;
        }
        used += size;
        kept.push(outcome);
      }
      end = start;
    }
    const overBudget = end;
    const toRead = listing.entries.slice(end);
    const outcomes = kept.reverse();
    const skipped: SkippedFile[] = [];
    const records: MemoryRecord[] = [];
    let gone = 0;
    outcomes.forEach((outcome, index) => {
      if (!outcome.ok && outcome.gone === true) {
        gone++;
        return;
      }
      const item = this.scanItem(toRead[index]!, outcome);
      if ('record' in item) records.push(item.record);
      else skipped.push(item.skipped);
    });
    const compressMixed = listing.journal && (await this.mixesCompressSets(records));
    return { result: { records, skipped, selected: listing.selected - gone, notRead: overflow + overBudget, compressPending: listing.journal, compressMixed }, gone };
  }

  /**
   * A read of the folder that keeps nothing: each memory file, oldest first,
   * is handed to `visit` one at a time (it may wait, for stdout say) and not
   * kept. readMemories holds what it answers, up to its byte bound; a whole
   * dump held at once would be 10 GB for 10 000 files of up to 1 MiB (`aigpt`
   * ran out of heap on a folder within the bounds when it did that).
   * `onListed` is called before the first visit. With `readAll` (the CLI's
   * `read-memory`, the owner's full dump, which spec 8's file-count bound on
   * the `read_memory` tool does not cover) every file is read; without it
   * (the status count) those beyond the bound are only counted.
   */
  async scanMemories(
    visit: (item: ScanItem) => void | Promise<void>,
    onListed: ((listing: MemoryListing) => void) | undefined,
    { readAll }: { readonly readAll: boolean },
  ): Promise<MemoryListing> {
    if (!readAll) return this.scanOnce(visit, onListed, false, undefined);
    // Files listed but gone when read were removed by a compress replacing
    // the set (as in readMemories): the folder is listed again and the files
    // not yet visited are handed over, so the dump ends with the new set
    // instead of a fraction of the old one, or nothing. Only names are kept.
    const visited = new Set<string>();
    for (let attempt = 1; ; attempt++) {
      const scan = await this.scanOnce(visit, attempt === 1 ? onListed : undefined, true, visited);
      if (scan.gone === 0 || attempt === READ_ATTEMPTS) return scan;
      await delay(READ_RETRY_PAUSE_MS * 4 ** (attempt - 1));
    }
  }

  /** One listing and read; `visited` (names already handed over) is skipped and grown. */
  private async scanOnce(
    visit: (item: ScanItem) => void | Promise<void>,
    onListed: ((listing: MemoryListing) => void) | undefined,
    readAll: boolean,
    visited: Set<string> | undefined,
  ): Promise<MemoryListing> {
    const folder = await this.listFolder(readAll ? Infinity : MAX_RECORDS_READ);
    const names = visited === undefined ? folder.entries : folder.entries.filter((entry) => !visited.has(entry.name));
    const listing = { selected: folder.selected, notRead: folder.selected - folder.entries.length, compressPending: folder.journal, gone: 0 };
    this.fault('scan:listed');
    onListed?.(listing);
    let gone = 0;
    const sizes = new ReadBatchSize();
    for (let start = 0; start < names.length; ) {
      const batch = names.slice(start, start + sizes.next);
      start += batch.length;
      const outcomes = await mapLimited(batch, MAX_READ_BATCH, (entry) => readRecordFile(this.entryPath(entry), join(this.tree.memoryDir, entry.name)));
      sizes.after(outcomes);
      for (const [index, outcome] of outcomes.entries()) {
        // Removed since the listing (a concurrent compress): nothing to show.
        if (!outcome.ok && outcome.gone === true) {
          gone++;
          continue;
        }
        visited?.add(batch[index]!.name);
        await visit(this.scanItem(batch[index]!, outcome));
      }
    }
    // The count of spec 4.2 is what the listing selected.
    return { ...listing, gone };
  }

  private scanItem({ name }: RecordEntry, outcome: RecordFileOutcome): ScanItem {
    const path = join(this.tree.memoryDir, name);
    if (!outcome.ok) return { skipped: { path, reason: recordFileFailure(outcome) } };
    if (outcome.text === undefined) return { skipped: { path, reason: outcome.shapeProblem ?? 'not a record' } };
    return { record: { name, path, text: outcome.text, value: outcome.value } };
  }

  // -------------------------------------------------------------------------
  // Writing (under the collection lock)

  /**
   * Adds one memory record; never refused because of the limit (spec 6).
   * Returns the count after the write. Recovers first (spec 7.5), as
   * recoverIfInterrupted would, so a writer needs no pass of its own before
   * it: `recovered` hears what recovery did (undefined: nothing to do) once
   * the lock is held, before the write.
   *
   * One pass over the folder under the lock gives the recovery check, the
   * waiters' files, the TID floor and the count; it is read again only after
   * a recovery or a name taken outside the lock. A folder of a million files
   * takes seconds a pass, and five passes kept a second writer waiting past
   * its 10 s lock timeout.
   */
  async saveMemory(
    text: string,
    hooks: {
      readonly recovered?: (report: RecoveryReport | undefined) => void;
      /**
       * Called under the lock once the record is in place: a signal that
       * arrived during the write ends the process when the lock is released,
       * so whatever must be said of a finished save is said here.
       */
      readonly written?: (saved: { readonly tid: string; readonly count: number }) => void;
    } = {},
  ): Promise<{ tid: string; count: number }> {
    const { recovered, written } = hooks;
    const problem = checkMemoryText(text);
    if (problem !== undefined) throw new AigptError('invalid_argument', problem);
    return this.withLock(async (lock) => {
      let listing = await this.listFolder(0);
      await lock.removeDeadWaiters(listing.waiters);
      let report: RecoveryReport | undefined;
      if (needsRecovery(listing) || (await listTemps(this.tree.coreDir, CORE_FILE)).length > 0) {
        report = await this.recoverLocked();
        listing = await this.listFolder(0);
      }
      recovered?.(report);
      const dir = this.tree.memoryDir;
      let floor = listing.tidFloor;
      for (let attempt = 0; ; attempt++) {
        const tid = this.tids.next(floor);
        const name = `${tid}.json`;
        const content = memoryRecordJson({ did: this.did, tid, text, createdAt: formatCreatedAt(this.clock()) });
        let outcome;
        try {
          outcome = await writeNewFileAtomic(dir, name, content, this.fault);
        } catch (error) {
          if (error instanceof AigptError) throw error;
          if (isInjectedFault(error)) throw error;
          throw failedTo('write_failed', join(dir, name), error);
        }
        // Under the lock only the reference, which ignores it (7.3), changes the
        // set; the listing is the set before this write unless a name was taken.
        if (outcome === 'created') {
          const saved = { tid, count: attempt === 0 ? listing.selected + 1 : await this.countMemories() };
          written?.(saved);
          return saved;
        }
        // Someone outside the lock (e.g. the reference) took the name: move past it.
        floor = tidMicros(tid);
        if (attempt > 1000) throw new AigptError('write_failed', `Failed to write ${join(dir, name)}: no free record key`);
      }
    }, { sweepWaiters: false });
  }

  /**
   * Replaces every memory with `items` (spec 7.4). Before the journal is
   * durable nothing visible has changed; after it, recovery finishes the job.
   */
  async compress(items: readonly string[]): Promise<{ count: number }> {
    const problem = checkCompressItems(items, this.memoryLimit);
    if (problem !== undefined) {
      throw new AigptError(BigInt(items.length) > this.memoryLimit ? 'over_limit' : 'invalid_argument', problem);
    }
    return this.withLock(async () => {
      await this.recoverLocked();
      const dir = this.tree.memoryDir;
      const listing = await this.listFolder(Infinity);
      // Folders named *.json are not records and cannot be unlinked; they stay.
      const old = listing.entries.filter((entry) => !entry.isDirectory);
      const oldNames = old.filter((entry) => entry.raw === undefined).map((entry) => entry.name);
      const oldRaw = old.flatMap((entry) => (entry.raw === undefined ? [] : [entry.raw]));
      // `deleteRaw` only when some old name is not UTF-8, so the journal is otherwise the spec's.
      const raw = oldRaw.length === 0 ? '' : `,"deleteRaw":${JSON.stringify(oldRaw.map((name) => name.toString('hex')))}`;
      const removal = `"delete":${JSON.stringify(oldNames)}${raw}}`;
      const journalText = (create: readonly string[]): string => `{"version":1,"create":${JSON.stringify(create)},${removal}`;
      // The journal names every old record, which no bound limits, and
      // recovery reads it back within MAX_JOURNAL_BYTES: a journal beyond
      // that, left by a crash, would stop every later write. Refused before
      // anything is written; every TID has 13 ASCII characters, so the size is known now.
      const journalBytes = Buffer.byteLength(journalText(items.map(() => '2222222222222')), 'utf8');
      if (journalBytes > MAX_JOURNAL_BYTES) {
        throw new AigptError(
          'write_failed',
          `Failed to write ${join(dir, JOURNAL_FILE)}: the names of the ${old.length} memory files to replace need ${journalBytes} bytes of journal, more than the ${MAX_JOURNAL_BYTES} a recovery reads back; nothing was changed`,
        );
      }
      let floor = listing.tidFloor;
      // Publishing renames over a name, and the old names are deleted after it: a new TID
      // must name no old record. Above the floor none does, save where the generator ran out
      // of TID space and went back to the clock (a record at the very end, see TidGenerator.next).
      const taken = new Set(oldNames);
      const created: string[] = [];
      // Staged FILE_BATCH at a time (the records of a batch are rendered only then).
      for (let start = 0; start < items.length; start += FILE_BATCH) {
        const tids = items.slice(start, start + FILE_BATCH).map(() => {
          let tid;
          do {
            tid = this.tids.next(floor);
            floor = tidMicros(tid);
          } while (taken.has(`${tid}.json`));
          return tid;
        });
        const files = tids.map((tid, index) => ({
          path: join(dir, `.${tid}${STAGED_SUFFIX}`),
          content: memoryRecordJson({ did: this.did, tid, text: items[start + index]!, createdAt: formatCreatedAt(this.clock()) }),
        }));
        try {
          await writeExclusiveSyncedBatch(files, this.fault, 'compress:stage');
        } catch (error) {
          if (isInjectedFault(error)) throw error;
          // A full disk: the batch removed its own files, the earlier batches' go too.
          await this.removeStaged(created);
          if (error instanceof BatchFileError) throw failedTo('write_failed', join(dir, `${tids[error.index]!}.json`), error.cause);
          throw error;
        }
        created.push(...tids);
      }
      // Every staged record is durable before the journal names it.
      try {
        await fsyncDir(dir);
      } catch (error) {
        await this.removeStaged(created);
        throw error;
      }
      this.fault('compress:staged');
      // The commit point: once this rename is durable the new set wins.
      try {
        await replaceFileAtomic(dir, JOURNAL_FILE, journalText(created), this.fault);
      } catch (error) {
        if (isInjectedFault(error)) throw error;
        // Not committed unless the journal got its name (its folder's fsync
        // failed after the rename): then recovery needs the staged records.
        if (!(await this.entryExists(JOURNAL_FILE))) await this.removeStaged(created);
        throw failedTo('write_failed', join(dir, JOURNAL_FILE), error);
      }
      const problems = await this.rollForward({ create: created, remove: oldNames, removeRaw: oldRaw });
      if (problems.length > 0) throw new AigptError('write_failed', `Failed to write ${dir}: ${problems.join('; ')}`);
      return { count: items.length };
    });
  }

  /**
   * Runs `work` under the folder lock. Calls enter this process's queue
   * synchronously, so writes take effect (and get TIDs) in call order.
   * With `sweepWaiters: false` the work hands the lock the waiters' files its
   * own listing found (see acquireCollectionLock).
   */
  private withLock<T>(work: (lock: LockHandle) => Promise<T>, lockUse: { readonly sweepWaiters?: boolean } = {}, waitMs?: number): Promise<T> {
    const run = async (): Promise<T> => {
      await this.ensureMemoryDir({ writer: true });
      try {
        const lock = await acquireCollectionLock(this.tree.memoryDir, waitMs === undefined ? this.lockOptions : { ...this.lockOptions, waitMs }, lockUse);
        try {
          return await work(lock);
        } finally {
          await lock.release();
        }
      } catch (error) {
        // Every failure of a write path names the folder, in the reference's words.
        if (error instanceof AigptError || isInjectedFault(error)) throw error;
        throw failedTo('write_failed', this.tree.memoryDir, error);
      }
    };
    return this.writes.run(run);
  }
}

/**
 * Spec 7.5 unlinks temp *files*. A folder that merely has a temp name was not
 * made by a writer: it stays (false), instead of failing every write with
 * the file system's text. True when the file was removed.
 */
async function unlinkTempFile(path: string): Promise<boolean> {
  try {
    await fs.unlink(path);
    return true;
  } catch (error) {
    const code = errnoCode(error);
    // unlink(2) of a folder: EISDIR on Linux, EPERM on macOS. On Linux EPERM
    // also means a file that cannot be removed (immutable): that stays an error.
    if (code === 'ENOENT' || code === 'EISDIR') return false;
    if (code === 'EPERM' && (await isFolder(path))) return false;
    throw error;
  }
}

async function isFolder(path: string): Promise<boolean> {
  try {
    return (await fs.lstat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** Unlinks a file; one already gone is no error. */
async function unlinkIfPresent(path: string | Buffer): Promise<void> {
  try {
    await fs.unlink(path);
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
  }
}

/** A journal or a temp file: a write was interrupted, or is running in another process. */
function needsRecovery(listing: FolderListing): boolean {
  return listing.journal || listing.temps.length > 0;
}

/** Errors thrown by a test's fault hook pass through untouched (see FaultHook). */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

function isInjectedFault(error: unknown): boolean {
  return error instanceof InjectedFault;
}

/** The timestamp of a record name's TID, or -1 when it is no TID a generator can follow. */
function followableTidMicros(name: string): number {
  const stem = recordStem(name);
  // Only TIDs a generator can make and follow order new ones: a stem with
  // bit 63 set (first character c..j), or at the last timestamp
  // (`bzzzzzzzzzzzz`), has no successor and would block every save.
  if (!isGeneratedTid(stem)) return -1;
  const micros = tidMicros(stem);
  return micros < MAX_TID_MICROS ? micros : -1;
}

/** The reference's order of entry names: bytewise, which for UTF-8 names is code point order. */
function compareEntries(a: RecordEntry, b: RecordEntry): number {
  if (a.raw === undefined && b.raw === undefined) return compareFileNames(a.name, b.name);
  return Buffer.compare(a.raw ?? Buffer.from(a.name), b.raw ?? Buffer.from(b.name));
}

/**
 * The greatest `capacity` entries offered, in a min-heap (the oldest kept at
 * the root), so a listing of any size holds no more than that many.
 */
class EntryHeap {
  private readonly items: RecordEntry[] = [];

  constructor(private readonly capacity: number) {}

  offer(entry: RecordEntry): void {
    const items = this.items;
    if (items.length < this.capacity) {
      items.push(entry);
      // Until it is full it is a plain list; once full, sorted, which is a valid heap.
      if (items.length === this.capacity) items.sort(compareEntries);
      return;
    }
    if (items.length === 0 || compareEntries(entry, items[0]!) <= 0) return;
    // Replace the root and sift down.
    items[0] = entry;
    let parent = 0;
    for (;;) {
      const left = 2 * parent + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && compareEntries(items[right]!, items[left]!) < 0 ? right : left;
      if (compareEntries(items[parent]!, items[child]!) <= 0) break;
      [items[parent], items[child]] = [items[child]!, items[parent]!];
      parent = child;
    }
  }

  /** The kept entries, oldest first; the heap is spent. */
  sorted(): RecordEntry[] {
    return this.items.sort(compareEntries);
  }
}

type RecordFileOutcome =
  | { readonly ok: true; readonly bytes: number; readonly value: JsonValue; readonly text: string | undefined; readonly shapeProblem: string | undefined }
  | { readonly ok: false; readonly stage: 'read' | 'parse'; readonly cause: string; readonly gone?: true };

/** The reference's `Failed to read|parse {path}` with the cause appended (the path left out where the caller names it already). */
function recordFileFailure(outcome: { readonly stage: 'read' | 'parse'; readonly cause: string }, path?: string): string {
  return `Failed to ${outcome.stage}${path === undefined ? '' : ` ${path}`}: ${outcome.cause}`;
}

/**
 * Reads one record file with the product's bounds; a failure says at which
 * stage and why (recordFileFailure words it).
 */
async function readRecordFile(file: string | Buffer, path: string = file.toString()): Promise<RecordFileOutcome> {
  const tooLarge = `larger than ${MAX_RECORD_FILE_BYTES} bytes`;
  let bytes: Buffer;
  let handle: fs.FileHandle | undefined;
  try {
    // O_NONBLOCK so a FIFO named *.json cannot hang the reader.
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const stat = await handle.stat();
    if (!stat.isFile()) return { ok: false, stage: 'read', cause: 'not a regular file' };
    if (stat.size > MAX_RECORD_FILE_BYTES) return { ok: false, stage: 'read', cause: tooLarge };
    // Not readFile: it reads to the end whatever the bound, and a pseudo-file
    // says size 0 (a link to /proc/self/pagemap read 2 GiB before failing).
    bytes = await readToEndBounded(handle, stat.size, MAX_RECORD_FILE_BYTES, path);
  } catch (error) {
    if (error instanceof FileTooLargeError) return { ok: false, stage: 'read', cause: tooLarge };
    // Listed but removed before it was opened (a concurrent compress deleting
    // the old set): gone, not unreadable. A dangling link is still reported.
    const gone = errnoCode(error) === 'ENOENT' && !(await exists(file).catch(() => true)) ? ({ gone: true } as const) : {};
    return { ok: false, stage: 'read', cause: describeCause(error), ...gone };
  } finally {
    await handle?.close();
  }
  let text: string;
  try {
    // ignoreBOM keeps a leading BOM in the text so the parser refuses it, as serde_json does.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return { ok: false, stage: 'read', cause: 'stream did not contain valid UTF-8' };
  }
  const parsed = parseRecordText(text);
  if (!parsed.ok) return { ok: false, stage: 'parse', cause: parsed.reason };
  return { ok: true, bytes: bytes.length, value: parsed.value, text: parsed.text, shapeProblem: parsed.shapeProblem };
}

/**
 * What a record costs against a read budget: what it adds to the answer
 * line, or its file when that is larger (so that no more than the budget is
 * held). In the line the record is re-serialised, where a number can grow
 * almost fourfold (`1e15` is written `1000000000000000.0`), and that text is
 * a JSON string inside the JSON-RPC answer, where each quote and backslash
 * takes one more byte (the rendering escapes every control character, and
 * JSON.stringify leaves other characters as they are).
 */
function answerBytes(outcome: { readonly bytes: number; readonly value: JsonValue }): number {
  const rendered = renderCompact(outcome.value);
  let escapes = 0;
  for (let index = rendered.indexOf('"'); index !== -1; index = rendered.indexOf('"', index + 1)) escapes++;
  for (let index = rendered.indexOf('\\'); index !== -1; index = rendered.indexOf('\\', index + 1)) escapes++;
  return Math.max(outcome.bytes, Buffer.byteLength(rendered, 'utf8') + escapes);
}

async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
