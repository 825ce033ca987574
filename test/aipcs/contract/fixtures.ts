// Synthetic manifest fixtures for the contract tests, written as JSON text and
// parsed losslessly so integers arrive as bigint exactly as tool arguments do.

import { parseJson, type JsonObject, type JsonValue } from '../../../src/common/json.js';

export function json(text: string): JsonValue {
  return parseJson(text);
}

export function jsonObject(text: string): JsonObject {
  return parseJson(text) as JsonObject;
}

/** Deep copy of a lossless value, so tests can mutate fixtures freely. */
export function clone<T extends JsonValue>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => clone(item)) as T;
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [key, member] of Object.entries(value)) {
      Object.defineProperty(out, key, { value: clone(member), enumerable: true, writable: true, configurable: true });
    }
    return out as T;
  }
  return value;
}

export const SERVER_MANAGED_JSON = `
  {"name": "id", "type": "uuid", "required": true, "primary_key": true},
  {"name": "owner_id", "type": "string", "required": true},
  {"name": "created_at", "type": "datetime", "required": true},
  {"name": "updated_at", "type": "datetime", "required": true},
  {"name": "created_via", "type": "string", "required": true},
  {"name": "record_version", "type": "integer", "required": true}`;

/** The quick-start manifest of the reference's documentation, verbatim in substance. */
export const QUICKSTART_MANIFEST_TEXT = `{
  "manifest_version": 2,
  "schema_version": 1,
  "entities": [
    {
      "name": "note",
      "attributes": [
        {"name": "id", "type": "uuid", "required": true, "primary_key": true},
        {"name": "owner_id", "type": "string", "required": true},
        {"name": "created_at", "type": "datetime", "required": true},
        {"name": "updated_at", "type": "datetime", "required": true},
        {"name": "created_via", "type": "string", "required": true},
        {"name": "record_version", "type": "integer", "required": true},
        {"name": "title", "type": "string", "required": true},
        {"name": "status", "type": "string", "required": true},
        {"name": "tags", "type": "string_list", "retrieval_mode": "membership"},
        {"name": "detail", "type": "string", "retrieval_mode": "annotation"}
      ]
    }
  ],
  "relationships": [],
  "indices": [
    {"name": "note_status_idx", "entity": "note", "fields": ["status"]}
  ],
  "query_patterns": ["Find notes by exact status or tag membership."],
  "discovery_facets": [{"entity": "note", "field": "status"}],
  "retrieval_guidance": "Search exact status or one tag before broad listing.",
  "migration_history": []
}`;

export function quickstartManifest(): JsonObject {
  return jsonObject(QUICKSTART_MANIFEST_TEXT);
}

/**
 * A richer valid manifest: two related entities, every attribute type,
 * allowed values of each kind, recognised authority fields, facets and
 * a unique index.
 */
export const PROJECT_MANIFEST_TEXT = `{
  "manifest_version": 2,
  "schema_version": 1,
  "entities": [
    {
      "name": "project",
      "description": "A unit of work the agent tracks.",
      "attributes": [${SERVER_MANAGED_JSON},
        {"name": "slug", "type": "string", "required": true, "description": "Stable short name."},
        {"name": "priority", "type": "integer", "allowed_values": [1, 2, 3]},
        {"name": "active", "type": "boolean", "allowed_values": [true]}
      ]
    },
    {
      "name": "decision",
      "attributes": [${SERVER_MANAGED_JSON},
        {"name": "project_id", "type": "uuid", "required": true},
        {"name": "title", "type": "string", "required": true},
        {"name": "status", "type": "string", "allowed_values": ["proposed", "accepted", "superseded"]},
        {"name": "confidence", "type": "number", "allowed_values": [0.5, 1.0, 1]},
        {"name": "valid_until", "type": "datetime"},
        {"name": "superseded_by", "type": "uuid"},
        {"name": "source_ref", "type": "string"},
        {"name": "provenance_source", "type": "string"},
        {"name": "tags", "type": "string_list", "allowed_values": ["a", "b"], "retrieval_mode": "membership"},
        {"name": "notes", "type": "string_list"},
        {"name": "rationale", "type": "string", "retrieval_mode": "annotation"}
      ]
    }
  ],
  "relationships": [
    {"name": "decision_project_fk", "from": {"entity": "decision", "field": "project_id"}, "to": {"entity": "project", "field": "id"}, "on_delete": "restrict"}
  ],
  "indices": [
    {"name": "project_slug_idx", "entity": "project", "fields": ["slug"], "unique": true},
    {"name": "decision_status_idx", "entity": "decision", "fields": ["project_id", "status"]}
  ],
  "query_patterns": ["Find decisions of one project by status."],
  "discovery_facets": [{"entity": "decision", "field": "status"}, {"entity": "decision", "field": "tags"}, {"entity": "project", "field": "created_at"}],
  "retrieval_guidance": null,
  "migration_history": []
}`;

export function projectManifest(): JsonObject {
  return jsonObject(PROJECT_MANIFEST_TEXT);
}
