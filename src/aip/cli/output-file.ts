// Where `aip export -o FILE` writes (D28): a new or existing regular file is
// written as a temp sibling (exclusive create), fsynced and renamed over it
// only once the bundle is complete, so a failure or a signal leaves the old
// bytes (or no file); a device, a FIFO or a dangling link is written in place.
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { access, type FileHandle, lstat, open, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { AipError } from '../core/errors.js';
import { holdSignals, removeOnInterrupt } from '../../common/interrupt-cleanup.js';
import { fsyncDirectory } from '../repository/object-store.js';
import { errorCode } from '../../common/errors.js';

async function statOrUndefined(read: (path: string) => Promise<Stats>, path: string): Promise<Stats | undefined> {
  try {
    return await read(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** Runs `produce` over a stream to `path` and returns its result once the bytes are in place. */
export async function writeOutputFile<T>(path: string, produce: (out: Writable) => Promise<T>): Promise<T> {
  const target = await statOrUndefined(stat, path);
  if (target === undefined ? (await statOrUndefined(lstat, path)) !== undefined : !target.isFile()) {
    // Not ours to replace (`-o /dev/null`, a FIFO, a link to nothing yet): written in place, never removed.
    return streamTo(await open(path, 'w'), produce);
  }
  // A link to a regular file: the file it names is replaced and the link stays.
  const final = target === undefined ? path : await realpath(path);
  // Replaced only where it could have been written in place: a file you may
  // not write (read-only, or another user's in a shared folder) stays refused.
  if (target !== undefined) await access(final, constants.W_OK);
  const tmp = join(dirname(final), `.${basename(final)}.${process.pid}-${randomBytes(8).toString('hex')}.tmp`);
  // Signals wait until the temp file is registered for removal, so none is left by a Ctrl-C.
  const releaseSignals = holdSignals();
  let handle: FileHandle;
  let releaseOnInterrupt: () => void;
  try {
    handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
    releaseOnInterrupt = removeOnInterrupt(tmp);
  } catch (error) {
    // Named by the path the user gave (`ENOENT dir/x.aipb` for a missing folder), not by the temp name.
    const code = errorCode(error);
    throw code === undefined ? error : new AipError('io', `${code} ${path}`, { cause: error });
  } finally {
    releaseSignals();
  }
  try {
    const result = await streamTo(handle, produce);
    // The stream closed its handle: fsync through a second one (it syncs the file, not the descriptor).
    const again = await open(tmp, 'r+');
    try {
      await again.sync();
      // A replaced file keeps its permission bits (the umask narrowed the new one's).
      if (target !== undefined) await again.chmod(target.mode & 0o7777);
    } finally {
      await again.close();
    }
    await rename(tmp, final);
    await fsyncDirectory(dirname(final));
    return result;
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  } finally {
    releaseOnInterrupt();
  }
}

/** Streams `produce`'s bytes into `handle`, which the stream closes. */
async function streamTo<T>(handle: FileHandle, produce: (out: Writable) => Promise<T>): Promise<T> {
  const out = handle.createWriteStream();
  out.on('error', () => undefined); // write errors reach `produce` through its write callbacks
  try {
    const result = await produce(out);
    out.end();
    await finished(out);
    return result;
  } catch (error) {
    out.destroy();
    throw error;
  }
}
