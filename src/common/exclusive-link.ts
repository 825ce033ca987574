// Publishing a finished (synced) temp file under a name only when nothing
// holds that name yet: link(2) fails with EEXIST where rename(2) would
// replace, so of two writers racing for one name exactly one creates it.
// Some file systems have no hard links (FAT, several FUSE and network ones)
// and refuse with one of the codes below; callers then fall back to their
// own check-then-rename, exclusive only under their own lock.

import { link, rm } from 'node:fs/promises';
import { errorCode } from './errors.js';

const LINK_UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

export type LinkOutcome = 'linked' | 'exists' | 'unsupported';

/** Links `target` to the file at `source` unless `target` exists. Leaves `source` to the caller. */
export async function linkIfAbsent(source: string, target: string): Promise<LinkOutcome> {
  try {
    await link(source, target);
    return 'linked';
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EEXIST') return 'exists';
    if (code !== undefined && LINK_UNSUPPORTED.has(code)) return 'unsupported';
    throw error;
  }
}

/**
 * Removes a file this process created: a failed write's, or a temp name whose
 * bytes are already linked under their final name. Best effort: a failure to
 * remove changes nothing the caller reports (the caller's sweep or recovery
 * removes a leftover), so a stored file is never reported lost.
 */
export async function removeQuietly(path: string): Promise<void> {
  await rm(path, { force: true }).catch(() => undefined);
}
