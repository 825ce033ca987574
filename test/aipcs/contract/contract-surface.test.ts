// Parts of the client-visible contract that the spec fixes exactly and that
// no other test pinned with literal values (mutation review M): the issue
// bound and vocabulary (§3.2), issue path segments, every retired name
// (§4.10), the calendar edges of datetime values (§4.3) and the error and
// result models of the output schemas (§9).

import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/common/json.js';
import { renderEnvelopeText, failureEnvelope } from '../../../src/aipcs/contract/envelope.js';
import { zeroOffsetInstantMicros } from '../../../src/aipcs/contract/iso-datetime.js';
import { formatIssuePath, makeIssue } from '../../../src/aipcs/contract/issues.js';
import { parseToolRequest } from '../../../src/aipcs/contract/requests/parse-request.js';
import type { SchemaNode } from '../../../src/aipcs/contract/schema-check.js';
import { serverInfoResult } from '../../../src/aipcs/contract/server-info.js';
import { AIPCS_TOOLS } from '../../../src/aipcs/contract/tool-catalogue.js';
import { entity, manifest } from './builders.js';

const SERVICE = '3fa85f64-5717-4562-b3fc-2c963f66afa6';

describe('issue list (§3.2)', () => {
  it('keeps exactly the first 32 issues, in validation order', () => {
    const args: JsonObject = {};
    for (let i = 0; i < 40; i++) args[`extra_${i}`] = 1n;
    const refused = parseToolRequest('aipcs_service_list', args);
    if (refused.ok) throw new Error('accepted');
    expect(refused.error.issues).toHaveLength(32);
    expect(refused.error.issues.map((issue) => issue.path)).toEqual(Array.from({ length: 32 }, (_, i) => `extra_${i}`));
    const text = JSON.parse(renderEnvelopeText(failureEnvelope(refused.error))) as { error: { issues: unknown[] } };
    expect(text.error.issues).toHaveLength(32);
  });

  it('keeps 31 issues as they are', () => {
    const args: JsonObject = {};
    for (let i = 0; i < 31; i++) args[`extra_${i}`] = 1n;
    const refused = parseToolRequest('aipcs_service_list', args);
    if (refused.ok) throw new Error('accepted');
    expect(refused.error.issues).toHaveLength(31);
  });

  it('uses the exact vocabulary texts of every request-shape issue code', () => {
    const texts = (['field_required', 'unknown_field', 'invalid_length', 'invalid_value'] as const).map((code) => {
      const issue = makeIssue(code, ['x']);
      return [issue.code, issue.message, issue.remediation];
    });
    expect(texts).toEqual([
      ['field_required', 'A required field is missing.', 'Provide the required field and retry.'],
      ['unknown_field', 'The request contains an unsupported field.', 'Remove the unsupported field and retry.'],
      ['invalid_length', 'The field has an invalid number of items or characters.', 'Adjust the field length to the documented bound and retry.'],
      ['invalid_value', 'The field value is invalid.', 'Use a value allowed by the public contract and retry.'],
    ]);
  });

  it('keeps identifier segments with a leading underscore or digits after the first character', () => {
    expect(formatIssuePath(['record', '_private'])).toBe('record._private');
    expect(formatIssuePath(['record', 'field_2b'])).toBe('record.field_2b');
    expect(formatIssuePath(['record', 'x1'])).toBe('record.x1');
    expect(formatIssuePath(['record', '2x'])).toBe('record.<field>');
  });
});

describe('retired input names (§4.10)', () => {
  const RETIRED = [
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

  it.each(RETIRED)('refuses %s as a key anywhere in a design request', (name) => {
    const nested = manifest([entity('note')]);
    (nested['entities'] as JsonObject[])[0]![name] = 'x';
    for (const args of [
      { service_id: SERVICE, idempotency_key: 'd', schema: nested },
      { service_id: SERVICE, idempotency_key: 'd', schema: manifest([entity('note')]), [name]: 1n },
    ]) {
      const result = parseToolRequest('aipcs_service_design', args);
      expect(result.ok).toBe(false);
      if (!result.ok) expect([result.error.code, result.error.issues]).toEqual(['retired_field', []]);
    }
  });

  it('compares keys as sent: a padded retired name is an ordinary unknown field', () => {
    const result = parseToolRequest('aipcs_service_design', { service_id: SERVICE, idempotency_key: 'd', schema: manifest([entity('note')]), ' dsn': 1n });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe('validation_failed');
  });
});

describe('datetime calendar edges (§4.3, Python 3.12 fromisoformat)', () => {
  it.each([
    ['2000-02-29T00:00:00Z', 951_782_400_000_000n], // divisible by 400: leap
    ['2015-W53-1T00:00Z', 1_451_260_800_000_000n], // 2015 starts on a Thursday: 53 ISO weeks
    ['2030-01-01\u{1f600}12:00Z', 1_893_499_200_000_000n], // a four-byte separator
    ['2030-01-01\u20ac12:00Z', 1_893_499_200_000_000n], // a three-byte separator
    ['2030-12-31T00:00:00Z', 1_924_905_600_000_000n],
  ])('accepts %s', (text, expected) => {
    expect(zeroOffsetInstantMicros(text)).toBe(expected);
  });

  it.each([
    '1900-02-29T00:00:00Z', // divisible by 100, not by 400: not leap
    '2030-04-31T00:00:00Z',
    '2030-06-31T00:00:00Z',
    '2030-09-31T00:00:00Z',
    '2030-11-31T00:00:00Z',
    '2030-01-32T00:00:00Z',
    '2025-W53-1T00:00Z', // 2025 starts on a Wednesday but is not leap: 52 weeks
  ])('refuses %s', (text) => {
    expect(zeroOffsetInstantMicros(text)).toBeNull();
  });
});

describe('output schema error and result models (§9)', () => {
  const defsOf = (tool: (typeof AIPCS_TOOLS)[number]): Readonly<Record<string, SchemaNode>> => tool.outputSchema.$defs ?? {};

  it('publishes the FailureEnvelope, ErrorDetail and ErrorIssue models of the contract', () => {
    for (const tool of AIPCS_TOOLS) {
      const defs = defsOf(tool);
      // Exactly these (an added or dropped bound, default or key fails), keys in the contract's order.
      expect(defs['FailureEnvelope'], tool.name).toEqual({
        title: 'FailureEnvelope',
        type: 'object',
        additionalProperties: false,
        properties: { ok: { type: 'boolean', const: false, default: false }, result: { type: 'null', default: null }, error: { $ref: '#/$defs/ErrorDetail' } },
        required: ['error'],
      });
      expect(Object.keys(defs['FailureEnvelope']?.properties ?? {})).toEqual(['ok', 'result', 'error']);
      expect(defs['ErrorDetail']).toEqual({
        title: 'ErrorDetail',
        type: 'object',
        additionalProperties: false,
        properties: {
          code: { $ref: '#/$defs/ErrorCode' },
          message: { type: 'string', minLength: 1, maxLength: 500 },
          issues: { type: 'array', items: { $ref: '#/$defs/ErrorIssue' }, maxItems: 32 },
          retryable: { type: 'boolean' },
        },
        required: ['code', 'message', 'issues', 'retryable'],
      });
      expect(Object.keys(defs['ErrorDetail']?.properties ?? {})).toEqual(['code', 'message', 'issues', 'retryable']);
      expect(defs['ErrorIssue']).toEqual({
        title: 'ErrorIssue',
        type: 'object',
        additionalProperties: false,
        properties: {
          code: { type: 'string', minLength: 1, maxLength: 96 },
          path: { type: 'string', minLength: 1, maxLength: 240 },
          message: { type: 'string', minLength: 1, maxLength: 500 },
          remediation: { anyOf: [{ type: 'string', maxLength: 500 }, { type: 'null' }] },
        },
        required: ['code', 'path', 'message', 'remediation'],
      });
      expect(Object.keys(defs['ErrorIssue']?.properties ?? {})).toEqual(['code', 'path', 'message', 'remediation']);
    }
  });

  it('closes every result object', () => {
    const manifestDefs = new Set(Object.keys(AIPCS_TOOLS.find((tool) => tool.name === 'aipcs_service_design')?.inputSchema.$defs ?? {}));
    for (const tool of AIPCS_TOOLS) {
      for (const [name, def] of Object.entries(defsOf(tool))) {
        if (manifestDefs.has(name) || def.type !== 'object' || name.startsWith('_TypedSuccessEnvelope') || name === 'FailureEnvelope') continue;
        expect(def.additionalProperties, `${tool.name} ${name}`).toBe(false);
      }
    }
  });

  it('lists exactly the contract values of the ServerInfo enumerations', () => {
    const info = defsOf(AIPCS_TOOLS[0]!)['ServerInfo'];
    expect(info?.properties?.['transports']).toEqual({ type: 'array', items: { type: 'string', enum: ['stdio', 'streamable-http'] } });
    expect(info?.properties?.['operational_statuses']).toEqual({ type: 'array', items: { type: 'string', enum: ['active'] } });
    expect(info?.properties?.['supported_manifest_versions']).toEqual({ type: 'array', items: { const: 2 } });
  });
});

describe('server info of the stateless profile (§5.3)', () => {
  it('reports only the last four feature flags false', () => {
    expect(serverInfoResult('0.1.1', 'stateless')['features']).toEqual({
      server_info: true,
      manifest_v2_validation: true,
      legacy_v1_importer: true,
      stdio_preflight: true,
      registry_lifecycle: false,
      materialisation_lifecycle: false,
      record_runtime: false,
      discovery_topology: false,
    });
  });
});

describe('input schemas as Appendix A writes them', () => {
  // Appendix A's common fragments, literally.
  const UUID = { type: 'string', format: 'uuid' };
  const Ident = { type: 'string', pattern: '^[a-z][a-z0-9_]{0,62}$' };
  const Key = { type: 'string', minLength: 1, maxLength: 128 };
  const Rev = { type: 'integer', minimum: 1, maximum: 9223372036854775807n };
  const Limit50 = { type: 'integer', minimum: 1, maximum: 100, default: 50 };
  const Limit100 = { type: 'integer', minimum: 1, maximum: 100, default: 100 };
  const Cursor = { anyOf: [{ type: 'string', minLength: 1, maxLength: 1024 }, { type: 'null' }], default: null };
  const Opt = (node: object): object => ({ anyOf: [node, { type: 'null' }], default: null });
  const BranchType = { type: 'string', maxLength: 80, pattern: '^[a-z][a-z0-9_-]{0,79}$' };
  const Status = { type: 'string', enum: ['active', 'archived', 'superseded'] };
  const Role = { type: 'string', enum: ['primary', 'related'] };
  const scope = { limit: Limit50, cursor: Cursor, branch_id: Opt(UUID), branch_role: Opt(Role) };

  const expected: Record<string, Record<string, object>> = {
    aipcs_server_info: {},
    aipcs_service_seed: {
      domain_name: { type: 'string', maxLength: 63, pattern: '^[a-z][a-z0-9_]{0,62}$' },
      domain_class: { type: 'string', minLength: 1, maxLength: 64 },
      intent_description: { type: 'string', minLength: 1, maxLength: 1000 },
      idempotency_key: Key,
    },
    aipcs_service_list: { limit: Limit100 },
    aipcs_service_inspect: { service_id: UUID },
    aipcs_service_design: { service_id: UUID, schema: { $ref: '#/$defs/ManifestV2' }, idempotency_key: Key },
    aipcs_service_materialise: {
      service_id: UUID,
      expected_service_revision: Rev,
      expected_schema_version: { type: 'integer', minimum: 1, maximum: 1 },
      idempotency_key: Key,
    },
    aipcs_service_evolve: {
      service_id: UUID,
      expected_service_revision: Rev,
      expected_schema_version: { type: 'integer', minimum: 1, maximum: 64 },
      idempotency_key: Key,
      schema: { $ref: '#/$defs/ManifestV2' },
    },
    aipcs_record_create: { idempotency_key: Key, service_id: UUID, entity_name: Ident, record: { type: 'object', additionalProperties: true } },
    aipcs_record_get: { service_id: UUID, entity_name: Ident, record_id: UUID },
    aipcs_record_list: { ...scope, service_id: UUID, entity_name: Ident },
    aipcs_record_search: { ...scope, service_id: UUID, entity_name: Ident, filters: { type: 'object', additionalProperties: true, minProperties: 1, maxProperties: 16 } },
    aipcs_record_update: {
      idempotency_key: Key,
      service_id: UUID,
      entity_name: Ident,
      record_id: UUID,
      updates: { type: 'object', additionalProperties: true, minProperties: 1 },
      expected_record_version: Rev,
    },
    aipcs_record_delete: { idempotency_key: Key, service_id: UUID, entity_name: Ident, record_id: UUID, expected_record_version: Rev },
    aipcs_record_history: { limit: Limit50, cursor: Cursor, service_id: UUID, entity_name: Ident, record_id: Opt(UUID) },
    aipcs_bootstrap: { limit: Limit100 },
    aipcs_service_summary: { service_id: UUID, sample: { type: 'integer', minimum: 0, maximum: 3, default: 0 } },
    aipcs_branch_create: {
      idempotency_key: Key,
      service_id: UUID,
      slug: { type: 'string', minLength: 3, maxLength: 64, pattern: '^[a-z][a-z0-9-]{1,62}[a-z0-9]$' },
      title: { type: 'string', minLength: 1, maxLength: 160 },
      intent: { type: 'string', minLength: 1, maxLength: 1000 },
      branch_type: Opt(BranchType),
      parent_branch_id: Opt(UUID),
      retrieval_summary: Opt({ type: 'string', maxLength: 1000 }),
    },
    aipcs_branch_list: { limit: Limit50, cursor: Cursor, service_id: UUID, status: Opt(Status), branch_type: Opt(BranchType), parent_branch_id: Opt(UUID) },
    aipcs_branch_update: { idempotency_key: Key, service_id: UUID, branch_id: UUID, expected_branch_revision: Rev, updates: { $ref: '#/$defs/BranchUpdates' } },
    aipcs_branch_assign_records: {
      idempotency_key: Key,
      service_id: UUID,
      branch_id: UUID,
      role: Role,
      operation: { type: 'string', enum: ['assign', 'unassign'] },
      records: { type: 'array', items: { $ref: '#/$defs/BranchAssignmentTarget' }, minItems: 1, maxItems: 100 },
    },
    aipcs_maintenance_scan: {
      service_id: UUID,
      entity_name: Opt(Ident),
      branch_id: Opt(UUID),
      scan_types: Opt({
        type: 'array',
        items: {
          type: 'string',
          enum: ['expired', 'stale', 'low_confidence', 'superseded', 'missing_authority', 'unbranched', 'duplicate_authority', 'blob_candidate'],
        },
        minItems: 1,
        maxItems: 8,
      }),
      stale_after_days: { type: 'integer', minimum: 1, maximum: 3650, default: 90 },
      low_confidence_below: { type: 'number', minimum: 0, maximum: 1, default: 0.5 },
      limit: Limit50,
    },
  };

  it.each(AIPCS_TOOLS.map((tool) => [tool.name, tool] as const))('%s has the properties of Appendix A', (name, tool) => {
    expect(tool.inputSchema.properties).toEqual(expected[name]);
  });

  it('closes BranchUpdates and BranchAssignmentTarget as Appendix A writes them', () => {
    const update = AIPCS_TOOLS.find((tool) => tool.name === 'aipcs_branch_update')?.inputSchema.$defs?.['BranchUpdates'];
    expect(Object.keys(update ?? {}).sort()).toEqual(['additionalProperties', 'properties', 'required', 'title', 'type']);
    expect(update).toMatchObject({ title: 'BranchUpdates', type: 'object', additionalProperties: false, required: [] });
    // Exactly these: no bound beyond Appendix A's (an empty summary is refused by a rule, not by the schema).
    expect(update?.['properties']).toEqual({
      title: Opt({ type: 'string', minLength: 1, maxLength: 160 }),
      intent: Opt({ type: 'string', minLength: 1, maxLength: 1000 }),
      branch_type: Opt(BranchType),
      parent_branch_id: Opt(UUID),
      status: Opt(Status),
      retrieval_summary: Opt({ type: 'string', maxLength: 1000 }),
    });
    const target = AIPCS_TOOLS.find((tool) => tool.name === 'aipcs_branch_assign_records')?.inputSchema.$defs?.['BranchAssignmentTarget'];
    expect(target).toEqual({
      title: 'BranchAssignmentTarget',
      type: 'object',
      additionalProperties: false,
      properties: { entity_name: Ident, record_id: UUID, expected_record_version: Rev },
      required: ['entity_name', 'record_id', 'expected_record_version'],
    });
  });
});
