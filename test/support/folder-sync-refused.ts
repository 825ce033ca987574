// A file system that cannot fsync a folder (network and FUSE file systems,
// Ceph volumes), without one: a preload library, built here with the
// machine's C compiler, makes fsync(2) of a directory fail with EINVAL, as
// Linux does where a file system has no fsync for folders. Regular files
// sync as usual. Pass the returned environment to a child process.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SOURCE = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
int fsync(int fd) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) { errno = EINVAL; return -1; }
  int (*next)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return next(fd);
}
`;

let built: string | undefined;

/** `{ LD_PRELOAD }` for a child whose folder fsyncs fail with EINVAL. */
export function folderSyncRefusedEnv(): Record<string, string> {
  if (built === undefined) {
    const folder = mkdtempSync(join(tmpdir(), 'folder-sync-refused-'));
    writeFileSync(join(folder, 'refuse.c'), SOURCE);
    execFileSync('cc', ['-shared', '-fPIC', '-o', join(folder, 'refuse.so'), join(folder, 'refuse.c'), '-ldl'], { stdio: 'pipe' });
    built = join(folder, 'refuse.so');
  }
  return { LD_PRELOAD: built };
}
