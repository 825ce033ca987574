// The JSON Schema subset of the AIPCS tool catalogue, and the checker that
// validates lossless arguments against it while normalising them: strings
// trimmed (contract §3.6), defaults materialised, keys in schema order.
// Cross-field rules attach as refiners to schema nodes; no rule lives here.

import { isJsonObject, type JsonObject, type JsonValue } from '../../common/json.js';
import { typeMatches } from '../../common/json-schema.js';
import type { IssueSink, PathSegment } from './issues.js';
import { codePointLength } from '../../common/code-points.js';

export type SchemaType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'null';

/** One schema node; numbers are JS numbers except bounds beyond 2^53 (bigint). */
export interface SchemaNode {
  readonly title?: string;
  readonly description?: string;
  readonly type?: SchemaType;
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean;
  readonly items?: SchemaNode;
  readonly anyOf?: readonly SchemaNode[];
  readonly $ref?: string;
  readonly $defs?: Readonly<Record<string, SchemaNode>>;
  readonly enum?: readonly (string | number | boolean | null)[];
  readonly const?: string | number | boolean | null;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly format?: 'uuid' | 'date-time';
  readonly minimum?: number | bigint;
  readonly maximum?: number | bigint;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly default?: JsonValue;
}

/**
 * A cross-field rule run on a node's normalised value once that value passed
 * the node's schema without issues (as a model validator would). It may
 * report issues and returns the (possibly rewritten) value.
 */
export type Refiner = (value: JsonValue, path: readonly PathSegment[], sink: IssueSink, raw: JsonValue) => JsonValue;

export interface CheckOptions {
  /** The document whose `$defs` resolve `$ref`s. */
  readonly root: SchemaNode;
  readonly refiners?: ReadonlyMap<SchemaNode, Refiner>;
}

// Unicode White_Space only (contract §3.6): the reference trims through
// pydantic's str_strip_whitespace, which is Rust's str::trim(), so the
// separators U+001C-U+001F that Python's str.strip() would also remove stay.
const LEADING_SPACE = /^\p{White_Space}+/u;
const TRAILING_SPACE = /\p{White_Space}+$/u;

export function trimContractString(text: string): string {
  return text.replace(LEADING_SPACE, '').replace(TRAILING_SPACE, '');
}

export const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Canonical form of contract §3.6: 36 chars, lowercase, hyphenated, not nil. */
export function isCanonicalUuid(value: unknown): value is string {
  return typeof value === 'string' && CANONICAL_UUID.test(value) && value !== NIL_UUID;
}

/**
 * Whether a string holds an unpaired surrogate (reachable only through a
 * `\uD800` escape). Such text has no UTF-8 form, so no store could keep it.
 */
export function hasLoneSurrogate(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return true;
    } else if (code >= 0xdc00 && code <= 0xdfff) {
      return true;
    }
  }
  return false;
}

/** UTF-8 size of well-formed text (lone surrogates count as the 3 bytes of U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Exact ordering of two JSON numbers whatever their representation. */
export function compareNumbers(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  const big = typeof a === 'bigint' ? a : (b as bigint);
  const num = typeof a === 'number' ? a : (b as number);
  let order: number;
  if (Number.isInteger(num)) {
    const asBig = BigInt(num);
    order = big < asBig ? -1 : big > asBig ? 1 : 0;
  } else {
    // A fractional number is below 2^53 in magnitude; rounding the bigint cannot flip the order.
    const asNum = Number(big);
    order = asNum < num ? -1 : asNum > num ? 1 : 0;
  }
  // No -0 for an equal pair: callers may compare the result with 0 exactly.
  return typeof a === 'bigint' || order === 0 ? order : -order;
}

/** Freezes a schema tree so no consumer can change the catalogue at run time. */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node !== null && typeof node === 'object' && !Object.isFrozen(node)) {
      Object.freeze(node);
      stack.push(...Object.values(node));
    }
  }
  return value;
}

/**
 * Defines a member without ever touching the prototype chain (`__proto__`,
 * the one name whose assignment calls a setter of Object.prototype); any
 * other name is assigned, which is several times faster in a large map.
 */
export function setMember(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

const PATTERNS = new Map<string, RegExp>();

function compiledPattern(pattern: string): RegExp {
  let regex = PATTERNS.get(pattern);
  if (regex === undefined) {
    regex = new RegExp(pattern, 'u');
    PATTERNS.set(pattern, regex);
  }
  return regex;
}

function resolve(node: SchemaNode, root: SchemaNode): SchemaNode {
  if (node.$ref === undefined) return node;
  const prefix = '#/$defs/';
  const name = node.$ref.startsWith(prefix) ? node.$ref.slice(prefix.length) : undefined;
  const target = name === undefined ? undefined : root.$defs?.[name];
  if (target === undefined) throw new Error('unresolvable schema reference');
  return target;
}

function typeFits(type: SchemaType | undefined, value: JsonValue): boolean {
  return type === undefined || typeMatches(type, value);
}

// A schema's integral number denotes a JSON integer: `const: 2` matches the
// token `2` only, never `2.0` or `true`.
function sameMember(value: JsonValue, member: string | number | boolean | null): boolean {
  if (typeof member === 'number') {
    if (Number.isInteger(member)) return typeof value === 'bigint' && value === BigInt(member);
    return typeof value === 'number' && value === member;
  }
  return value === member;
}

function cloneDefault(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(cloneDefault);
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const [key, member] of Object.entries(value)) setMember(out, key, cloneDefault(member));
    return out;
  }
  return value;
}

/**
 * Validates `value` at `path` against `schema`, reporting issues to `sink`,
 * and returns the normalised value. The result is meaningful only when no
 * issue was reported for this subtree.
 */
export function checkValue(
  schema: SchemaNode,
  value: JsonValue,
  path: readonly PathSegment[],
  sink: IssueSink,
  options: CheckOptions,
): JsonValue {
  const node = resolve(schema, options.root);
  const before = sink.total;
  let result = checkResolved(node, value, path, sink, options);
  if (sink.total === before && options.refiners) {
    for (const key of node === schema ? [node] : [node, schema]) {
      const refine = options.refiners.get(key);
      if (refine && sink.total === before) result = refine(result, path, sink, value);
    }
  }
  return result;
}

function checkResolved(
  node: SchemaNode,
  input: JsonValue,
  path: readonly PathSegment[],
  sink: IssueSink,
  options: CheckOptions,
): JsonValue {
  if (node.anyOf) {
    const fitting = node.anyOf.find((alternative) => typeFits(resolve(alternative, options.root).type, input));
    if (fitting === undefined) {
      sink.report('invalid_value', path);
      return input;
    }
    return checkValue(fitting, input, path, sink, options);
  }

  const value = typeof input === 'string' ? trimContractString(input) : input;
  if (!typeFits(node.type, value)) {
    sink.report('invalid_value', path);
    return value;
  }
  if (node.const !== undefined && !sameMember(value, node.const)) {
    sink.report('invalid_value', path);
    return value;
  }
  if (node.enum !== undefined && !node.enum.some((member) => sameMember(value, member))) {
    sink.report('invalid_value', path);
    return value;
  }

  if (typeof value === 'string') {
    const length = codePointLength(value);
    if (hasLoneSurrogate(value)) {
      sink.report('invalid_value', path);
    } else if ((node.minLength !== undefined && length < node.minLength) || (node.maxLength !== undefined && length > node.maxLength)) {
      sink.report('invalid_length', path);
    } else if (node.pattern !== undefined && !compiledPattern(node.pattern).test(value)) {
      sink.report('invalid_value', path);
    } else if (node.format === 'uuid' && !isCanonicalUuid(value)) {
      sink.report('invalid_value', path);
    }
    return value;
  }

  if (typeof value === 'number' || typeof value === 'bigint') {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      sink.report('invalid_value', path);
    } else if (
      (node.minimum !== undefined && compareNumbers(value, node.minimum) < 0) ||
      (node.maximum !== undefined && compareNumbers(value, node.maximum) > 0)
    ) {
      sink.report('invalid_value', path);
    }
    return value;
  }

  if (Array.isArray(value)) {
    // As pydantic-core checks a list: too many items is the only issue, found
    // before any item is walked; too few is reported only once every item
    // passed (five attributes, one of them invalid, report that attribute).
    if (node.maxItems !== undefined && value.length > node.maxItems) {
      sink.report('invalid_length', path);
      return value;
    }
    const before = sink.total;
    let out: JsonValue[] = value;
    if (node.items) {
      out = [];
      for (let i = 0; i < value.length; i++) {
        if (sink.full) return value;
        out.push(checkValue(node.items, value[i] as JsonValue, [...path, i], sink, options));
      }
    }
    if (node.minItems !== undefined && value.length < node.minItems && sink.total === before) sink.report('invalid_length', path);
    return out;
  }

  if (isJsonObject(value)) return checkObject(node, value, path, sink, options);
  return value;
}

function checkObject(
  node: SchemaNode,
  value: JsonObject,
  path: readonly PathSegment[],
  sink: IssueSink,
  options: CheckOptions,
): JsonValue {
  const keys = Object.keys(value);
  if ((node.minProperties !== undefined && keys.length < node.minProperties) || (node.maxProperties !== undefined && keys.length > node.maxProperties)) {
    sink.report('invalid_length', path);
    return value;
  }
  const properties = node.properties ?? {};
  const required = node.required ?? [];
  const out: JsonObject = {};
  // Declared properties first, in schema order (as the reference reports them).
  for (const [name, propertySchema] of Object.entries(properties)) {
    if (sink.full) return value;
    if (Object.hasOwn(value, name)) {
      setMember(out, name, checkValue(propertySchema, value[name] as JsonValue, [...path, name], sink, options));
    } else if (required.includes(name)) {
      sink.report('field_required', [...path, name]);
    } else {
      const fallback = propertySchema.default ?? resolve(propertySchema, options.root).default;
      if (fallback !== undefined) setMember(out, name, cloneDefault(fallback));
    }
  }
  // Then undeclared ones, in input order.
  for (const key of keys) {
    if (Object.hasOwn(properties, key)) continue;
    if (node.additionalProperties === false) {
      if (sink.full) return value;
      sink.report('unknown_field', [...path, key]);
    } else {
      setMember(out, key, value[key] as JsonValue);
    }
  }
  return out;
}
