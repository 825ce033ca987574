// `mkdir -p` without Node's recursive mkdir: on a file system where mkdir
// answers ENOENT under a folder that exists (procfs: `/proc/self/x`), Node 20's
// `mkdir(path, { recursive: true })` retries the parent and the child for ever,
// at full CPU, and never settles. Here every level is made once, top down,
// and such a refusal is the error it is.

import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { errorCode } from './errors.js';

/**
 * Creates `path` and any missing parents (following symlinks, as `mkdir -p`
 * does). Resolves with the first folder it created, or undefined when `path`
 * was already a folder, as `mkdir(path, { recursive: true })` does; rejects
 * with the system's own error (ENOTDIR, EEXIST for a file at `path`, EACCES, …).
 * A folder another process makes meanwhile counts as made. The path is taken
 * as given, relative or with `..` components, level by level as the kernel
 * resolves it.
 */
export async function makeFolders(path: string): Promise<string | undefined> {
  // Not normalised: `file/..` must fail as the kernel fails it (ENOTDIR).
  const missing: string[] = [];
  for (let current = path; ; current = dirname(current)) {
    const kind = await entryKind(current);
    if (kind === 'folder') break;
    // Not a folder: mkdir itself answers with the right error (EEXIST, ENOTDIR).
    if (kind === 'other' || dirname(current) === current) {
      await mkdir(current);
      break;
    }
    missing.push(current);
  }
  for (const folder of missing.reverse()) {
    try {
      await mkdir(folder);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST' || (await entryKind(folder)) !== 'folder') throw error;
    }
  }
  return missing[0];
}

async function entryKind(path: string): Promise<'folder' | 'other' | 'missing'> {
  try {
    return (await stat(path)).isDirectory() ? 'folder' : 'other';
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return 'missing';
    throw error;
  }
}
