// The names retired from the public contract (§4.10) and the check that any
// object key anywhere in a lifecycle request uses one. The walk is iterative,
// so a hostile document cannot exhaust the stack; the request line's bound
// (8 MiB) bounds its work, so it never gives up before the last key.

import { isJsonObject, type JsonValue } from '../../common/json.js';

export const RETIRED_FIELD_NAMES: readonly string[] = [
  'tool_definitions',
  'tools',
  'aliases',
  'classification_confidence',
  'parent_service_id',
  'session_count',
  'endpoint',
  'endpoints',
  'database_url',
  'database_path',
  'dsn',
  'sqlite_path',
  'storage_path',
  'materialisation',
  'materialization',
];

const RETIRED: ReadonlySet<string> = new Set(RETIRED_FIELD_NAMES);

/**
 * Whether any object key in `value` (at any depth) is a retired name. Keys are
 * compared as sent (untrimmed), values are never inspected.
 */
export function containsRetiredKey(value: JsonValue): boolean {
  const stack: JsonValue[] = [value];
  while (stack.length > 0) {
    const node = stack.pop() as JsonValue;
    if (Array.isArray(node)) {
      for (const item of node) if (typeof item === 'object' && item !== null) stack.push(item);
    } else if (isJsonObject(node)) {
      for (const key of Object.keys(node)) {
        if (RETIRED.has(key)) return true;
        const member = node[key] as JsonValue;
        if (typeof member === 'object' && member !== null) stack.push(member);
      }
    }
  }
  return false;
}
