// The fsync of a folder that makes the names created, renamed or removed in
// it durable. Some file systems cannot sync a folder at all (network and
// FUSE file systems, Ceph volumes): Linux's fsync then fails with EINVAL
// (the file system has no fsync for it), FUSE ones with ENOTSUP or
// EOPNOTSUPP. There the names are as durable as that file system makes them,
// and treating the refusal as a failed write would fail every write on it.
// Write-back failures (EIO, ENOSPC, EDQUOT) are still failures.

import { errorCode } from './errors.js';

const UNSUPPORTED = new Set(['EINVAL', 'ENOTSUP', 'EOPNOTSUPP']);

/** Whether a folder's fsync failed only because its file system cannot sync folders. */
export function folderSyncUnsupported(error: unknown): boolean {
  const code = errorCode(error);
  return code !== undefined && UNSUPPORTED.has(code);
}
