// A full disk without privileges: a child run under /bin/sh's `ulimit -f`
// gets EFBIG for a write past that size, where a full file system gives
// ENOSPC (Node ignores the SIGXFSZ that comes with it). Blocks are 512 bytes
// under dash and 1024 under bash; tests choose sizes that hold for both.

/** `[command, args]` that run `node args…`, under a file size limit of `blocks` when one is given. */
export function nodeCommand(args: readonly string[], blocks?: number): [string, string[]] {
  if (blocks === undefined) return [process.execPath, [...args]];
  return ['/bin/sh', ['-c', `ulimit -f ${blocks} && exec "$0" "$@"`, process.execPath, ...args]];
}
