// The DSN shape rules of operations spec §3.3.1, in a module free of the
// driver: composition checks them before it decides to load the adapter.

import { collapseWhitespace } from '../../config/text-rules.js';
import { codePointLength } from '../../../common/code-points.js';

/** Longest accepted DSN, in characters (code points, as Python's len()). */
export const MAXIMUM_DSN_LENGTH = 4096;

/**
 * Whether a DSN passes the shape rules (non-blank, no NUL, at most 4096
 * characters). Blank is Python's: nothing but whitespace by str.isspace(),
 * which also counts the separators U+001C-U+001F and U+0085.
 */
export function isAcceptableDsn(dsn: string): boolean {
  return collapseWhitespace(dsn).length > 0 && !dsn.includes('\u0000') && codePointLength(dsn) <= MAXIMUM_DSN_LENGTH;
}
