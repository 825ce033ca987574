// How much contract text (ASCII-only, as `content[0].text` renders it) a list
// in a tool result may take. A result carries the envelope twice (text and
// structuredContent) and the JSON-RPC line escapes the text once more; the
// MCP TypeScript SDK client closes the connection on a line above 10 MiB,
// which lists within every contract bound could otherwise reach.

import type { JsonValue } from '../../common/json.js';
import { renderContractJson } from '../contract/envelope.js';

/**
 * At least the length of renderContractJson(value): a UTF-16 unit takes at
 * most six characters (`\uXXXX`), a number at most 24.
 */
function textLengthBound(value: JsonValue): number {
  if (typeof value === 'string') return 2 + 6 * value.length;
  if (value === null || typeof value !== 'object') return 24;
  let length = 2;
  if (Array.isArray(value)) {
    for (const item of value) length += textLengthBound(item) + 1;
    return length;
  }
  for (const key in value) length += 2 + 6 * key.length + 1 + textLengthBound(value[key] as JsonValue) + 1;
  return length;
}

/** A budget of contract text shared by the lists of one result. */
export class TextBudget {
  /** Exact size of the items measured so far. */
  private used = 0;
  /** Items kept on their size bound alone, measured only if a later list needs the exact total. */
  private unmeasured: JsonValue[] = [];
  private unmeasuredBound = 0;

  constructor(private readonly limit: number) {}

  /**
   * The leading items that still fit, in order (the separating comma counts);
   * with `atLeastOne`, the first item is kept whatever its size. A list whose
   * size bound fits is kept without rendering it to measure it: ordinary
   * lists are far below any budget, and the bound is never below the size.
   */
  prefix<T extends JsonValue>(items: readonly T[], atLeastOne = false): T[] {
    let bound = 0;
    for (const item of items) bound += textLengthBound(item) + 1;
    if (this.used + this.unmeasuredBound + bound <= this.limit) {
      this.unmeasured.push(...items);
      this.unmeasuredBound += bound;
      return [...items];
    }
    for (const item of this.unmeasured) this.used += renderContractJson(item).length + 1;
    this.unmeasured = [];
    this.unmeasuredBound = 0;
    const kept: T[] = [];
    for (const item of items) {
      const size = renderContractJson(item).length + 1;
      if (this.used + size > this.limit && !(atLeastOne && kept.length === 0)) break;
      this.used += size;
      kept.push(item);
    }
    return kept;
  }
}
