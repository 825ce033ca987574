// A small JSON Schema validator for tool arguments, over lossless JSON values.
// It covers the keywords our tool catalogues use and reports issues in the MCP
// contracts' vocabulary (field_required, unknown_field, invalid_length,
// invalid_value) with the path of each problem. No I/O, no input echo.

import { isJsonObject, type JsonValue } from './json.js';
import { codePointLength } from './code-points.js';

export interface JsonSchema {
  readonly type?: JsonSchemaType | readonly JsonSchemaType[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly items?: JsonSchema;
  readonly enum?: readonly (string | number | boolean | null)[];
  readonly const?: string | number | boolean | null;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly minimum?: number | string;
  readonly maximum?: number | string;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly uniqueItems?: boolean;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly anyOf?: readonly JsonSchema[];
  readonly $ref?: string;
  readonly $defs?: Readonly<Record<string, JsonSchema>>;
  readonly description?: string;
  readonly title?: string;
  readonly default?: unknown;
  readonly format?: string;
}

export type JsonSchemaType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'null';

export type SchemaIssueCode = 'field_required' | 'unknown_field' | 'invalid_length' | 'invalid_value';

export interface SchemaIssue {
  readonly code: SchemaIssueCode;
  readonly path: readonly (string | number)[];
}

export const MAX_SCHEMA_ISSUES = 32;

/** Validates `value` against `schema`; returns at most MAX_SCHEMA_ISSUES issues in validation order. */
export function validateJsonSchema(schema: JsonSchema, value: JsonValue, root: JsonSchema = schema): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  check(schema, value, [], root, issues, new Map());
  return issues.slice(0, MAX_SCHEMA_ISSUES);
}

function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  const ref = schema.$ref;
  if (ref === undefined) return schema;
  const name = ref.startsWith('#/$defs/') ? ref.slice('#/$defs/'.length) : undefined;
  const target = name === undefined ? undefined : root.$defs?.[name];
  if (target === undefined) throw new Error(`unresolvable schema reference ${ref}`);
  return target;
}

/** Whether a lossless value is of a JSON Schema type (integers are bigints; `1.0` is no integer). */
export function typeMatches(type: JsonSchemaType, value: JsonValue): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'integer':
      // Lossless input: integers are bigints; `1.0` arrives as a number and is no integer.
      return typeof value === 'bigint';
    case 'number':
      return typeof value === 'bigint' || typeof value === 'number';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isJsonObject(value);
  }
}

function compareNumeric(value: number | bigint, bound: number | string): number {
  if (typeof bound === 'string') {
    const b = BigInt(bound);
    if (typeof value === 'bigint') return value < b ? -1 : value > b ? 1 : 0;
    return value < Number(b) ? -1 : value > Number(b) ? 1 : 0;
  }
  const v = Number(value);
  return v < bound ? -1 : v > bound ? 1 : 0;
}

function sameValue(a: JsonValue, b: unknown): boolean {
  if (typeof a === 'bigint' && typeof b === 'number') return Number.isInteger(b) && a === BigInt(b);
  return a === b;
}

type PatternCache = Map<string, RegExp>;

function check(
  rawSchema: JsonSchema,
  value: JsonValue,
  path: (string | number)[],
  root: JsonSchema,
  issues: SchemaIssue[],
  patterns: PatternCache,
): void {
  if (issues.length >= MAX_SCHEMA_ISSUES) return;
  const schema = resolve(rawSchema, root);

  if (schema.anyOf) {
    // The first alternative whose type fits decides; nullable fields are the usual case.
    const fitting = schema.anyOf.find((alt) => {
      const resolved = resolve(alt, root);
      return resolved.type === undefined || [resolved.type].flat().some((t) => typeMatches(t as JsonSchemaType, value));
    });
    if (!fitting) {
      issues.push({ code: 'invalid_value', path: [...path] });
      return;
    }
    check(fitting, value, path, root, issues, patterns);
    return;
  }

  if (schema.type !== undefined) {
    const types = [schema.type].flat() as JsonSchemaType[];
    if (!types.some((t) => typeMatches(t, value))) {
      issues.push({ code: 'invalid_value', path: [...path] });
      return;
    }
  }
  if (schema.const !== undefined && !sameValue(value, schema.const)) {
    issues.push({ code: 'invalid_value', path: [...path] });
    return;
  }
  if (schema.enum !== undefined && !schema.enum.some((member) => sameValue(value, member))) {
    issues.push({ code: 'invalid_value', path: [...path] });
    return;
  }

  if (typeof value === 'string') {
    const length = codePointLength(value);
    if ((schema.minLength !== undefined && length < schema.minLength) || (schema.maxLength !== undefined && length > schema.maxLength)) {
      issues.push({ code: 'invalid_length', path: [...path] });
      return;
    }
    if (schema.pattern !== undefined) {
      let regex = patterns.get(schema.pattern);
      if (!regex) {
        regex = new RegExp(schema.pattern, 'u');
        patterns.set(schema.pattern, regex);
      }
      if (!regex.test(value)) issues.push({ code: 'invalid_value', path: [...path] });
    }
    return;
  }

  if (typeof value === 'number' || typeof value === 'bigint') {
    if ((schema.minimum !== undefined && compareNumeric(value, schema.minimum) < 0) || (schema.maximum !== undefined && compareNumeric(value, schema.maximum) > 0)) {
      issues.push({ code: 'invalid_value', path: [...path] });
    }
    return;
  }

  if (Array.isArray(value)) {
    if ((schema.minItems !== undefined && value.length < schema.minItems) || (schema.maxItems !== undefined && value.length > schema.maxItems)) {
      issues.push({ code: 'invalid_length', path: [...path] });
      return;
    }
    if (schema.items) {
      for (let i = 0; i < value.length && issues.length < MAX_SCHEMA_ISSUES; i++) {
        check(schema.items, value[i] as JsonValue, [...path, i], root, issues, patterns);
      }
    }
    if (schema.uniqueItems && new Set(value.map((item) => (typeof item === 'object' ? JSON.stringify(item) : `${typeof item}:${String(item)}`))).size !== value.length) {
      issues.push({ code: 'invalid_value', path: [...path] });
    }
    return;
  }

  if (isJsonObject(value)) {
    const keys = Object.keys(value);
    if ((schema.minProperties !== undefined && keys.length < schema.minProperties) || (schema.maxProperties !== undefined && keys.length > schema.maxProperties)) {
      issues.push({ code: 'invalid_length', path: [...path] });
      return;
    }
    const properties = schema.properties ?? {};
    const required = new Set(schema.required ?? []);
    for (const [name, propertySchema] of Object.entries(properties)) {
      if (!Object.hasOwn(value, name)) {
        if (required.has(name)) issues.push({ code: 'field_required', path: [...path, name] });
        continue;
      }
      check(propertySchema, value[name] as JsonValue, [...path, name], root, issues, patterns);
    }
    for (const name of required) {
      if (!Object.hasOwn(properties, name) && !Object.hasOwn(value, name)) issues.push({ code: 'field_required', path: [...path, name] });
    }
    const extra = schema.additionalProperties;
    for (const name of keys) {
      if (Object.hasOwn(properties, name)) continue;
      if (extra === false) issues.push({ code: 'unknown_field', path: [...path, name] });
      else if (typeof extra === 'object') check(extra, value[name] as JsonValue, [...path, name], root, issues, patterns);
      if (issues.length >= MAX_SCHEMA_ISSUES) return;
    }
  }
}
