// Pure record rules of contract §4.3 and §6.3: value domains per field type,
// allowed values, required fields, size bounds measured the contract's way,
// the complete field set, and the public projection of a record. Every
// failure here is a semantic `validation_failed` with empty issues.

import { renderJson, type JsonObject, type JsonValue } from '../../common/json.js';
import { AipcsError } from '../contract/error-codes.js';
import { isZeroOffsetDatetime } from '../contract/iso-datetime.js';
import type { AttributeDefinition, EntityDefinition, ManifestV2 } from '../contract/manifest/types.js';
import { isServerManagedField } from '../contract/manifest/types.js';
import { compareNumbers, isCanonicalUuid, trimContractString } from '../contract/schema-check.js';
import type { FieldSet, FieldValue, StoredHistoryEvent, StoredRecord } from './ports.js';
import { formatTimestamp } from './time.js';
import { codePointLength } from '../../common/code-points.js';

export const MAX_RECORD_BYTES = 65536;
export const MAX_STRING_BYTES = 16384;
export const MAX_LIST_ITEMS = 256;
export const MAX_LIST_ITEM_CHARS = 256;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const SAFE_FLOAT_INT = 2n ** 53n;

const invalid = (): AipcsError => new AipcsError('validation_failed');

export function findEntity(manifest: ManifestV2, entityName: string): EntityDefinition {
  const entity = manifest.entities.find((candidate) => candidate.name === entityName);
  if (!entity) throw invalid();
  return entity;
}

export function domainAttributes(entity: EntityDefinition): AttributeDefinition[] {
  return entity.attributes.filter((attribute) => !isServerManagedField(attribute.name));
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function validString(value: string): boolean {
  return !value.includes('\u0000') && utf8Length(value) <= MAX_STRING_BYTES;
}

/** Checks one non-null value against its attribute; returns the value as stored (number fields as floats). */
export function checkFieldValue(attribute: AttributeDefinition, value: JsonValue): FieldValue {
  switch (attribute.type) {
    case 'string':
      if (typeof value !== 'string' || !validString(value)) throw invalid();
      break;
    case 'integer':
      if (typeof value !== 'bigint' || value < INT64_MIN || value > INT64_MAX) throw invalid();
      break;
    case 'number':
      if (typeof value === 'bigint') {
        if (value < -SAFE_FLOAT_INT || value > SAFE_FLOAT_INT) throw invalid();
        value = Number(value);
      } else if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw invalid();
      } else if (Object.is(value, -0)) {
        // Stored and answered as 0.0: SQLite's REAL column drops the sign, so
        // every read and both backends agree (decisions-aipcs-contract.md).
        value = 0;
      }
      break;
    case 'boolean':
      if (typeof value !== 'boolean') throw invalid();
      break;
    case 'datetime':
      if (typeof value !== 'string' || !validString(value) || !isZeroOffsetDatetime(value)) throw invalid();
      break;
    case 'uuid':
      if (!isCanonicalUuid(value)) throw invalid();
      break;
    case 'string_list': {
      if (!Array.isArray(value) || value.length > MAX_LIST_ITEMS) throw invalid();
      const seen = new Set<string>();
      for (const item of value) {
        if (typeof item !== 'string' || item.length === 0 || item.includes('\u0000') || codePointLength(item) > MAX_LIST_ITEM_CHARS || seen.has(item)) throw invalid();
        seen.add(item);
      }
      checkAllowed(attribute, value as string[]);
      return value as string[];
    }
  }
  checkAllowed(attribute, [value as string | bigint | number | boolean]);
  return value as FieldValue;
}

function allowedEquals(a: string | bigint | number | boolean, b: string | bigint | number | boolean): boolean {
  const numeric = (v: unknown): v is number | bigint => typeof v === 'number' || typeof v === 'bigint';
  if (numeric(a) && numeric(b)) return compareNumbers(a, b) === 0;
  return a === b;
}

function checkAllowed(attribute: AttributeDefinition, values: readonly (string | bigint | number | boolean)[]): void {
  const allowed = attribute.allowed_values;
  if (allowed === null) return;
  for (const value of values) {
    if (!allowed.some((member) => allowedEquals(member, value))) throw invalid();
  }
}

/** Validates supplied fields (create `record` or update `updates`) against the entity's domain fields. */
export function checkSuppliedFields(entity: EntityDefinition, supplied: JsonObject): Map<string, FieldValue> {
  const attributes = new Map(domainAttributes(entity).map((attribute) => [attribute.name, attribute]));
  const checked = new Map<string, FieldValue>();
  for (const [name, value] of Object.entries(supplied)) {
    const attribute = attributes.get(name);
    if (!attribute) throw invalid();
    if (value === null) {
      if (attribute.required) throw invalid();
      checked.set(name, null);
      continue;
    }
    checked.set(name, checkFieldValue(attribute, value));
  }
  return checked;
}

/** The complete field set: every domain field in manifest order, null when absent; required ones present. */
export function completeFieldSet(entity: EntityDefinition, values: ReadonlyMap<string, FieldValue> | FieldSet): FieldSet {
  const get = (name: string): FieldValue | undefined => (values instanceof Map ? values.get(name) : (values as FieldSet)[name]);
  const fields: Record<string, FieldValue> = {};
  for (const attribute of domainAttributes(entity)) {
    const value = get(attribute.name) ?? null;
    if (attribute.required && value === null) throw invalid();
    fields[attribute.name] = value;
  }
  return fields;
}

/** Size in bytes the contract's way: compact, sorted keys, non-ASCII unescaped, Python float text. */
export function contractByteSize(value: unknown): number {
  return utf8Length(renderJson(value, { keyOrder: 'codepoint', asciiOnly: false, floatStyle: 'lossless' }));
}

export function checkRecordSize(value: unknown): void {
  if (contractByteSize(value) > MAX_RECORD_BYTES) throw invalid();
}

/** Stable text of a value for fingerprints: sorted keys, ASCII, integers and floats distinct. */
export function fingerprintText(value: unknown): string {
  return renderJson(value, { keyOrder: 'utf16', asciiOnly: true, floatStyle: 'lossless' });
}

// ---------------------------------------------------------------------------
// Public projections (contract §6.2, §6.11)

function publicValue(value: FieldValue): JsonValue {
  if (typeof value === 'string') return trimContractString(value);
  if (Array.isArray(value)) return value.map((item: string) => trimContractString(item));
  return value as JsonValue;
}

/** Fields with keys in code-point order and strings trimmed, as the reference emits them. */
export function publicFields(fields: FieldSet): JsonObject {
  const out: JsonObject = {};
  for (const name of Object.keys(fields).sort()) out[name] = publicValue(fields[name] ?? null);
  return out;
}

export function recordDocument(entityName: string, record: StoredRecord): JsonObject {
  return {
    entity_name: entityName,
    id: record.id,
    record_version: record.recordVersion,
    created_at: formatTimestamp(record.createdAt),
    updated_at: formatTimestamp(record.updatedAt),
    created_via: record.createdVia,
    fields: publicFields(record.fields),
  };
}

/**
 * A history event of `entity`. Snapshots are read against the current
 * manifest like records are: fields appended by a later evolve read as null
 * (contract §6.3: snapshots are complete field sets; §4.11).
 */
export function historyEventDocument(entity: EntityDefinition, event: StoredHistoryEvent): JsonObject {
  const snapshot = (fields: FieldSet | null): JsonObject | null => {
    if (fields === null) return null;
    const complete: Record<string, FieldValue> = {};
    // Own members only: a stored snapshot is a plain object, and a field it
    // lacks named `constructor` would otherwise be read from Object.prototype.
    for (const attribute of domainAttributes(entity)) complete[attribute.name] = Object.hasOwn(fields, attribute.name) ? (fields[attribute.name] ?? null) : null;
    return { fields: publicFields(complete) };
  };
  return {
    entity_name: event.entityName,
    id: event.recordId,
    record_version: event.recordVersion,
    kind: event.kind,
    occurred_at: formatTimestamp(event.occurredAt),
    before: snapshot(event.before),
    after: snapshot(event.after),
  };
}

/** Fields as plain lossless JSON (for snapshots and fingerprints). */
export function fieldSetJson(fields: FieldSet): JsonObject {
  const out: JsonObject = {};
  for (const [name, value] of Object.entries(fields)) out[name] = Array.isArray(value) ? [...(value as string[])] : (value as JsonValue);
  return out;
}
