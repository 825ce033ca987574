// Domain-field sets of records and history snapshots checked against the
// service's manifest, as an import must (operations spec §5.9 step 3, contract
// §4.3 and §6.3): declared domain keys only, required ones present and
// non-null, each value in its type's domain and allowed values, ≤64 KiB.
// Pure; the manifest comes validated from src/aipcs/contract.

import { renderJson, isJsonObject, type JsonValue } from '../../common/json.js';
import { isZeroOffsetDatetime } from '../contract/iso-datetime.js';
import type { AttributeDefinition, ManifestV2 } from '../contract/manifest/types.js';
import { isServerManagedField } from '../contract/manifest/types.js';
import { compareNumbers, isCanonicalUuid, utf8Length } from '../contract/schema-check.js';
import type { FieldSet, FieldValue } from './content.js';
import { BundleInvalidError } from './errors.js';
import { codePointLength } from '../../common/code-points.js';

const MAX_FIELD_SET_BYTES = 65_536;
const MAX_STRING_BYTES = 16_384;
const MAX_LIST_ITEMS = 256;
const MAX_LIST_ITEM_CHARS = 256;
/**
 * Below this many bytes a line cannot hold a field set over 64 KiB even in
 * the contract's measure (which may write each number two bytes longer, `1`
 * as `1.0`, and every number costs at least six bytes in the line), so the
 * exact measure is skipped.
 */
const SIZE_CHECK_THRESHOLD = 40_000;

export interface EntityFieldRules {
  readonly name: string;
  readonly domain: ReadonlyMap<string, AttributeDefinition>;
  readonly required: readonly string[];
}

export function compileEntityRules(manifest: ManifestV2): ReadonlyMap<string, EntityFieldRules> {
  const rules = new Map<string, EntityFieldRules>();
  for (const entity of manifest.entities) {
    const domain = new Map<string, AttributeDefinition>();
    for (const attribute of entity.attributes) if (!isServerManagedField(attribute.name)) domain.set(attribute.name, attribute);
    const required = [...domain.values()].filter((attribute) => attribute.required).map((attribute) => attribute.name);
    rules.set(entity.name, { name: entity.name, domain, required });
  }
  return rules;
}

function validText(value: string): boolean {
  return !value.includes('\u0000') && utf8Length(value) <= MAX_STRING_BYTES;
}

const invalid = (): never => {
  throw new BundleInvalidError('record_fields_invalid');
};

function isAllowed(attribute: AttributeDefinition, value: string | bigint | number | boolean): boolean {
  const allowed = attribute.allowed_values;
  if (allowed === null) return true;
  return allowed.some((member) => {
    const numeric = (v: unknown): v is number | bigint => typeof v === 'number' || typeof v === 'bigint';
    return numeric(member) && numeric(value) ? compareNumbers(member, value) === 0 : member === value;
  });
}

/**
 * A `number` field holds a binary64, and canonical JSON writes an integral
 * one without a fraction, so it reads back as an integer token. Such a token
 * is accepted only when it is exactly the canonical text of a binary64, which
 * keeps a re-export byte-identical.
 */
function numberFieldValue(value: JsonValue): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'bigint') {
    const asNumber = Number(value);
    if (String(asNumber) === value.toString()) return asNumber;
  }
  return invalid();
}

function checkValue(attribute: AttributeDefinition, value: JsonValue): FieldValue {
  switch (attribute.type) {
    case 'string':
      if (typeof value !== 'string' || !validText(value)) invalid();
      break;
    case 'integer':
      // The line parser already bounded every integer to signed 64 bits.
      if (typeof value !== 'bigint') invalid();
      break;
    case 'number':
      value = numberFieldValue(value);
      break;
    case 'boolean':
      if (typeof value !== 'boolean') invalid();
      break;
    case 'datetime':
      if (typeof value !== 'string' || !validText(value) || !isZeroOffsetDatetime(value)) invalid();
      break;
    case 'uuid':
      if (!isCanonicalUuid(value)) invalid();
      break;
    case 'string_list': {
      if (!Array.isArray(value) || value.length > MAX_LIST_ITEMS) return invalid();
      const seen = new Set<string>();
      for (const item of value) {
        if (typeof item !== 'string' || item.length === 0 || item.includes('\u0000') || codePointLength(item) > MAX_LIST_ITEM_CHARS) invalid();
        const text = item as string;
        if (seen.has(text) || !isAllowed(attribute, text)) invalid();
        seen.add(text);
      }
      return value as string[];
    }
  }
  if (!isAllowed(attribute, value as string | bigint | number | boolean)) invalid();
  return value as FieldValue;
}

/**
 * Checks one field set against its entity and returns it as stored values
 * (integral tokens in `number` fields become numbers). `lineBytes` is the
 * size of the line it came from, to skip the exact size measure when small.
 */
export function decodeFieldSet(entity: EntityFieldRules, raw: JsonValue | undefined, lineBytes: number): FieldSet {
  if (!isJsonObject(raw ?? null)) return invalid();
  const source = raw as Readonly<Record<string, JsonValue>>;
  // Without a prototype: a field left out must read as undefined, also one
  // named `constructor` (a valid identifier a plain object inherits), here
  // and wherever the set goes (staging, content rules, re-observation).
  const out: Record<string, FieldValue> = Object.create(null) as Record<string, FieldValue>;
  for (const name of Object.keys(source)) {
    const attribute = entity.domain.get(name);
    if (attribute === undefined) return invalid();
    const value = source[name] as JsonValue;
    if (value === null) {
      if (attribute.required) invalid();
      out[name] = null;
    } else {
      out[name] = checkValue(attribute, value);
    }
  }
  for (const name of entity.required) if (out[name] === undefined) invalid();
  if (lineBytes > SIZE_CHECK_THRESHOLD && fieldSetContractBytes(out) > MAX_FIELD_SET_BYTES) invalid();
  return out;
}

/**
 * Contract §6.3 measure (compact, sorted keys, non-ASCII literal, numbers of
 * `number` fields as floats) of the values a field set holds, its nulls
 * left out. A write bounds the complete set, nulls included, but an evolve
 * later appends fields that are null in every existing record and snapshot,
 * and the store keeps those past 64 KiB; what it held when written, and
 * still holds, is the set without nulls.
 */
export function fieldSetContractBytes(fields: FieldSet): number {
  const values: Record<string, FieldValue> = {};
  for (const name of Object.keys(fields)) {
    const value = fields[name];
    // Field names are manifest identifiers (never `__proto__`).
    if (value !== null && value !== undefined) values[name] = value;
  }
  return utf8Length(renderJson(values, { keyOrder: 'codepoint', asciiOnly: false, floatStyle: 'lossless' }));
}
