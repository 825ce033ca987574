// `.aipignore` (spec 7.7, project decision P13): a small gitignore subset
// read from the project root only. Parsing and matching are pure; reading the
// file belongs to the repository and the runner.
import { failure, success, type Outcome } from './errors.js';

export interface IgnoreRule {
  readonly pattern: string;
  readonly anchored: boolean;
  readonly directoryOnly: boolean;
  /** The pattern's `/`-separated parts, each as code points (`*` and `?` never match `/`). */
  readonly segments: readonly (readonly string[])[];
}

export interface IgnoreRules {
  readonly rules: readonly IgnoreRule[];
}

export const NO_IGNORE_RULES: IgnoreRules = { rules: [] };

/**
 * Whether one part of a path matches one part of a pattern, `*` being any
 * run of characters and `?` one character. Greedy with a return to the last
 * `*` only, so at most parts' lengths multiplied: as a regular expression,
 * `*a*a*a...b` against a long name of `a`s backtracked for ever (aip status hung).
 */
function matchSegment(pattern: readonly string[], text: readonly string[]): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    const char = pattern[p];
    if (char === '*') {
      star = p++;
      resume = t;
    } else if (char !== undefined && (char === '?' || char === text[t])) {
      p++;
      t++;
    } else if (star !== -1) {
      p = star + 1;
      t = ++resume;
    } else return false;
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

/** Code points of each `/`-separated part. */
function segmentsOf(text: string): string[][] {
  return text.split('/').map((part) => Array.from(part));
}

export function parseIgnoreRules(text: string): Outcome<IgnoreRules> {
  const rules: IgnoreRule[] = [];
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '' || line.startsWith('#')) continue;
    if (line.startsWith('!')) return failure('snapshot.invalid', `.aipignore line ${index + 1}: negation (!) is not supported`);
    let pattern = line;
    const directoryOnly = pattern.endsWith('/');
    if (directoryOnly) pattern = pattern.slice(0, -1);
    const anchored = pattern.includes('/');
    if (pattern.startsWith('/')) pattern = pattern.slice(1);
    if (pattern === '') return failure('snapshot.invalid', `.aipignore line ${index + 1}: empty pattern`);
    rules.push({ pattern: line, anchored, directoryOnly, segments: segmentsOf(pattern) });
  }
  return success({ rules });
}

/** Whether the entry at `path` (relative, slash-separated) is ignored. */
export function isIgnored(rules: IgnoreRules, path: string, isDirectory: boolean): boolean {
  const parts = segmentsOf(path);
  const name = parts.slice(-1);
  for (const rule of rules.rules) {
    if (rule.directoryOnly && !isDirectory) continue;
    const against = rule.anchored ? parts : name;
    if (against.length === rule.segments.length && rule.segments.every((segment, i) => matchSegment(segment, against[i] as string[]))) return true;
  }
  return false;
}
