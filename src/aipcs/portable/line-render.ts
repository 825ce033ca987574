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

function quote(value: unknown): string {
  return typeof value === 'string' && !SURROGATE.test(value) ? JSON.stringify(value) : encodeCanonical(value);
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

/** A field set as canonical JSON (keys in UTF-16 order, absent values as null, as payload-codec copies them). */
function fieldSet(fields: FieldSet): string {
  const keys = inUtf16Order(Object.keys(fields));
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    out += (i > 0 ? ',' : '') + quote(key) + ':' + fieldValue(fields[key]);
  }
  return out + '}';
}

/** canonicalJson({ kind: 'record', ordinal, payload: encodeRecord(record) }). */
export function renderRecordCovered(ordinal: number, record: BundleRecord): string {
  const createdAt = encodeTime(record.createdAt);
  const updatedAt = encodeTime(record.updatedAt);
  return (
    `{"kind":"record","ordinal":${ordinal},"payload":{"created_at":"${createdAt}","created_via":${quote(record.createdVia)},"entity_name":${quote(record.entityName)}` +
    `,"fields":${fieldSet(record.fields)},"record_id":${quote(record.recordId)},"record_version":${fieldValue(record.recordVersion)},"updated_at":"${updatedAt}"}}`
  );
}

/** canonicalJson({ kind: 'history', ordinal, payload: encodeHistory(event) }). */
export function renderHistoryCovered(ordinal: number, event: BundleHistoryEvent): string {
  const occurredAt = encodeTime(event.occurredAt);
  const after = event.after === null ? 'null' : fieldSet(event.after);
  const before = event.before === null ? 'null' : fieldSet(event.before);
  return (
    `{"kind":"history","ordinal":${ordinal},"payload":{"after":${after},"before":${before},"entity_name":${quote(event.entityName)},"kind":${quote(event.kind)}` +
    `,"occurred_at":"${occurredAt}","record_id":${quote(event.recordId)},"record_version":${fieldValue(event.recordVersion)}}}`
  );
}
