// A full disk without privileges: a child run under /bin/sh's `ulimit -f`
// gets EFBIG for a write past that size, where a full file system gives
// ENOSPC (Node ignores the SIGXFSZ that comes with it). Blocks are 512 bytes
// under dash and 1024 under bash; tests choose sizes that hold for both.

/** `[command, args]` that run `command args…` under a file size limit of `blocks`. */
export function underFileSizeLimit(blocks: number, command: string, args: readonly string[]): [string, string[]] {
  return ['/bin/sh', ['-c', `ulimit -f ${blocks} && exec "$0" "$@"`, command, ...args]];
}
