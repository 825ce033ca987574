// Resource exhaustion without privileges: a child run under /bin/sh's
// `ulimit`. A file size limit (`ulimit -f`) stands in for a full disk: a
// write past it gets EFBIG where a full file system gives ENOSPC (Node
// ignores the SIGXFSZ that comes with it); blocks are 512 bytes under dash
// and 1024 under bash, so tests choose sizes that hold for both. An open
// files limit (`ulimit -n`) makes the process run out of descriptors.

export interface ResourceLimits {
  readonly fileSizeBlocks?: number | undefined;
  readonly openFiles?: number | undefined;
}

/** `[command, args]` that run `node args…`, under the given limits. */
export function nodeCommand(args: readonly string[], limits: ResourceLimits = {}): [string, string[]] {
  const settings = [
    ...(limits.fileSizeBlocks === undefined ? [] : [`ulimit -f ${limits.fileSizeBlocks}`]),
    ...(limits.openFiles === undefined ? [] : [`ulimit -n ${limits.openFiles}`]),
  ];
  if (settings.length === 0) return [process.execPath, [...args]];
  return ['/bin/sh', ['-c', `${settings.join(' && ')} && exec "$0" "$@"`, process.execPath, ...args]];
}
