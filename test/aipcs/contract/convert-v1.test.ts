import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { renderContractJson } from '../../../src/aipcs/contract/envelope.js';
import { convertLegacyV1, legacyImportResultToJson, type LegacyConversion } from '../../../src/aipcs/contract/manifest/convert-v1.js';
import { manifestToJson, validateManifest } from '../../../src/aipcs/contract/manifest/validate-manifest.js';
import { MAX_ISSUES } from '../../../src/aipcs/contract/issues.js';
import { json, jsonObject } from './fixtures.js';

function converted(result: LegacyConversion) {
  if (!result.ok) throw new Error(`conversion failed: ${result.error.situation} ${JSON.stringify(result.error.issues)}`);
  return result.value;
}

function refused(result: LegacyConversion) {
  if (result.ok) throw new Error('conversion unexpectedly succeeded');
  return {
    code: result.error.code,
    message: result.error.message,
    issues: result.error.issues.map((issue) => [issue.code, issue.path]),
  };
}

const MINIMAL_V1 = `{
  "manifest_version": 1,
  "entities": [{"name": "note", "fields": [{"name": "title", "data_type": "string", "required": true}]}]
}`;

describe('legacy v1 conversion', () => {
  it('converts a minimal v1 document, injecting the server-managed fields', () => {
    const value = converted(convertLegacyV1(json(MINIMAL_V1)));
    expect(value.manifest.schema_version).toBe(1);
    expect(value.manifest.migration_history).toEqual([]);
    expect(value.manifest.entities[0]?.attributes.map((attribute) => attribute.name)).toEqual([
      'title',
      'id',
      'owner_id',
      'created_at',
      'updated_at',
      'created_via',
      'record_version',
    ]);
    expect(value.warnings.map((warning) => warning.code)).toEqual(Array.from({ length: 6 }, () => 'server_managed_field_injected'));
    expect(value.warnings[0]?.message).toBe('Injected the server-managed field note.id.');
    expect(value.provenance).toEqual({ source: 'legacy_v1', source_manifest_version: 1, importer: 'aipcs' });
    expect(value.discarded_fields).toEqual([]);
    // The converted manifest is a valid v2 document in its own right.
    expect(validateManifest(manifestToJson(value.manifest)).ok).toBe(true);
  });

  it('normalises the legacy float type and the attributes/fields spellings', () => {
    const value = converted(
      convertLegacyV1(
        json(`{"manifest_version": 1, "entities": [
          {"name": "reading", "attributes": [{"name": "score", "type": "float"}, {"name": "weight", "data_type": "float"}, {"name": "unit", "type": "string", "data_type": "string"}, {"name": "level", "type": "number", "data_type": " float "}]}
        ]}`),
      ),
    );
    const attributes = value.manifest.entities[0]?.attributes ?? [];
    expect(attributes.slice(0, 4).map((attribute) => [attribute.name, attribute.type])).toEqual([
      ['score', 'number'],
      ['weight', 'number'],
      ['unit', 'string'],
      ['level', 'number'],
    ]);
    expect(value.warnings.filter((warning) => warning.code === 'legacy_type_normalised').map((warning) => warning.message)).toEqual([
      'Converted the legacy float type of reading.score to number.',
      'Converted the legacy float type of reading.weight to number.',
      'Converted the legacy float type of reading.level to number.',
    ]);
  });

  it('replaces declared server-managed fields by their exact v2 declaration, in place', () => {
    const value = converted(
      convertLegacyV1(
        json(`{"manifest_version": 1, "entities": [{"name": "note", "attributes": [
          {"name": "id", "type": "uuid", "required": true},
          {"name": "owner_id", "type": "string", "required": false, "description": "who"},
          {"name": "created_at", "type": "datetime", "required": true},
          {"name": "title", "type": "string"}
        ]}]}`),
      ),
    );
    const attributes = value.manifest.entities[0]?.attributes ?? [];
    expect(attributes.map((attribute) => attribute.name)).toEqual(['id', 'owner_id', 'created_at', 'title', 'updated_at', 'created_via', 'record_version']);
    expect(attributes[1]).toEqual({ name: 'owner_id', type: 'string', required: true, primary_key: false, description: null, allowed_values: null, retrieval_mode: null });
    expect(value.warnings.map((warning) => warning.code)).toEqual([
      'server_managed_field_normalised',
      'server_managed_field_injected',
      'server_managed_field_injected',
      'server_managed_field_injected',
    ]);
  });

  it('normalises a server-managed field that differs in any one respect, and only those', () => {
    const value = converted(
      convertLegacyV1(
        json(`{"manifest_version": 1, "entities": [{"name": "note", "attributes": [
          {"name": "id", "type": "uuid", "required": true, "primary_key": false},
          {"name": "owner_id", "type": "string", "required": false},
          {"name": "created_at", "type": "datetime", "required": true, "retrieval_mode": null, "description": "When."},
          {"name": "updated_at", "type": "string", "required": true},
          {"name": "created_via", "type": "string", "required": true, "primary_key": true},
          {"name": "record_version", "type": "integer", "required": true, "primary_key": false, "description": null}
        ]}]}`),
      ),
    );
    expect(value.warnings.map((warning) => warning.message)).toEqual([
      'Normalised the legacy server-managed field note.id to its v2 declaration.',
      'Normalised the legacy server-managed field note.owner_id to its v2 declaration.',
      'Normalised the legacy server-managed field note.created_at to its v2 declaration.',
      'Normalised the legacy server-managed field note.updated_at to its v2 declaration.',
      'Normalised the legacy server-managed field note.created_via to its v2 declaration.',
    ]);
    expect(value.manifest.entities[0]?.attributes.map((attribute) => [attribute.name, attribute.type, attribute.required, attribute.primary_key, attribute.description])).toEqual([
      ['id', 'uuid', true, true, null],
      ['owner_id', 'string', true, false, null],
      ['created_at', 'datetime', true, false, null],
      ['updated_at', 'datetime', true, false, null],
      ['created_via', 'string', true, false, null],
      ['record_version', 'integer', true, false, null],
    ]);
  });

  it('normalises a server-managed field that omits required or sets only a retrieval mode', () => {
    const value = converted(
      convertLegacyV1(
        json(`{"manifest_version": 1, "entities": [{"name": "note", "attributes": [
          {"name": "id", "type": "uuid", "primary_key": true},
          {"name": "owner_id", "type": "string", "required": true, "retrieval_mode": "annotation"}
        ]}]}`),
      ),
    );
    expect(value.warnings.filter((warning) => warning.code === 'server_managed_field_normalised').map((warning) => warning.message)).toEqual([
      'Normalised the legacy server-managed field note.id to its v2 declaration.',
      'Normalised the legacy server-managed field note.owner_id to its v2 declaration.',
    ]);
  });

  it('trims attribute names and facet strings before recognising them', () => {
    const value = converted(
      convertLegacyV1(
        json(`{"manifest_version": 1, "discovery_facets": [" note.title ", " body "], "entities": [{"name": "note", "fields": [
          {"name": " id ", "type": "uuid", "required": true, "primary_key": true}, {"name": "title", "type": "string"}, {"name": "body", "type": "string"}
        ]}]}`),
      ),
    );
    // The padded id is the server-managed id, so it is not injected a second time.
    expect(value.manifest.entities[0]?.attributes.map((attribute) => attribute.name).slice(0, 2)).toEqual(['id', 'title']);
    expect(value.warnings.map((warning) => warning.message)).not.toContain('Injected the server-managed field note.id.');
    // A padded bare field name is resolved to its one declaring entity.
    expect(value.manifest.discovery_facets).toEqual([
      { entity: 'note', field: 'title' },
      { entity: 'note', field: 'body' },
    ]);
  });

  it('converts exactly 32 entities', () => {
    const entities = Array.from({ length: 32 }, (_, i) => `{"name": "e${i}", "fields": [{"name": "f", "type": "string"}]}`).join(', ');
    expect(converted(convertLegacyV1(json(`{"manifest_version": 1, "entities": [${entities}]}`))).manifest.entities).toHaveLength(32);
  });

  it('copies every v2-compatible attribute, index, pattern, facet and guidance key', () => {
    const value = converted(
      convertLegacyV1(
        json(`{"manifest_version": 1, "schema_version": 1,
          "entities": [{"name": "note", "description": "Notes.", "fields": [
            {"name": "status", "type": "string", "required": true, "primary_key": false, "description": "State.", "allowed_values": ["open", "done"]},
            {"name": "tags", "type": "string_list", "retrieval_mode": "membership"}
          ]}],
          "relationships": [],
          "indices": [{"name": "note_status_idx", "entity": "note", "fields": ["status"]}],
          "query_patterns": ["by status"],
          "discovery_facets": [{"entity": "note", "field": "status"}, "note.tags", "created_at"],
          "retrieval_guidance": "Use status."}`),
      ),
    );
    const manifest = value.manifest;
    expect(manifest.entities[0]?.description).toBe('Notes.');
    expect(manifest.entities[0]?.attributes[0]).toEqual({
      name: 'status',
      type: 'string',
      required: true,
      primary_key: false,
      description: 'State.',
      allowed_values: ['open', 'done'],
      retrieval_mode: null,
    });
    expect(manifest.entities[0]?.attributes[1]).toMatchObject({ name: 'tags', type: 'string_list', retrieval_mode: 'membership' });
    expect(manifest.indices).toEqual([{ name: 'note_status_idx', entity: 'note', fields: ['status'], unique: false }]);
    expect(manifest.query_patterns).toEqual(['by status']);
    expect(manifest.discovery_facets).toEqual([
      { entity: 'note', field: 'status' },
      { entity: 'note', field: 'tags' },
      { entity: 'note', field: 'created_at' },
    ]);
    expect(manifest.retrieval_guidance).toBe('Use status.');
    expect(value.warnings.filter((warning) => !warning.code.startsWith('server_managed'))).toEqual([]);
  });

  it('resets a later schema_version and discards history and retired fields, with warnings', () => {
    const value = converted(
      convertLegacyV1(
        json(`{"manifest_version": 1, "schema_version": 4,
          "migration_history": [{"from": 1, "to": 2}], "tools": [{"name": "x"}], "dsn": "postgres://secret", "aliases": [],
          "entities": [{"name": "note", "fields": [{"name": "title", "type": "string"}]}]}`),
      ),
    );
    expect(value.manifest.schema_version).toBe(1);
    expect(value.discarded_fields).toEqual(['aliases', 'dsn', 'migration_history', 'tools']);
    const codes = value.warnings.map((warning) => warning.code);
    expect(codes[0]).toBe('legacy_schema_version_reset');
    expect(codes[1]).toBe('legacy_migration_history_discarded');
    expect(codes[codes.length - 1]).toBe('legacy_fields_discarded');
    expect(renderContractJson(legacyImportResultToJson(value))).not.toContain('postgres://secret');
  });

  it('resets schema_version 2 as well, and warns of a single discarded field', () => {
    const document = jsonObject(MINIMAL_V1);
    document['schema_version'] = 2n;
    document['endpoint'] = 'http://example.invalid';
    const value = converted(convertLegacyV1(document));
    expect(value.manifest.schema_version).toBe(1);
    expect(value.discarded_fields).toEqual(['endpoint']);
    const codes = value.warnings.map((warning) => warning.code);
    expect(codes[0]).toBe('legacy_schema_version_reset');
    expect(codes[codes.length - 1]).toBe('legacy_fields_discarded');
  });

  it('accepts manifest_version given as 1.0 or true, as the intake equality does', () => {
    for (const version of ['1.0', 'true']) {
      expect(convertLegacyV1(json(MINIMAL_V1.replace('"manifest_version": 1', `"manifest_version": ${version}`))).ok).toBe(true);
    }
  });

  it('renders the result document with keys in contract order', () => {
    const document = legacyImportResultToJson(converted(convertLegacyV1(json(MINIMAL_V1))));
    expect(Object.keys(document)).toEqual(['manifest', 'provenance', 'warnings', 'discarded_fields']);
    expect(renderContractJson(document['provenance'] as JsonValue)).toBe('{"source":"legacy_v1","source_manifest_version":1,"importer":"aipcs"}');
  });
});

describe('legacy v1 documents that cannot be converted', () => {
  const base = (): JsonObject => jsonObject(MINIMAL_V1);

  it('refuses a non-object', () => {
    expect(refused(convertLegacyV1(json('[]')))).toEqual({ code: 'invalid_request', message: 'Legacy input must be a JSON object.', issues: [] });
  });

  it.each([['2'], ['0'], ['1.5'], ['"1"'], ['null']])('refuses manifest_version %s', (version) => {
    const document = base();
    document['manifest_version'] = json(version);
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'manifest_version_unsupported',
      message: 'The legacy importer accepts manifest_version 1 only.',
      issues: [],
    });
  });

  it('refuses a missing manifest_version', () => {
    const document = base();
    delete document['manifest_version'];
    expect(refused(convertLegacyV1(document)).code).toBe('manifest_version_unsupported');
  });

  it('refuses an unrecognised top-level field', () => {
    const document = base();
    document['storage_engine'] = 'x';
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Legacy input contains an unrecognised field and was not converted.',
      issues: [['legacy_field_unrecognised', 'legacy_manifest']],
    });
  });

  it('refuses non-empty relationships as ambiguous', () => {
    const document = base();
    document['relationships'] = [{ from: 'note.x', to: 'project.id' }];
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Legacy relationships are not imported because their constraints are ambiguous.',
      issues: [['legacy_relationship_ambiguous', 'relationships']],
    });
  });

  it.each([['0'], ['-1'], ['"1"'], ['1.0'], ['true']])('refuses schema_version %s', (version) => {
    const document = base();
    document['schema_version'] = json(version);
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Legacy schema_version must be a positive integer.',
      issues: [],
    });
  });

  it('refuses an unrecognised entity or attribute field rather than dropping it', () => {
    const document = jsonObject(`{"manifest_version": 1, "entities": [{"name": "note", "table": "notes",
      "fields": [{"name": "title", "type": "string", "indexed": true}]}]}`);
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Legacy input contains an unrecognised field and was not converted.',
      issues: [
        ['legacy_field_unrecognised', 'entities.0.table'],
        ['legacy_field_unrecognised', 'entities.0.fields.0.indexed'],
      ],
    });
  });

  it.each([
    ['an entity with both attributes and fields', '{"name": "note", "attributes": [], "fields": []}', ['invalid_value', 'entities.0.fields']],
    ['an entity without attributes', '{"name": "note"}', ['field_required', 'entities.0.attributes']],
    ['an entity that is not an object', '"note"', ['invalid_value', 'entities.0']],
    ['an attribute without a name', '{"name": "note", "fields": [{"type": "string"}]}', ['field_required', 'entities.0.fields.0.name']],
    ['an attribute without a type', '{"name": "note", "fields": [{"name": "title"}]}', ['field_required', 'entities.0.fields.0.type']],
    ['conflicting type and data_type', '{"name": "note", "fields": [{"name": "title", "type": "string", "data_type": "float"}]}', ['invalid_value', 'entities.0.fields.0.data_type']],
    ['a type that names an Object.prototype member', '{"name": "note", "fields": [{"name": "title", "type": "constructor"}]}', ['invalid_value', 'entities.0.attributes.0.type']],
  ])('refuses %s', (_name, entityText, issue) => {
    const document = jsonObject(`{"manifest_version": 1, "entities": [${entityText}]}`);
    const failure = refused(convertLegacyV1(document));
    expect(failure.code).toBe('validation_failed');
    expect(failure.issues).toEqual([issue]);
  });

  it('refuses a data_type that is not a string at data_type', () => {
    const document = jsonObject('{"manifest_version": 1, "entities": [{"name": "note", "fields": [{"name": "title", "data_type": 5}]}]}');
    expect(refused(convertLegacyV1(document)).issues).toEqual([['invalid_value', 'entities.0.fields.0.data_type']]);
  });

  it('refuses more than 32 entities, 64 attributes or 64 facets before converting them', () => {
    const malformed = { code: 'validation_failed', message: 'Legacy input is malformed and was not converted.' };
    const field = (i: number): string => `{"name": "f${i}", "type": "string"}`;
    const entities = jsonObject(`{"manifest_version": 1, "entities": [${Array.from({ length: 33 }, (_, i) => `{"name": "e${i}", "fields": [${field(0)}]}`).join(', ')}]}`);
    expect(refused(convertLegacyV1(entities))).toEqual({ ...malformed, issues: [['invalid_length', 'entities']] });
    const attributes = jsonObject(`{"manifest_version": 1, "entities": [{"name": "note", "fields": [${Array.from({ length: 65 }, (_, i) => field(i)).join(', ')}]}]}`);
    expect(refused(convertLegacyV1(attributes))).toEqual({ ...malformed, issues: [['invalid_length', 'entities.0.fields']] });
    const facets = jsonObject(`{"manifest_version": 1, "entities": [{"name": "note", "fields": [${field(0)}]}],
      "discovery_facets": [${Array.from({ length: 65 }, () => '"note.f0"').join(', ')}]}`);
    expect(refused(convertLegacyV1(facets))).toEqual({ ...malformed, issues: [['invalid_length', 'discovery_facets']] });
  });

  it('refuses entities or a facet of the wrong JSON type as malformed, before v2 validation', () => {
    const malformed = { code: 'validation_failed', message: 'Legacy input is malformed and was not converted.' };
    expect(refused(convertLegacyV1(json('{"manifest_version": 1, "entities": "note"}')))).toEqual({ ...malformed, issues: [['invalid_value', 'entities']] });
    const facet = json(`{"manifest_version": 1, "discovery_facets": [5], "entities": [{"name": "note", "fields": [{"name": "title", "type": "string"}]}]}`);
    expect(refused(convertLegacyV1(facet))).toEqual({ ...malformed, issues: [['invalid_value', 'discovery_facets.0']] });
  });

  it('splits a facet string at its dot even with nothing before it, leaving the empty entity to v2 validation', () => {
    const document = json(`{"manifest_version": 1, "discovery_facets": [".title"], "entities": [{"name": "note", "fields": [{"name": "title", "type": "string"}]}]}`);
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Request failed public contract validation.',
      issues: [['invalid_value', 'discovery_facets.0.entity']],
    });
  });

  it('reports at most MAX_ISSUES legacy issues', () => {
    const fields = Array.from({ length: MAX_ISSUES + 8 }, () => '{"type": "string"}').join(', ');
    const failure = refused(convertLegacyV1(json(`{"manifest_version": 1, "entities": [{"name": "note", "fields": [${fields}]}]}`)));
    expect(failure.issues).toHaveLength(MAX_ISSUES);
    expect(failure.issues[MAX_ISSUES - 1]).toEqual(['field_required', `entities.0.fields.${MAX_ISSUES - 1}.name`]);
  });

  it('names an unrecognised field as the reason even when a facet is ambiguous too', () => {
    const document = jsonObject(`{"manifest_version": 1, "discovery_facets": ["title"], "entities": [
      {"name": "note", "fields": [{"name": "title", "type": "string", "indexed": true}]},
      {"name": "task", "fields": [{"name": "title", "type": "string"}]}]}`);
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Legacy input contains an unrecognised field and was not converted.',
      issues: [
        ['legacy_field_unrecognised', 'entities.0.fields.0.indexed'],
        ['invalid_value', 'discovery_facets.0'],
      ],
    });
  });

  it('refuses a bare facet that more than one entity declares, or none does', () => {
    for (const facet of ['"created_at"', '"nowhere"']) {
      const document = jsonObject(`{"manifest_version": 1, "discovery_facets": [${facet}], "entities": [
        {"name": "note", "fields": [{"name": "title", "type": "string"}]},
        {"name": "task", "fields": [{"name": "title", "type": "string"}]}]}`);
      expect(refused(convertLegacyV1(document))).toEqual({
        code: 'validation_failed',
        message: 'A legacy discovery facet is ambiguous; use an explicit entity.field object.',
        issues: [['invalid_value', 'discovery_facets.0']],
      });
    }
  });

  it('resolves a bare facet on a field one entity declares twice to that entity, and leaves the repeat to v2 validation', () => {
    const document = jsonObject(`{"manifest_version": 1, "discovery_facets": ["title"], "entities": [
      {"name": "note", "fields": [{"name": "title", "type": "string"}, {"name": "title", "type": "string"}]}]}`);
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Request failed public contract validation.',
      issues: [['invalid_value', 'entities.0']],
    });
  });

  it('refuses a document whose assembled v2 manifest is invalid, with v2 issue paths', () => {
    const document = jsonObject(`{"manifest_version": 1, "entities": [{"name": "note", "fields": [{"name": "body", "type": "text"}]}],
      "indices": [{"name": "body_idx", "entity": "note", "fields": ["missing"]}]}`);
    expect(refused(convertLegacyV1(document))).toEqual({
      code: 'validation_failed',
      message: 'Request failed public contract validation.',
      issues: [['invalid_value', 'entities.0.attributes.0.type']],
    });
  });

  it('refuses a document without entities through v2 validation', () => {
    expect(refused(convertLegacyV1(json('{"manifest_version": 1}'))).issues).toEqual([['invalid_length', 'entities']]);
  });
});
