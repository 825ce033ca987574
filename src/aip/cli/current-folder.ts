// The current folder as `aip` may use it: a text path naming the folder the
// command was started in. Asked for only when a command needs it (finding the
// repository, a relative --repo, DIR or FILE), so `--help` and absolute paths
// work from anywhere.
//
// Node returns the current folder as text: when it has been deleted,
// process.cwd() throws (aip died with a stack trace and exit 1, a "negative
// outcome"), and when its path is not valid UTF-8 each invalid byte becomes
// U+FFFD, which names another folder: `aip init` made its repository there
// and every other command read that folder's tree instead of this one. Both
// are now `io` errors (exit 6); see decisions-aip D36.
import { statSync } from 'node:fs';
import { AipError } from '../core/errors.js';
import { errorCode } from '../../common/errors.js';

/** Whether `path` names the folder the process is in (same device and inode as `.`). */
function namesCurrentFolder(path: string): boolean {
  try {
    const here = statSync('.');
    const named = statSync(path);
    return here.dev === named.dev && here.ino === named.ino;
  } catch {
    return false;
  }
}

export function currentFolder(): string {
  let cwd: string;
  try {
    cwd = process.cwd();
  } catch (error) {
    throw new AipError('io', `cannot tell the current folder (${errorCode(error) ?? String(error)}; was it deleted?): change to an existing folder, or give --repo and paths as absolute paths`);
  }
  if (cwd.includes('\uFFFD') && !namesCurrentFolder(cwd)) {
    throw new AipError(
      'io',
      `the current folder's path is not valid UTF-8, and aip names folders as text: as text it reads ${JSON.stringify(cwd)}, which is another folder; change to a folder whose path is UTF-8, or give --repo and paths as absolute paths`,
    );
  }
  return cwd;
}
