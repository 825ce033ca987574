// Small builders for manifest documents in lossless form (integers as bigint),
// so each test states only the part of a manifest it is about.

import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { json, SERVER_MANAGED_JSON } from './fixtures.js';

export function serverManaged(): JsonObject[] {
  return json(`[${SERVER_MANAGED_JSON}]`) as JsonObject[];
}

export function attr(name: string, type: string, extra: JsonObject = {}): JsonObject {
  return { name, type, ...extra };
}

export function entity(name: string, domain: JsonObject[] = [attr('title', 'string')], extra: JsonObject = {}): JsonObject {
  return { name, attributes: [...serverManaged(), ...domain], ...extra };
}

export function manifest(entities: JsonValue[] = [entity('note')], extra: JsonObject = {}): JsonObject {
  return { manifest_version: 2n, schema_version: 1n, entities, ...extra };
}

export function relationship(name: string, from: [string, string], to: [string, string], extra: JsonObject = {}): JsonObject {
  return { name, from: { entity: from[0], field: from[1] }, to: { entity: to[0], field: to[1] }, on_delete: 'restrict', ...extra };
}

export function index(name: string, entityName: string, fields: string[], extra: JsonObject = {}): JsonObject {
  return { name, entity: entityName, fields, ...extra };
}

export function history(count: number): JsonObject[] {
  return Array.from({ length: count }, (_, i) => ({
    from_schema_version: BigInt(i + 1),
    to_schema_version: BigInt(i + 2),
    operations: [`step ${i + 1}`],
  }));
}

/** Two entities linked by an optional `project_id` reference, the common base of relationship tests. */
export function linkedManifest(extra: JsonObject = {}): JsonObject {
  return manifest(
    [
      entity('project'),
      entity('task', [attr('title', 'string'), attr('project_id', 'uuid'), attr('owner_ref', 'uuid'), attr('parent_id', 'uuid')]),
    ],
    extra,
  );
}
