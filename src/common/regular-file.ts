// Reading small metadata files (a lock, a journal, a repository's config or
// HEAD) that must be regular files. Opened with O_NONBLOCK: a FIFO left in
// such a file's place would otherwise block the reader, and every writer
// behind it, forever. Owns no paths and no error wording of the systems.

import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';

/** The entry at the path is neither a regular file nor a folder (a FIFO, a socket, a device). */
export class NotRegularFileError extends Error {
  /** Shaped like a file-system error, whose code and path callers print. */
  readonly code = 'ENOTREG';

  constructor(readonly path: string) {
    super('not a regular file');
    this.name = 'NotRegularFileError';
  }
}

/** Bound for metadata files of a few lines (locks, HEAD, markers): nothing of ours comes near it. */
export const SMALL_METADATA_MAX_BYTES = 64 * 1024;

/** The file holds more than the caller's bound; nothing of it was kept. */
export class FileTooLargeError extends Error {
  /** Shaped like a file-system error (the errno name for "file too large"), whose code and path callers print. */
  readonly code = 'EFBIG';

  constructor(
    readonly path: string,
    readonly maxBytes: number,
  ) {
    super(`${path} is larger than ${maxBytes} bytes`);
    this.name = 'FileTooLargeError';
  }
}

/** Our own two refusals of a read, in a few words (a system error has its code and libuv's text instead). */
export function ownReadFailureText(error: unknown): string | undefined {
  if (error instanceof FileTooLargeError) return `larger than ${error.maxBytes} bytes`;
  return error instanceof NotRegularFileError ? error.message : undefined;
}

/**
 * The whole content of a regular file of at most `maxBytes` bytes. Errors are
 * the file system's (ENOENT, EACCES; EISDIR for a folder, as readFile reports
 * it), NotRegularFileError, or FileTooLargeError, raised before a larger file
 * is read (or when it grows past the bound while being read), so a file
 * filled by someone else never costs more memory than the bound.
 */
export async function readRegularFile(path: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) return await handle.readFile(); // EISDIR, as readFile reports it
    if (!stat.isFile()) throw new NotRegularFileError(path);
    if (stat.size > maxBytes) throw new FileTooLargeError(path, maxBytes);
    return await readToEndBounded(handle, stat.size, maxBytes, path);
  } finally {
    await handle.close();
  }
}

/** Pieces of a bounded read are whole pages of this size (see readToEndBounded). */
const READ_PAGE_BYTES = 4096;

/**
 * The rest of an open file, `size` being what its stat said, read in pieces
 * and given up (FileTooLargeError) as soon as it holds more than
 * `maxBytes`: the stat size is only a hint, since a file may grow while it
 * is read and a pseudo-file (`/proc/...`) says 0 whatever it holds. Pieces
 * are whole pages (some pseudo-files refuse other lengths), so at most
 * `maxBytes` plus one page is ever held.
 */
export async function readToEndBounded(handle: FileHandle, size: number, maxBytes: number, path: string): Promise<Buffer> {
  const pages = (bytes: number): number => Math.ceil(bytes / READ_PAGE_BYTES) * READ_PAGE_BYTES;
  // Room for one byte more than the bound, to see the file end (or grow past it).
  const cap = pages(maxBytes + 1);
  let buffer = Buffer.alloc(Math.min(cap, pages(size + 1)));
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      const grown = Buffer.alloc(Math.min(cap, buffer.length * 2));
      buffer.copy(grown, 0, 0, length);
      buffer = grown;
    }
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
    length += bytesRead;
    if (length > maxBytes) throw new FileTooLargeError(path, maxBytes);
    if (bytesRead === 0) return buffer.subarray(0, length);
  }
}

/** readRegularFile decoded as UTF-8 (invalid bytes become U+FFFD, as readFile(path, 'utf8') does). */
export async function readRegularText(path: string, maxBytes: number): Promise<string> {
  return (await readRegularFile(path, maxBytes)).toString('utf8');
}

/**
 * A small regular file's text read synchronously (a signal handler cannot
 * wait), or null when it is gone, not a regular file, or over
 * SMALL_METADATA_MAX_BYTES; never blocks on a FIFO. Lets an interrupt handler
 * check that a lock file still holds its own record before removing it.
 */
export function readSmallTextNow(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size > SMALL_METADATA_MAX_BYTES) return null;
    const bytes = Buffer.alloc(stats.size);
    return bytes.toString('utf8', 0, readSync(fd, bytes, 0, bytes.length, 0));
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
