// The write-once object store under `.aip/objects` (spec 7.4): atomic writes
// (temp file, fsync, link or rename, directory fsync) and reads that always check the
// bytes against their ID before decoding. It never decides what is valid to store.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, rename, rm, rmdir, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeObject, sha256Hex } from '../core/codec.js';
import { AipError, failure, notWritten, success, type Outcome } from '../core/errors.js';
import type { Id } from '../core/objects.js';
import type { LoadResult } from '../core/verify-graph.js';
import { isId } from '../core/value-rules.js';
import { errorCode } from '../../common/errors.js';
import { linkIfAbsent, removeQuietly } from '../../common/exclusive-link.js';
import { folderSyncUnsupported } from '../../common/folder-sync.js';
import { makeFolders } from '../../common/make-folders.js';
import { removeOnInterrupt } from '../../common/interrupt-cleanup.js';
import { OWNER_TAG_PATTERN, ownerTag, ownerTagGone } from '../../common/process.js';

export interface ObjectStoreOptions {
  readonly maxObjectBytes: number;
  /** Non-fatal notices (a corrupt file replaced); the CLI sends them to stderr. */
  readonly warn?: (message: string) => void;
}

/** Reads at most `size` bytes (a size already checked against a bound) from the start of an open file. */
export async function readUpTo(handle: FileHandle, size: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(size);
  let filled = 0;
  while (filled < size) {
    const { bytesRead } = await handle.read(bytes, filled, size - filled, filled);
    if (bytesRead === 0) break; // the file shrank meanwhile
    filled += bytesRead;
  }
  return filled === size ? bytes : bytes.subarray(0, filled);
}

export async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, constants.O_RDONLY);
  try {
    await handle.sync();
  } catch (error) {
    if (!folderSyncUnsupported(error)) throw error;
  } finally {
    await handle.close();
  }
}

/** True when `path` is a folder itself, not a symbolic link to one (nor anything else). */
export async function isRealFolder(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return false;
    throw error;
  }
}

/** `tmp/{owner tag}-{32 hex}`: an object being written by the process the tag names (`{pid}.{PID namespace}`, or `{pid}`). */
const OBJECT_TEMP_NAME = new RegExp(`^${OWNER_TAG_PATTERN}-[0-9a-f]{32}$`);

export class ObjectStore {
  readonly objectsDir: string;
  readonly tmpDir: string;
  private sweptDeadTemps = false;

  constructor(
    readonly aipDir: string,
    private readonly options: ObjectStoreOptions,
  ) {
    this.objectsDir = join(aipDir, 'objects');
    this.tmpDir = join(aipDir, 'tmp');
  }

  get maxObjectBytes(): number {
    return this.options.maxObjectBytes;
  }

  pathOf(id: Id): string {
    return join(this.objectsDir, id.slice(0, 2), id.slice(2));
  }

  async has(id: Id): Promise<boolean> {
    try {
      return (await stat(this.pathOf(id))).isFile();
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return false;
      throw error;
    }
  }

  /** The stored bytes, bounded before reading and checked against the ID. */
  async readBytes(id: Id): Promise<Outcome<Uint8Array>> {
    let handle;
    try {
      // O_NONBLOCK: opening a FIFO under an object's name would otherwise wait for a writer for ever.
      handle = await open(this.pathOf(id), constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') return failure('store.not_found', `no object ${id}`);
      // Damage at the object's own path (a symlink loop, a file made
      // unreadable) is that object's failure, reported for it like a folder
      // in its place; it used to stop verify altogether. Running out of file
      // handles or memory says nothing about the object and still stops.
      if (code !== undefined && !['EMFILE', 'ENFILE', 'ENOMEM'].includes(code)) {
        return failure('io', `${id}: cannot open ${this.pathOf(id)}: ${code}`);
      }
      throw error;
    }
    try {
      const info = await handle.stat();
      // Damage such as a folder under an object's name is reported for that
      // object; reading it threw a bare EISDIR that stopped verify altogether.
      if (!info.isFile()) return failure('io', `${id}: ${this.pathOf(id)} is not a regular file`);
      const { size } = info;
      if (size > this.options.maxObjectBytes) {
        return failure('cbor.too_large', `${id}: ${size} bytes exceed max_object_bytes ${this.options.maxObjectBytes}`);
      }
      const content = await readUpTo(handle, size);
      const actual = sha256Hex(content);
      if (actual !== id) return failure('store.hash', `${id}: stored bytes hash to ${actual}`);
      return success(content);
    } finally {
      await handle.close();
    }
  }

  /** Reads, hash-checks and decodes (every read is verified; spec 7.4). */
  async load(id: Id): Promise<LoadResult> {
    const bytes = await this.readBytes(id);
    if (!bytes.ok) return bytes.error.code === 'store.not_found' ? { kind: 'missing' } : { kind: 'invalid', error: bytes.error };
    const decoded = decodeObject(bytes.value, { maxObjectBytes: this.options.maxObjectBytes });
    if (!decoded.ok) return { kind: 'invalid', error: new AipError(decoded.error.code, `${id}: ${decoded.error.message}`) };
    return { kind: 'found', object: decoded.value };
  }

  /**
   * Writes verified bytes under their ID. `beforePublish` runs after the temp
   * file is durable and before the object appears (the reverse index appends
   * its lines there, so it never misses a stored object). Returns false when
   * an identical object was already stored.
   */
  async write(id: Id, bytes: Uint8Array, beforePublish: () => Promise<void>): Promise<boolean> {
    const finalPath = this.pathOf(id);
    // Whatever holds the object's name (a file, a link, a FIFO, a folder) is
    // read and hashed; anything but the object is corrupt and replaced (spec 7.4).
    const occupant = await lstat(finalPath).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return undefined;
      throw error;
    });
    if (occupant !== undefined) {
      const existing = await this.readBytes(id);
      if (existing.ok) return false;
      // A rename cannot replace a folder; an empty one goes, one holding files
      // is left to the user (and nothing is said to be rewritten).
      if (occupant.isDirectory()) {
        await rmdir(finalPath).catch((error: unknown) => {
          throw new AipError('io', `cannot write object ${id}: ${finalPath} is a folder holding files; remove it`, { cause: error });
        });
      }
      this.options.warn?.(`object ${id} was corrupt (${existing.error.code}); rewriting it`);
    }
    await makeFolders(this.tmpDir);
    if (!this.sweptDeadTemps) {
      // Temps of dead writers are removed from it: never in a folder a link leads to.
      if (!(await isRealFolder(this.tmpDir))) throw new AipError('io', `${this.tmpDir} is not a folder (a symbolic link?); remove it`);
      this.sweptDeadTemps = true;
      await this.removeDeadWritersTemps();
    }
    const tmpPath = join(this.tmpDir, `${ownerTag()}-${randomBytes(16).toString('hex')}`);
    // A signal (Ctrl-C during an import) removes it; only a kill -9 leaves it to the sweep above.
    const releaseOnInterrupt = removeOnInterrupt(tmpPath);
    try {
      return await this.writeTemp(id, bytes, tmpPath, finalPath, beforePublish, occupant !== undefined);
    } finally {
      releaseOnInterrupt();
    }
  }

  private async writeTemp(
    id: Id,
    bytes: Uint8Array,
    tmpPath: string,
    finalPath: string,
    beforePublish: () => Promise<void>,
    replacing: boolean,
  ): Promise<boolean> {
    const handle = await open(tmpPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o444).catch((error: unknown) => {
      throw notWritten(`object ${id}`, error);
    });
    try {
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
        written += bytesWritten;
      }
      await handle.sync();
    } catch (error) {
      await handle.close();
      await rm(tmpPath, { force: true });
      throw notWritten(`object ${id}`, error);
    }
    await handle.close();
    try {
      await beforePublish();
      const dir = join(this.objectsDir, id.slice(0, 2));
      const created = await makeFolders(dir);
      if (created !== undefined) await fsyncDirectory(this.objectsDir);
      // aip makes the fan-out folders itself: one that is a link would put the object outside the repository.
      else if (!(await isRealFolder(dir))) throw new AipError('io', `${dir} is not a folder (a symbolic link?); move what it holds into a folder of that name`);
      const stored = await this.publish(id, tmpPath, finalPath, replacing);
      await fsyncDirectory(dir);
      return stored;
    } catch (error) {
      await rm(tmpPath, { force: true });
      throw error;
    }
  }

  /**
   * Puts the synced temp file under the object's name. A name that was free
   * when looked at is taken by link, so of two writers storing one object at
   * once (two imports of one bundle) only one says it stored it; a corrupt
   * occupant is replaced by rename.
   */
  private async publish(id: Id, tmpPath: string, finalPath: string, replacing: boolean): Promise<boolean> {
    if (!replacing) {
      const linked = await linkIfAbsent(tmpPath, finalPath);
      if (linked === 'linked') {
        await removeQuietly(tmpPath);
        return true;
      }
      if (linked === 'exists') {
        const existing = await this.readBytes(id);
        if (existing.ok) {
          await removeQuietly(tmpPath);
          return false;
        }
        this.options.warn?.(`object ${id} was corrupt (${existing.error.code}); rewriting it`);
      }
    }
    await rename(tmpPath, finalPath);
    return true;
  }

  /**
   * Removes the temp files of object writers that were killed (kill -9, a
   * crash), which nothing else would ever remove: each can be as large as an
   * object. Only a name whose pid is gone from this host, last written over
   * a minute ago, goes, so a live writer's file stays (objects are written
   * without the lock). Once per
   * store, before its first write; best effort.
   */
  private async removeDeadWritersTemps(): Promise<void> {
    try {
      for (const name of await readdir(this.tmpDir)) {
        const match = OBJECT_TEMP_NAME.exec(name);
        if (match === null || !ownerTagGone(match[1] ?? '', match[2])) continue;
        // Also a minute old: on a folder shared between hosts the pid may be another host's live writer.
        const path = join(this.tmpDir, name);
        if ((await stat(path)).mtimeMs < Date.now() - 60_000) await rm(path, { force: true });
      }
    } catch {
      // Left for the next writer.
    }
  }

  /** Every stored ID, in ascending order. Stray names that are not IDs are skipped. */
  async list(): Promise<Id[]> {
    let fanout: string[];
    try {
      fanout = await readdir(this.objectsDir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
    const ids: Id[] = [];
    for (const dir of fanout.sort()) {
      if (!/^[0-9a-f]{2}$/.test(dir)) continue;
      let names: string[];
      try {
        names = await readdir(join(this.objectsDir, dir));
      } catch (error) {
        if (errorCode(error) === 'ENOTDIR') continue;
        throw error;
      }
      for (const name of names) {
        const id = dir + name;
        if (isId(id)) ids.push(id);
      }
    }
    return ids.sort();
  }

  /** Stored IDs starting with `prefix` (at least two hex digits). */
  async withPrefix(prefix: string): Promise<Id[]> {
    const dir = join(this.objectsDir, prefix.slice(0, 2));
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return [];
      throw error;
    }
    const rest = prefix.slice(2);
    return names
      .filter((name) => name.startsWith(rest))
      .map((name) => prefix.slice(0, 2) + name)
      .filter(isId)
      .sort();
  }
}
