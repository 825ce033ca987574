// Where records live: `{base}/{identity}/{collection}/{rkey}.json`, which
// directory entries count as records (spec 3.2), and how they are ordered.
// Pure path arithmetic: never touches the file system.

import { join, sep } from 'node:path';
import { CORE_COLLECTION, CORE_RKEY, MEMORY_COLLECTION } from './limits.js';

export interface RecordTree {
  /** `{base}/{identity}` */
  readonly identityDir: string;
  readonly coreDir: string;
  readonly coreFile: string;
  readonly memoryDir: string;
}

/**
 * Rust's `PathBuf::join` on POSIX: the parts are appended as written, with a
 * `/` only where none ends the path so far, and an absolute part replaces
 * what precedes it. No normalisation: `HOME=/a//b` or
 * `XDG_CONFIG_HOME=/a/./c` stay as they are in the printed `config:` and
 * `path:` lines, as in the reference (Node's join would print `/a/b`,
 * `/a/c`). The kernel reads both spellings as the same folder.
 */
export function joinLikeRust(base: string, ...parts: readonly string[]): string {
  let path = base;
  for (const part of parts) {
    if (part.startsWith('/') || path === '') path = part;
    else path = path.endsWith('/') ? path + part : `${path}/${part}`;
  }
  return path;
}

/**
 * `dir/name` as the reference appends it, without normalising (POSIX): a
 * `..` that config.ts left for the kernel to refuse (after a file or a link
 * loop) must not be dropped by name here.
 */
function under(dir: string, name: string): string {
  return sep === '/' ? joinLikeRust(dir, name) : join(dir, name);
}

export function recordTree(base: string, identity: string): RecordTree {
  const identityDir = under(base, identity);
  const coreDir = under(identityDir, CORE_COLLECTION);
  return {
    identityDir,
    coreDir,
    coreFile: under(coreDir, `${CORE_RKEY}.json`),
    memoryDir: under(identityDir, MEMORY_COLLECTION),
  };
}

/**
 * The reference's rule (Rust `Path::extension() == "json"`): the part after the
 * last dot, unless that dot is the first character and the only dot. So
 * `a.json`, `x.tmp.json` and even `.x.json` count; `.json`, `a.JSON` and
 * `a.json.tmp` do not. Our helper files are chosen never to match.
 */
export function isRecordFileName(name: string): boolean {
  const dot = name.lastIndexOf('.');
  return dot > 0 && name.slice(dot + 1) === 'json';
}

export function recordStem(name: string): string {
  return name.slice(0, name.length - '.json'.length);
}

/** Bytewise UTF-8 order of file names, which is code point order (and time order for TIDs). */
export function compareFileNames(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // UTF-16 units order code points except that surrogates (U+D800-DFFF,
    // above U+FFFF) sort below U+E000-FFFF; lift them above it.
    return (x >= 0xd800 ? (x < 0xe000 ? x + 0x2000 : x - 0x800) : x) - (y >= 0xd800 ? (y < 0xe000 ? y + 0x2000 : y - 0x800) : y);
  }
  return a.length - b.length;
}

export function memoryUri(did: string, tid: string): string {
  return `at://${did}/${MEMORY_COLLECTION}/${tid}`;
}

export function coreUri(did: string): string {
  return `at://${did}/${CORE_COLLECTION}/${CORE_RKEY}`;
}
