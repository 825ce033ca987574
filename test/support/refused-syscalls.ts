// File systems this machine does not have, without them: a preload library,
// built here with the machine's C compiler, refuses chosen system calls in a
// child process as such a file system would.
// - 'folder-fsync': fsync(2) of a directory fails with EINVAL, as on network
//   and FUSE file systems or Ceph volumes (Linux's answer where a file system
//   has no fsync for folders); regular files sync as usual.
// - 'hard-link': link(2) and linkat(2) fail with EPERM, as on FAT and exFAT.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type RefusedSyscall = 'folder-fsync' | 'hard-link';

const SOURCE = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
static int refused(const char *name) {
  const char *list = getenv("TEST_REFUSED_SYSCALLS");
  return list != NULL && strstr(list, name) != NULL;
}
int fsync(int fd) {
  struct stat st;
  if (refused("folder-fsync") && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) { errno = EINVAL; return -1; }
  int (*next)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return next(fd);
}
int link(const char *from, const char *to) {
  if (refused("hard-link")) { errno = EPERM; return -1; }
  int (*next)(const char *, const char *) = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "link");
  return next(from, to);
}
int linkat(int fromDir, const char *from, int toDir, const char *to, int flags) {
  if (refused("hard-link")) { errno = EPERM; return -1; }
  int (*next)(int, const char *, int, const char *, int) = (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
  return next(fromDir, from, toDir, to, flags);
}
`;

let built: string | undefined;

/** The environment for a child process in which `calls` are refused. */
export function refusedSyscallsEnv(...calls: RefusedSyscall[]): Record<string, string> {
  if (built === undefined) {
    const folder = mkdtempSync(join(tmpdir(), 'refused-syscalls-'));
    writeFileSync(join(folder, 'refuse.c'), SOURCE);
    execFileSync('cc', ['-shared', '-fPIC', '-o', join(folder, 'refuse.so'), join(folder, 'refuse.c'), '-ldl'], { stdio: 'pipe' });
    built = join(folder, 'refuse.so');
  }
  return { LD_PRELOAD: built, TEST_REFUSED_SYSCALLS: calls.join(',') };
}
