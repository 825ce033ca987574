// The MCP `instructions` text (spec 5.2): core text, then every memory text,
// joined by blank lines, then one status line naming count and limit. Pure:
// callers read the files; this only assembles and bounds the text.

import { MAX_COMPRESS_ITEMS, MAX_INSTRUCTIONS_BYTES } from './limits.js';

export interface InstructionsInput {
  /** The core record's value.content.text, if it could be read. */
  readonly coreText: string | undefined;
  /** Memory texts in file-name (time) order. */
  readonly memoryTexts: readonly string[];
  /** Selected memory entries (the count the limit applies to). */
  readonly count: number;
  readonly limit: bigint;
  /** Files that could not be read or had the wrong shape. */
  readonly unreadable: number;
  /** Oldest files not read at all because of the read bound. */
  readonly notRead: number;
  readonly maxBytes?: number;
}

/** `[aigpt] memory records: {count}/{limit}` plus the over-limit request; shared with tool results. */
export function limitStatus(count: number, limit: bigint): string {
  const base = `[aigpt] memory records: ${count}/${limit}`;
  // Spec 5.2 names the limit; above compress's own ceiling (spec 8) that
  // request would be refused, so it names the ceiling instead.
  const accepted = limit < BigInt(MAX_COMPRESS_ITEMS) ? limit : BigInt(MAX_COMPRESS_ITEMS);
  return BigInt(count) > limit ? `${base}. Over the limit: call compress with at most ${accepted} consolidated items.` : base;
}

/** The status line plus the note on unreadable files; the instructions and read_memory end with it. */
export function memoryStatus(count: number, limit: bigint, unreadable: number): string {
  const line = limitStatus(count, limit);
  return unreadable > 0 ? `${line} ${unreadable} unreadable memory file(s) were skipped.` : line;
}

const SEPARATOR = '\n\n';
const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

export function buildInstructions(input: InstructionsInput): string {
  const maxBytes = input.maxBytes ?? MAX_INSTRUCTIONS_BYTES;
  // Empty texts are left out like the reference does; whitespace-only ones stay.
  const core = input.coreText !== undefined && input.coreText !== '' ? input.coreText : undefined;
  const memories = input.memoryTexts.filter((text) => text !== '');

  const statusFor = (omitted: number, coreTruncated: boolean): string => {
    let line = memoryStatus(input.count, input.limit, input.unreadable);
    if (omitted > 0) line += ` (${omitted} oldest memories omitted for size; use read_memory)`;
    if (coreTruncated) line += ' (core text truncated for size; use read_core)';
    return line;
  };

  const coreBytes = core === undefined ? 0 : bytes(core) + bytes(SEPARATOR);
  // A memory that would not fit even beside the core alone, under the
  // shortest status line (a file the reference, which bounds no text, wrote)
  // is left out by itself: dropping the oldest first would have dropped
  // every other memory before it. Nothing that could fit is left out here.
  const aloneLimit = maxBytes - coreBytes - bytes(statusFor(input.notRead, false));
  const fitting = memories.map((text) => ({ text, size: bytes(text) + bytes(SEPARATOR) })).filter(({ size }) => size <= aloneLimit);
  // Then the oldest are dropped until everything fits; sizes are summed once.
  let memoryBytes = fitting.reduce((sum, { size }) => sum + size, 0);
  const oversized = memories.length - fitting.length;
  let dropped = 0;
  while (dropped < fitting.length && coreBytes + memoryBytes + bytes(statusFor(oversized + dropped + input.notRead, false)) > maxBytes) {
    memoryBytes -= fitting[dropped]!.size;
    dropped++;
  }
  const omitted = oversized + dropped + input.notRead;
  let coreText = core;
  let coreTruncated = false;
  if (core !== undefined && coreBytes + memoryBytes + bytes(statusFor(omitted, false)) > maxBytes) {
    const room = maxBytes - bytes(statusFor(omitted, true)) - bytes(SEPARATOR);
    coreText = truncateUtf8(core, Math.max(0, room));
    coreTruncated = true;
  }
  const parts = [...(coreText === undefined ? [] : [coreText]), ...fitting.slice(dropped).map(({ text }) => text), statusFor(omitted, coreTruncated)];
  return parts.join(SEPARATOR);
}

/** The longest prefix of `text` within `maxBytes` of UTF-8, never splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (bytes(text) <= maxBytes) return text;
  let used = 0;
  let end = 0;
  for (const ch of text) {
    const size = bytes(ch);
    if (used + size > maxBytes) break;
    used += size;
    end += ch.length;
  }
  return text.slice(0, end);
}
