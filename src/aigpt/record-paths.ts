// Where records live: `{base}/{identity}/{collection}/{rkey}.json`, which
// directory entries count as records (spec 3.2), and how they are ordered.
// Pure path arithmetic: never touches the file system.

import { join } from 'node:path';
import { compareCodePoints } from '../common/json.js';
import { CORE_COLLECTION, CORE_RKEY, MEMORY_COLLECTION } from './limits.js';

export interface RecordTree {
  /** `{base}/{identity}` */
  readonly identityDir: string;
  readonly coreDir: string;
  readonly coreFile: string;
  readonly memoryDir: string;
}

export function recordTree(base: string, identity: string): RecordTree {
  const identityDir = join(base, identity);
  const coreDir = join(identityDir, CORE_COLLECTION);
  return {
    identityDir,
    coreDir,
    coreFile: join(coreDir, `${CORE_RKEY}.json`),
    memoryDir: join(identityDir, MEMORY_COLLECTION),
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
  return compareCodePoints(a, b);
}

export function memoryUri(did: string, tid: string): string {
  return `at://${did}/${MEMORY_COLLECTION}/${tid}`;
}

export function coreUri(did: string): string {
  return `at://${did}/${CORE_COLLECTION}/${CORE_RKEY}`;
}
