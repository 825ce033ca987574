// Reading small metadata files (a lock, a journal, a repository's config or
// HEAD) that must be regular files. Opened with O_NONBLOCK: a FIFO left in
// such a file's place would otherwise block the reader, and every writer
// behind it, forever. Owns no paths and no error wording of the systems.

import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** The entry at the path is neither a regular file nor a folder (a FIFO, a socket, a device). */
export class NotRegularFileError extends Error {
  /** Shaped like a file-system error, whose code and path callers print. */
  readonly code = 'ENOTREG';

  constructor(readonly path: string) {
    super('not a regular file');
    this.name = 'NotRegularFileError';
  }
}

/**
 * The whole content of a regular file. Errors are the file system's (ENOENT,
 * EACCES; EISDIR for a folder, as readFile reports it) or NotRegularFileError.
 */
export async function readRegularFile(path: string): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = await handle.stat();
    if (!stat.isFile() && !stat.isDirectory()) throw new NotRegularFileError(path);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** readRegularFile decoded as UTF-8 (invalid bytes become U+FFFD, as readFile(path, 'utf8') does). */
export async function readRegularText(path: string): Promise<string> {
  return (await readRegularFile(path)).toString('utf8');
}
