// The only file I/O of configuration resolution: reading the bytes of the
// `--config` file. It follows symlinks, requires a regular file, never blocks
// on a FIFO or device, and reads at most one byte past the size limit.
// It never reports why a read failed: a path or OS message must not surface.

import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { fileSystemPath } from '../../common/raw-arguments.js';
import { MAX_CONFIG_FILE_BYTES } from './toml-file.js';

export type ConfigFileRead = { readonly ok: true; readonly bytes: Uint8Array } | { readonly ok: false };

export type ConfigFileReader = (path: string) => ConfigFileRead;

export const readConfigFileBytes: ConfigFileReader = (path) => {
  let fd: number | undefined;
  try {
    if (path.length === 0 || path.includes('\0')) return { ok: false };
    // A name holding bytes that are not UTF-8 (surrogate-escaped) is opened as those bytes.
    const file = fileSystemPath(path);
    if (!statSync(file).isFile()) return { ok: false };
    // O_NONBLOCK: if the path was swapped for a FIFO after the stat, open must not hang.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
    if (!fstatSync(fd).isFile()) return { ok: false };
    const limit = MAX_CONFIG_FILE_BYTES + 1;
    const buffer = Buffer.alloc(limit);
    let length = 0;
    while (length < limit) {
      const read = readSync(fd, buffer, length, limit - length, null);
      if (read === 0) break;
      length += read;
    }
    return { ok: true, bytes: buffer.subarray(0, length) };
  } catch {
    return { ok: false };
  } finally {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // Closing a read-only descriptor cannot lose data; nothing to report.
      }
    }
  }
};
