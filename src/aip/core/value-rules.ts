// Value rules shared by every schema (spec section 3): IDs, ID lists, times,
// nonempty text with the seed's exact White_Space set, and paths. Pure
// predicates over JavaScript values; no knowledge of objects or storage.
import { compareUtf8 } from './cbor-profile.js';

const ID_PATTERN = /^[0-9a-f]{64}$/;

export function isId(value: string): boolean {
  return value.length === 64 && ID_PATTERN.test(value);
}

/** The sorted, duplicate-free copy a writer should store in an IDs field. */
export function sortedIds(values: Iterable<string>): string[] {
  return [...new Set(values)].sort(compareUtf8);
}

// The 25 code points of Unicode White_Space, exactly as the seed lists them.
const WHITE_SPACE: ReadonlySet<number> = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
  0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

/** True when the text holds a code point outside White_Space (U+200B and U+FEFF count as content). */
export function isNonemptyText(value: string): boolean {
  for (const char of value) {
    if (!WHITE_SPACE.has(char.codePointAt(0) as number)) return true;
  }
  return false;
}

const TIME_PATTERN = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{9}Z$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** `YYYY-MM-DDTHH:MM:SS.fffffffffZ`, a real proleptic Gregorian date, no leap second. */
export function isTime(value: string): boolean {
  const match = TIME_PATTERN.exec(value);
  if (!match) return false;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  return (
    month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) && hour <= 23 && minute <= 59 && second <= 59
  );
}

/** Formats a millisecond epoch time; digits beyond the clock's precision are zeros. */
export function formatTime(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  return `${iso.slice(0, 19)}.${iso.slice(20, 23)}000000Z`;
}

export type PathProblem = 'empty' | 'empty_component' | 'dot_component' | 'backslash' | 'nul' | 'top_level_aip';

export function pathProblem(value: string): PathProblem | undefined {
  if (value.length === 0) return 'empty';
  if (value.includes('\\')) return 'backslash';
  if (value.includes('\0')) return 'nul';
  const components = value.split('/');
  for (const component of components) {
    if (component === '') return 'empty_component';
    if (component === '.' || component === '..') return 'dot_component';
  }
  if (components[0] === '.aip') return 'top_level_aip';
  return undefined;
}

export function isPath(value: string): boolean {
  return pathProblem(value) === undefined;
}

export const PATH_PROBLEM_TEXT: Readonly<Record<PathProblem, string>> = {
  empty: 'is empty',
  empty_component: 'has an empty component',
  dot_component: 'has a . or .. component',
  backslash: 'contains a backslash',
  nul: 'contains U+0000',
  top_level_aip: 'is under the top-level .aip',
};

/**
 * A pair (ancestor, descendant) among the paths, if any path is an ancestor
 * of another: the first descendant in code unit order, with its ancestor.
 * Sorted, every path between an ancestor and its descendant starts with the
 * ancestor, so a stack of the earlier paths that prefix the current one
 * finds a conflict in one pass, in time linear in the paths' total length
 * (after the sort). Looking up each ancestor prefix of each path instead
 * hashes the square of a path's length per path: minutes for a 64 MiB state
 * of long, deep paths.
 */
export function findPathConflict(paths: Iterable<string>): [string, string] | undefined {
  const sorted = [...new Set(paths)].sort();
  const prefixes: string[] = [];
  for (const path of sorted) {
    while (prefixes.length > 0 && !path.startsWith(prefixes[prefixes.length - 1] as string)) prefixes.pop();
    // Only the longest prefix can be an ancestor: were a shorter one, it would
    // also be an ancestor of the longer one, found when that one came.
    const longest = prefixes[prefixes.length - 1];
    if (longest !== undefined && path.charCodeAt(longest.length) === 0x2f) return [longest, path];
    prefixes.push(path);
  }
  return undefined;
}

/** The three absolute forms of spec 4.7 rule 2, each with a nonempty remainder, on any host. */
export function isAbsoluteExecutable(value: string): boolean {
  if (value.length >= 2 && value[0] === '/') return true;
  if (value.length >= 4 && /^[A-Za-z]:[/\\]/.test(value)) return true;
  return value.length >= 3 && value.startsWith('\\\\');
}
