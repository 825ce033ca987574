// The process's standard input as the commands read it.

import { fstatSync } from 'node:fs';
import { Readable } from 'node:stream';

/**
 * process.stdin, except for a folder on fd 0 (`< /`): Node gives a folder an
 * input that is empty and ends at once, so a command would take it for an
 * empty file (`aip put --from raw - < dir` stored the empty artifact) or a
 * client that closed the session. Here reading it fails with EISDIR, as
 * opening the folder by name does.
 */
export function standardInput(): Readable {
  let folder = false;
  try {
    folder = fstatSync(0).isDirectory();
  } catch {
    // fd 0 closed: Node itself reads it as an empty input.
  }
  if (!folder) return process.stdin;
  const error = Object.assign(new Error('EISDIR: illegal operation on a directory, read'), { code: 'EISDIR', errno: -21, syscall: 'read' });
  return new Readable({
    read() {
      this.destroy(error);
    },
  });
}
