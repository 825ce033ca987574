// The text a record or history line's digest covers, rendered straight from
// the member (operations spec §5.3-§5.4): the same bytes as canonicalJson of
// the frame object payload-codec builds (a property test compares them),
// without building that object or sorting the keys it already has in
// canonical order. Strings go through JSON.stringify, which writes exactly
// the profile's escapes for any text without a lone surrogate; text with a
// surrogate, and any value of an unexpected type, take the general
// rendering, which also refuses what has no canonical form.

import { inUtf16Order } from '../../common/json.js';
import type { BundleHistoryEvent, BundleRecord, FieldSet } from './content.js';
import { encodeCanonical } from './canonical-json.js';
import { BundleInvalidError } from './errors.js';
import { encodeTime } from './payload-codec.js';

const SURROGATE = /[\ud800-\udfff]/;
/** What a string literal cannot hold as it is: the quote, the backslash, controls; and surrogates, which go the careful way. */
const NOT_PLAIN = /["\\\u0000-\u001f\ud800-\udfff]/;

function quote(value: unknown): string {
  if (typeof value !== 'string') return encodeCanonical(value);
  // Most texts need no escape at all: their literal is the text in quotes.
  if (!NOT_PLAIN.test(value)) return `"${value}"`;
  return SURROGATE.test(value) ? encodeCanonical(value) : JSON.stringify(value);
}

function fieldValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new BundleInvalidError('unrepresentable_value');
      return Object.is(value, -0) ? '0' : String(value);
    case 'undefined':
      return 'null';
    default:
      break;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + fieldValue(value[i]);
    return out + ']';
  }
  return encodeCanonical(value);
}

/** How a field set with these keys, in this order, renders: the keys in UTF-16 order, each with its `,"key":` text. */
interface KeyPlan {
  readonly keys: readonly string[];
  readonly sorted: readonly string[];
  readonly prefixes: readonly string[];
}

/**
 * The plans of the key lists seen last, most recent first: the field sets
 * of one entity come with the same keys in the same order, so their keys
 * are sorted and quoted once, not per line.
 */
const keyPlans: KeyPlan[] = [];
const KEY_PLANS_KEPT = 16;

function keyPlan(keys: readonly string[]): KeyPlan {
  search: for (const plan of keyPlans) {
    if (plan.keys.length !== keys.length) continue;
    for (let i = 0; i < keys.length; i++) if (plan.keys[i] !== keys[i]) continue search;
    return plan;
  }
  const sorted = inUtf16Order([...keys]);
  const plan: KeyPlan = { keys, sorted, prefixes: sorted.map((key, i) => (i > 0 ? ',' : '') + quote(key) + ':') };
  if (keyPlans.length >= KEY_PLANS_KEPT) keyPlans.pop();
  keyPlans.unshift(plan);
  return plan;
}

/** A field set as canonical JSON (keys in UTF-16 order, absent values as null, as payload-codec copies them). */
function fieldSet(fields: FieldSet): string {
  const plan = keyPlan(Object.keys(fields));
  const keys = plan.sorted;
  const prefixes = plan.prefixes;
  let out = '{';
  for (let i = 0; i < keys.length; i++) out += (prefixes[i] as string) + fieldValue(fields[keys[i] as string]);
  return out + '}';
}

/** quote() of the few texts every line repeats (entity names, created_via, event kinds), kept once computed. */
const quotedNames = new Map<string, string>();

function quoteName(value: string): string {
  let quoted = quotedNames.get(value);
  if (quoted === undefined) {
    quoted = quote(value);
    if (quotedNames.size >= 256) quotedNames.clear();
    quotedNames.set(value, quoted);
  }
  return quoted;
}

/** canonicalJson({ kind: 'record', ordinal, payload: encodeRecord(record) }). */
export function renderRecordCovered(ordinal: number, record: BundleRecord): string {
  const createdAt = encodeTime(record.createdAt);
  const updatedAt = encodeTime(record.updatedAt);
  return (
    `{"kind":"record","ordinal":${ordinal},"payload":{"created_at":"${createdAt}","created_via":${quoteName(record.createdVia)},"entity_name":${quoteName(record.entityName)}` +
    `,"fields":${fieldSet(record.fields)},"record_id":${quote(record.recordId)},"record_version":${fieldValue(record.recordVersion)},"updated_at":"${updatedAt}"}}`
  );
}

/** canonicalJson({ kind: 'history', ordinal, payload: encodeHistory(event) }). */
export function renderHistoryCovered(ordinal: number, event: BundleHistoryEvent): string {
  const occurredAt = encodeTime(event.occurredAt);
  const after = event.after === null ? 'null' : fieldSet(event.after);
  const before = event.before === null ? 'null' : fieldSet(event.before);
  return (
    `{"kind":"history","ordinal":${ordinal},"payload":{"after":${after},"before":${before},"entity_name":${quoteName(event.entityName)},"kind":${quoteName(event.kind)}` +
    `,"occurred_at":"${occurredAt}","record_id":${quote(event.recordId)},"record_version":${fieldValue(event.recordVersion)}}}`
  );
}
