// `--format human` rendering (operations spec §1.3): `key: value` lines with
// dotted prefixes and list indices, refusing results outside the bounds
// (depth > 4, > 64 keys, > 100 items, unsafe keys) instead of printing them.
// Pure: returns text or a refusal; the caller decides what a refusal prints.

import { FloatValue, isPlainObject, pythonFloat, renderJson } from '../../common/json.js';
import type { CliErrorDocument } from './error-document.js';

/** A result value: lossless JSON (bigint integers) or plain numbers, with FloatValue marking floats. */
export type CliValue = null | boolean | string | number | bigint | FloatValue | readonly CliValue[] | CliObject;
export type CliObject = { readonly [key: string]: CliValue | undefined };

export type HumanRendering = { readonly ok: true; readonly text: string } | { readonly ok: false };

const SAFE_KEY = /^[a-z][a-z0-9_]{0,95}$/;
const MAX_DEPTH = 4;
const MAX_KEYS = 64;
const MAX_ITEMS = 100;

// Characters that would break the one-value-per-line layout, drive the
// terminal or hide text from the operator (controls, line/paragraph
// separators, and every format character: bidi overrides and marks,
// zero-width characters, the tag block). A string holding one is shown as a
// quoted JSON string, escaped, instead of raw.
const UNSAFE_FOR_TERMINAL = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

const JSON_OPTIONS = { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' } as const;

class Refusal {}

function isObject(value: CliValue): value is CliObject {
  return isPlainObject(value) && !(value instanceof FloatValue);
}

function isScalar(value: CliValue): boolean {
  return value === null || ['string', 'boolean', 'number', 'bigint'].includes(typeof value) || value instanceof FloatValue;
}

function finite(value: number): number {
  if (!Number.isFinite(value)) throw new Refusal();
  return value;
}

function scalarText(value: CliValue): string {
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'string') return UNSAFE_FOR_TERMINAL.test(value) ? renderJson(value, JSON_OPTIONS) : value;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isInteger(value) ? String(Object.is(value, -0) ? 0 : value) : pythonFloat(finite(value));
  if (value instanceof FloatValue) return pythonFloat(finite(value.value));
  throw new Refusal();
}

function renderObject(value: CliObject, prefix: string, depth: number, lines: string[]): void {
  const entries = Object.entries(value).filter((entry): entry is [string, CliValue] => entry[1] !== undefined);
  if (depth > MAX_DEPTH || entries.length > MAX_KEYS) throw new Refusal();
  for (const [key, item] of entries) {
    if (!SAFE_KEY.test(key)) throw new Refusal();
    const label = prefix + key;
    if (Array.isArray(item)) {
      renderList(item as readonly CliValue[], label, depth, lines);
    } else if (isObject(item)) {
      renderObject(item, `${label}.`, depth + 1, lines);
    } else {
      lines.push(`${label}: ${scalarText(item)}`);
    }
  }
}

function renderList(items: readonly CliValue[], label: string, depth: number, lines: string[]): void {
  if (items.length > MAX_ITEMS) throw new Refusal();
  if (items.every(isObject)) {
    if (items.length === 0) lines.push(`${label}: []`);
    items.forEach((entry, index) => renderObject(entry as CliObject, `${label}[${index}].`, depth + 1, lines));
    return;
  }
  if (!items.every(isScalar)) throw new Refusal();
  let text: string;
  try {
    text = renderJson(items, JSON_OPTIONS);
  } catch {
    throw new Refusal();
  }
  lines.push(`${label}: ${text}`);
}

/** The human lines of a success result (without a trailing newline), or a refusal. */
export function renderHumanResult(result: CliObject): HumanRendering {
  const lines: string[] = [];
  try {
    renderObject(result, '', 0, lines);
  } catch (error) {
    if (error instanceof Refusal) return { ok: false };
    throw error;
  }
  return { ok: true, text: lines.join('\n') };
}

/** `error [CODE]: MESSAGE`, then `- PATH: MESSAGE` per issue with its remediation indented below. */
export function renderHumanError(error: CliErrorDocument): string {
  const lines = [`error [${error.code}]: ${error.message}`];
  for (const issue of error.issues) {
    lines.push(`- ${issue.path}: ${issue.message}`);
    if (issue.remediation !== null) lines.push(`  ${issue.remediation}`);
  }
  return lines.join('\n');
}
