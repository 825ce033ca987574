// `.aipignore` (spec 7.7, project decision P13): a small gitignore subset
// read from the project root only. Parsing and matching are pure; reading the
// file belongs to the repository and the runner.
import { failure, success, type Outcome } from './errors.js';

export interface IgnoreRule {
  readonly pattern: string;
  readonly anchored: boolean;
  readonly directoryOnly: boolean;
  readonly regex: RegExp;
}

export interface IgnoreRules {
  readonly rules: readonly IgnoreRule[];
}

export const NO_IGNORE_RULES: IgnoreRules = { rules: [] };

function globToRegex(glob: string): RegExp {
  let source = '';
  for (const char of glob) {
    if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'u');
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
    rules.push({ pattern: line, anchored, directoryOnly, regex: globToRegex(pattern) });
  }
  return success({ rules });
}

/** Whether the entry at `path` (relative, slash-separated) is ignored. */
export function isIgnored(rules: IgnoreRules, path: string, isDirectory: boolean): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  for (const rule of rules.rules) {
    if (rule.directoryOnly && !isDirectory) continue;
    if (rule.regex.test(rule.anchored ? path : name)) return true;
  }
  return false;
}
