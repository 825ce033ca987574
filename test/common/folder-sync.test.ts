// A folder's fsync refused because its file system cannot sync folders
// (EINVAL on Linux, ENOTSUP or EOPNOTSUPP from FUSE) is no failed write;
// write-back failures still are.
import { closeSync, existsSync, fsyncSync, openSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { folderSyncUnsupported } from '../../src/common/folder-sync.js';

const systemError = (code: string): Error => Object.assign(new Error(`${code}: fsync`), { code, syscall: 'fsync' });

describe('folderSyncUnsupported', () => {
  it('takes the refusals of a file system without folder sync as unsupported', () => {
    for (const code of ['EINVAL', 'ENOTSUP', 'EOPNOTSUPP']) expect([code, folderSyncUnsupported(systemError(code))]).toEqual([code, true]);
  });

  it('keeps write-back failures, and errors without a code, failures', () => {
    for (const code of ['EIO', 'ENOSPC', 'EDQUOT', 'EBADF', 'EROFS']) expect([code, folderSyncUnsupported(systemError(code))]).toEqual([code, false]);
    expect(folderSyncUnsupported(new Error('no code'))).toBe(false);
    expect(folderSyncUnsupported(undefined)).toBe(false);
  });

  it.runIf(existsSync('/proc/self'))('takes the fsync of a procfs folder (EINVAL) as unsupported', () => {
    const fd = openSync('/proc/self', 'r');
    let error: unknown;
    try {
      fsyncSync(fd);
    } catch (caught) {
      error = caught;
    } finally {
      closeSync(fd);
    }
    expect(error).toMatchObject({ code: 'EINVAL' });
    expect(folderSyncUnsupported(error)).toBe(true);
  });
});
