// Crash-safe file primitives: write to a hidden temp sibling, fsync, then
// publish by link (never overwrites) or rename (replaces), then fsync the
// folder. Knows nothing about records, locks or TIDs; callers pick names.

import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { linkIfAbsent, removeQuietly } from '../../common/exclusive-link.js';
import { folderSyncUnsupported } from '../../common/folder-sync.js';
import { errnoCode } from '../core/errors.js';

/**
 * Called after every file operation with a label; tests throw from it to
 * simulate a crash at that exact point, or block the process there.
 */
export type FaultHook = (point: string) => void;

export const noFault: FaultHook = () => undefined;

export function tempSuffix(pid: number = process.pid): string {
  return `tmp-${pid}-${randomBytes(6).toString('hex')}`;
}

/** fsync a folder so renames and links in it survive power loss. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(dir, 'r');
    await handle.sync();
  } catch (error) {
    // Some platforms and file systems cannot fsync a folder (or open one to
    // sync it); that is not a write failure.
    const code = errnoCode(error);
    if (!folderSyncUnsupported(error) && code !== 'EPERM' && code !== 'EISDIR' && code !== 'EACCES') throw error;
  } finally {
    await handle?.close();
  }
}

/**
 * Creates `path` exclusively with `content`, fsynced and closed. A write the
 * file system refuses (a full disk, an I/O error) removes the file again, so
 * a failed save leaves nothing behind; only a crash leaves a temp file, for
 * recovery to remove.
 */
export async function writeExclusiveSynced(path: string, content: string, fault: FaultHook, label: string): Promise<void> {
  const handle = await fs.open(path, 'wx');
  try {
    fault(`${label}:opened`);
  } catch (error) {
    await handle.close();
    throw error;
  }
  await writeSyncClose(handle, path, content);
  fault(`${label}:synced`);
}

/** Writes, fsyncs and closes a file this process created; on failure it is closed and removed. */
async function writeSyncClose(handle: fs.FileHandle, path: string, content: string): Promise<void> {
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await removeQuietly(path);
    throw error;
  }
  try {
    await handle.close();
  } catch (error) {
    await removeQuietly(path);
    throw error;
  }
}

/**
 * How many files compress keeps in flight. Concurrent fsyncs share journal
 * commits (ext4), so a batch costs little more than one file; a 10 000-item
 * compress staged one file at a time took 22-43 s on 2 loaded cores, about
 * four times as long (docs/performance.md).
 */
export const FILE_BATCH = 16;

/** A file of a batch failed; `index` is its place in the batch, `cause` the file system's error. */
export class BatchFileError extends Error {
  override readonly name = 'BatchFileError';

  constructor(
    readonly index: number,
    override readonly cause: unknown,
  ) {
    super(`file ${index} of the batch failed`);
  }
}

/**
 * writeExclusiveSynced for every file of a batch at once. The fault points
 * are reported in file order once the whole batch has reached them, so they
 * are the same in every run. Nothing is left in flight when it returns or
 * throws; a file's failure is a BatchFileError (the first by file order),
 * and then none of the batch's files stays behind.
 */
export async function writeExclusiveSyncedBatch(
  files: readonly { readonly path: string; readonly content: string }[],
  fault: FaultHook,
  label: string,
): Promise<void> {
  const opened = await Promise.allSettled(files.map((file) => fs.open(file.path, 'wx')));
  const handles = opened.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  if (handles.length < files.length) {
    // Only the files this call created are removed: a name that was taken stays as it was.
    await Promise.allSettled(handles.map((handle) => handle.close()));
    await Promise.allSettled(files.flatMap((file, index) => (opened[index]!.status === 'fulfilled' ? [removeQuietly(file.path)] : [])));
    throwFirstFailure(opened);
  }
  try {
    for (let index = 0; index < files.length; index++) fault(`${label}:opened`);
  } catch (error) {
    await Promise.allSettled(handles.map((handle) => handle.close()));
    throw error;
  }
  const written = await Promise.allSettled(handles.map((handle, index) => writeSyncClose(handle, files[index]!.path, files[index]!.content)));
  if (written.some((outcome) => outcome.status === 'rejected')) {
    await Promise.allSettled(files.map((file) => removeQuietly(file.path)));
    throwFirstFailure(written);
  }
  for (let index = 0; index < files.length; index++) fault(`${label}:synced`);
}

/** Throws a BatchFileError for the first rejected outcome, if any. */
function throwFirstFailure(outcomes: readonly PromiseSettledResult<unknown>[]): void {
  const index = outcomes.findIndex((outcome) => outcome.status === 'rejected');
  if (index >= 0) throw new BatchFileError(index, (outcomes[index] as PromiseRejectedResult).reason);
}

export type PublishOutcome = 'created' | 'exists';

/**
 * Writes `dir/name` only if no such entry exists: temp file, fsync, link,
 * unlink temp, fsync folder. Where hard links are unsupported it falls back to
 * check-then-rename, which is exclusive only under the caller's lock.
 */
export async function writeNewFileAtomic(
  dir: string,
  name: string,
  content: string,
  fault: FaultHook = noFault,
): Promise<PublishOutcome> {
  const tmp = join(dir, `.${name}.${tempSuffix()}`);
  const target = join(dir, name);
  await writeExclusiveSynced(tmp, content, fault, `write:${name}`);
  try {
    const linked = await linkIfAbsent(tmp, target);
    if (linked === 'exists') return 'exists';
    if (linked === 'unsupported') {
      if (await exists(target)) return 'exists';
      await fs.rename(tmp, target);
    }
    fault(`write:${name}:linked`);
  } finally {
    // Once linked the file is written: a failed removal must not report it lost (recovery removes the leftover).
    await removeQuietly(tmp);
  }
  fault(`write:${name}:tmp-removed`);
  await fsyncDir(dir);
  fault(`write:${name}:dir-synced`);
  return 'created';
}

/** Replaces `dir/name` atomically: temp file, fsync, rename, fsync folder. */
export async function replaceFileAtomic(dir: string, name: string, content: string, fault: FaultHook = noFault): Promise<void> {
  const tmp = join(dir, `${name.startsWith('.') ? '' : '.'}${name}.${tempSuffix()}`);
  await writeExclusiveSynced(tmp, content, fault, `replace:${name}`);
  try {
    await fs.rename(tmp, join(dir, name));
  } catch (error) {
    await fs.rm(tmp, { force: true });
    throw error;
  }
  fault(`replace:${name}:renamed`);
  await fsyncDir(dir);
  fault(`replace:${name}:dir-synced`);
}

/** The names writeNewFileAtomic gives its temp files for `name` (`.{name}.tmp-{pid}-{12 hex}`). */
export function tempNamePattern(name: string): RegExp {
  return new RegExp(`^\\.${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.tmp-[0-9]+-[0-9a-f]{12}$`);
}

/** The entries of `dir` named like temp files of `name`; none when it cannot be listed. */
export async function listTemps(dir: string, name: string): Promise<string[]> {
  const pattern = tempNamePattern(name);
  try {
    return (await fs.readdir(dir)).filter((entry) => pattern.test(entry));
  } catch {
    return [];
  }
}

/**
 * Removes the temp files writeNewFileAtomic left in `dir` for `name` when a
 * crash stopped it, once they are older than `olderThanMs`: a live write
 * takes milliseconds, so an older one is dead, whichever host or process
 * made it. Best effort (what cannot be removed stays); returns the names removed.
 */
export async function removeStaleTemps(dir: string, name: string, olderThanMs: number): Promise<string[]> {
  const removed: string[] = [];
  for (const entry of await listTemps(dir, name)) {
    const path = join(dir, entry);
    try {
      const stat = await fs.lstat(path);
      if (stat.isDirectory() || stat.mtimeMs >= Date.now() - olderThanMs) continue;
      await fs.unlink(path);
      removed.push(entry);
    } catch {
      // Gone already, or not ours to remove: left as it is.
    }
  }
  return removed;
}

export async function exists(path: string | Buffer): Promise<boolean> {
  try {
    await fs.lstat(path);
    return true;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return false;
    throw error;
  }
}
