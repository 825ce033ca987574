// Working trees on disk (spec 7.7): snapshots of a folder as a file map, the
// root `.aipignore`, and materialising a state's files into a folder. Used by
// the CLI and the runner; knows nothing about HEAD or the object store.
import { lstat, mkdir, open, rename, rm, rmdir, writeFile, chmod } from 'node:fs/promises';
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { artifactId, maxArtifactContent } from '../core/codec.js';
import { failure, success, type Outcome } from '../core/errors.js';
import { NO_IGNORE_RULES, isIgnored, parseIgnoreRules, type IgnoreRules } from '../core/ignore-rules.js';
import type { FileEntry, FileMap, Id } from '../core/objects.js';
import { compareUtf8 } from '../core/cbor-profile.js';
import { PATH_PROBLEM_TEXT, pathProblem } from '../core/value-rules.js';
import { shownPath } from '../core/quote.js';
import { FileTooLargeError, readToEndBounded } from '../../common/regular-file.js';
import { errorCode } from '../../common/errors.js';
import { makeFolders } from '../../common/make-folders.js';

export interface SnapshotOptions {
  readonly rules: IgnoreRules;
  readonly maxObjectBytes: number;
  /** Receives each regular file's content, e.g. to store it as an artifact. */
  readonly onContent?: (id: Id, content: Uint8Array) => Promise<void>;
  /**
   * Leave out an entry that disappears between its folder's listing and its
   * reading (ENOENT, or ENOTDIR when a folder on its path was replaced), as if
   * the folder had been listed a moment later, instead of failing with `io`.
   * The working tree's walk does (an editor's swap file); `aip run`'s
   * inspection does not (D51).
   */
  readonly skipVanished?: boolean;
  /**
   * The paths a state holds: a file at any other path ends the walk at once
   * with `snapshot.invalid`, the tree being no longer that state. `aip run`'s
   * inspection only asks whether the tree still is its state, and a command
   * that made a million files would otherwise have each of them read and kept.
   */
  readonly statePaths?: { has(path: string): boolean };
  /**
   * Once aborted, the walk stops before the next entry and returns what it
   * has read so far: the caller, which owns the signal, must treat that map
   * as partial (`aip run` cancelled while checking its folder).
   */
  readonly signal?: AbortSignal;
}

const nameDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function ioFailure<T>(what: string, error: unknown): Outcome<T> {
  return failure('io', `${what}: ${errorCode(error) ?? String(error)}`);
}

/** Gone between listing and reading: the entry, or a folder on its path (removed, or replaced by a file). */
function vanished(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** What was found at a path the walk saw as a regular file, once opened. */
type Opened = { readonly kind: 'file'; readonly content: Uint8Array; readonly mode: number } | { readonly kind: 'folder' };

/**
 * Opens and reads the file at `path`, checking what was opened: the entry may
 * have been replaced since it was inspected. O_NONBLOCK, so that a FIFO put
 * in its place does not block the walk, and O_NOFOLLOW, so that a link is
 * refused rather than followed.
 *
 * The walk's system calls are synchronous: a promise-based call costs about
 * ten times its system call in CPU (a round trip through libuv's thread
 * pool), and a walk makes five per file (docs/performance.md, `aip status`).
 */
function readWhole(path: string, rel: string, maxContent: number): Outcome<Opened> {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) === 'ELOOP') return notRegular(rel, 'a symbolic link');
    if (errorCode(error) === 'ENXIO') return notRegular(rel, 'not a regular file'); // a socket
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (info.isDirectory()) return success({ kind: 'folder' });
    if (!info.isFile()) return notRegular(rel, 'not a regular file');
    if (info.size > maxContent) return failure('snapshot.invalid', `${rel}: ${info.size} bytes do not fit in an artifact (max_object_bytes)`);
    return success({ kind: 'file', content: readUpTo(fd, info.size), mode: info.mode });
  } finally {
    closeSync(fd);
  }
}

/** The first `size` bytes of an open file, or fewer if it shrank meanwhile. */
function readUpTo(fd: number, size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let filled = 0;
  while (filled < size) {
    const bytesRead = readSync(fd, bytes, filled, size - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled === size ? bytes : bytes.subarray(0, filled);
}

/**
 * Entries the walk handles between turns of the event loop: its calls are
 * synchronous, and a signal (an abort of `aip run`) is seen only between them.
 */
const ENTRIES_PER_TURN = 256;

function notRegular<T>(rel: string, kind: string): Outcome<T> {
  return failure('snapshot.invalid', `${rel} is ${kind}; a state holds regular files only (ignore it in .aipignore)`);
}

/**
 * Walks `root` and returns its file map. `snapshot.invalid` means the tree
 * cannot be a state (a link, a device, a bad name or path, a file too large),
 * also when a file was replaced by one since it was listed; `io` means
 * something could not be read (see `skipVanished` for entries that went).
 */
export async function snapshotTree(root: string, options: SnapshotOptions): Promise<Outcome<Map<string, FileEntry>>> {
  const files = new Map<string, FileEntry>();
  const maxContent = maxArtifactContent(options.maxObjectBytes);
  const pending: string[] = [''];
  let sinceTurn = 0;
  while (pending.length > 0) {
    const relDir = pending.pop() as string;
    const absDir = relDir === '' ? root : join(root, relDir);
    let names: Buffer[];
    try {
      names = readdirSync(absDir, { encoding: 'buffer' });
    } catch (error) {
      if (relDir !== '' && options.skipVanished === true && vanished(error)) continue;
      return ioFailure(`cannot read folder ${relDir === '' ? '.' : relDir}`, error);
    }
    for (const raw of names) {
      if (++sinceTurn >= ENTRIES_PER_TURN) {
        sinceTurn = 0;
        await nextTurn();
      }
      if (options.signal?.aborted === true) return success(files);
      let name: string;
      try {
        name = nameDecoder.decode(raw);
      } catch {
        return failure('snapshot.invalid', `folder ${relDir === '' ? '.' : relDir} holds a name that is not valid UTF-8`);
      }
      if (relDir === '' && name === '.aip') continue;
      const rel = relDir === '' ? name : `${relDir}/${name}`;
      let info;
      try {
        info = lstatSync(join(root, rel));
      } catch (error) {
        if (options.skipVanished === true && vanished(error)) continue;
        return ioFailure(`cannot inspect ${rel}`, error);
      }
      if (info.isDirectory()) {
        if (!isIgnored(options.rules, rel, true)) pending.push(rel);
        continue;
      }
      if (isIgnored(options.rules, rel, false)) continue;
      if (!info.isFile()) return notRegular(rel, info.isSymbolicLink() ? 'a symbolic link' : 'not a regular file');
      const problem = pathProblem(rel);
      if (problem) return failure('snapshot.invalid', `path ${JSON.stringify(rel)} ${PATH_PROBLEM_TEXT[problem]}`);
      if (options.statePaths?.has(rel) === false) return failure('snapshot.invalid', `${rel} is not in the state`);
      let opened: Outcome<Opened>;
      try {
        opened = readWhole(join(root, rel), rel, maxContent);
      } catch (error) {
        if (options.skipVanished === true && vanished(error)) continue;
        return ioFailure(`cannot read ${rel}`, error);
      }
      if (!opened.ok) return opened;
      if (opened.value.kind === 'folder') {
        // Replaced by a folder since the lstat: walked as the folder it now is.
        if (!isIgnored(options.rules, rel, true)) pending.push(rel);
        continue;
      }
      const id = artifactId(opened.value.content);
      await options.onContent?.(id, opened.value.content);
      files.set(rel, { artifact: id, executable: (opened.value.mode & 0o100) !== 0 });
    }
  }
  return success(files);
}

/**
 * The root `.aipignore` of a working tree (none when absent). Read only up to
 * what an artifact can hold (`maxObjectBytes`), which it must fit in to be
 * recorded: a larger one is refused before it is read (D50).
 */
export async function readTreeIgnoreRules(root: string, maxObjectBytes: number): Promise<Outcome<IgnoreRules>> {
  const path = join(root, '.aipignore');
  const maxContent = maxArtifactContent(maxObjectBytes);
  try {
    const info = await lstat(path);
    if (!info.isFile()) return success(NO_IGNORE_RULES);
    // O_NONBLOCK: a FIFO put in its place since the lstat must not block the walk.
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    let text: string;
    try {
      const { size } = await handle.stat();
      if (size > maxContent) return failure('snapshot.invalid', `.aipignore: ${size} bytes do not fit in an artifact (max_object_bytes)`);
      // Decoded as a state's own .aipignore is when it is run (strictly, a BOM
      // dropped): a file `aip run` would refuse must not be recorded in a state.
      text = new TextDecoder('utf-8', { fatal: true }).decode(await readToEndBounded(handle, size, maxContent, path));
    } catch (error) {
      if (error instanceof TypeError) return failure('snapshot.invalid', '.aipignore is not valid UTF-8');
      if (error instanceof FileTooLargeError) return failure('snapshot.invalid', `.aipignore: more than ${maxContent} bytes do not fit in an artifact (max_object_bytes)`);
      throw error;
    } finally {
      await handle.close();
    }
    return parseIgnoreRules(text);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return success(NO_IGNORE_RULES);
    return ioFailure('cannot read .aipignore', error);
  }
}

/**
 * Writes every file of `files` under `dir` (which must exist) with mode 0755
 * or 0644: exactly, whatever the umask, for the runner (spec 8 fixes them:
 * a command may depend on them), or `withinUmask` for a checkout, as git
 * does (umask 077 keeps a private user's files private). `content` supplies
 * artifact bytes. Errors (for example a path the file system cannot hold)
 * come back as `io` failures naming the path. Once `signal` is aborted it
 * stops before the next file and returns how many it wrote.
 */
export async function materialize(
  dir: string,
  files: FileMap,
  content: (id: Id) => Promise<Outcome<Uint8Array>>,
  modes: 'exact' | 'withinUmask' = 'exact',
  signal?: AbortSignal,
): Promise<Outcome<number>> {
  const paths = [...files.keys()].sort(compareUtf8);
  for (const [index, path] of paths.entries()) {
    // Cancelled: the folder holds only part of the state, which the caller (owning the signal) must know.
    if (signal?.aborted === true) return success(index);
    const entry = files.get(path) as FileEntry;
    const bytes = await content(entry.artifact);
    if (!bytes.ok) return bytes;
    const target = join(dir, path);
    const mode = entry.executable ? 0o755 : 0o644;
    try {
      const slash = path.lastIndexOf('/');
      if (slash !== -1) await makeFolders(join(dir, path.slice(0, slash)));
      await writeFile(target, bytes.value, { mode, flag: 'wx' });
      if (modes === 'exact') await chmod(target, mode); // the umask may have narrowed the mode
    } catch (error) {
      return ioFailure(`cannot write ${shownPath(path)}`, error);
    }
  }
  return success(paths.length);
}

/**
 * Checks a state's files out into `dir` (absolute), which must be absent or an
 * empty folder, so that a failure leaves nothing half-filled. An absent
 * folder is filled as a private sibling (`.aip-checkout-{hex}`) and renamed
 * into place; parents created for it are removed again on failure. An empty
 * folder the user already has is filled in place and, on failure, emptied of
 * what this checkout wrote (the folder itself stays).
 */
export async function checkout(dir: string, files: FileMap, content: (id: Id) => Promise<Outcome<Uint8Array>>): Promise<Outcome<number>> {
  let existing = true;
  try {
    await lstat(dir);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') return ioFailure(`cannot inspect ${dir}`, error);
    existing = false;
  }
  if (existing) {
    const written = await materialize(dir, files, content, 'withinUmask');
    if (!written.ok) {
      // The folder was empty: every top-level name of the state is this checkout's.
      const tops = new Set([...files.keys()].map((path) => path.split('/')[0] as string));
      for (const name of tops) await rm(join(dir, name), { recursive: true, force: true }).catch(() => undefined);
    }
    return written;
  }
  const parent = dirname(dir);
  let firstMadeParent: string | undefined;
  let work: string | undefined;
  try {
    firstMadeParent = await makeFolders(parent);
    work = join(parent, `.aip-checkout-${randomBytes(8).toString('hex')}`);
    await mkdir(work);
    const written = await materialize(work, files, content, 'withinUmask');
    if (!written.ok) {
      await undoCheckout(work, parent, firstMadeParent);
      return written;
    }
    await rename(work, dir);
    return written;
  } catch (error) {
    await undoCheckout(work, parent, firstMadeParent);
    if (errorCode(error) === 'ENOTEMPTY' || errorCode(error) === 'EEXIST') return failure('io', `cannot check out into ${dir}: it appeared meanwhile and is not empty`);
    return ioFailure(`cannot check out into ${dir}`, error);
  }
}

/** Removes a failed checkout's work folder and the parents made for it (only while they are empty). */
async function undoCheckout(work: string | undefined, parent: string, firstMadeParent: string | undefined): Promise<void> {
  if (work !== undefined) await rm(work, { recursive: true, force: true }).catch(() => undefined);
  if (firstMadeParent === undefined) return;
  for (let current = parent; ; current = dirname(current)) {
    try {
      await rmdir(current);
    } catch {
      return; // not empty (someone else's now), or gone
    }
    if (current === firstMadeParent || dirname(current) === current) return;
  }
}
