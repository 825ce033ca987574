import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { parseToolRequest, type RequestParse } from '../../../src/aipcs/contract/requests/parse-request.js';
import { attr, entity, manifest } from './builders.js';
import { json, quickstartManifest } from './fixtures.js';

const SERVICE = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
const RECORD = '66666666-7777-4888-9999-aaaaaaaaaaaa';

function failure(result: RequestParse): { code: string; message: string; issues: [string, string][] } {
  if (result.ok) throw new Error(`request unexpectedly accepted: ${result.command.tool}`);
  return { code: result.error.code, message: result.error.message, issues: result.error.issues.map((issue) => [issue.code, issue.path]) };
}

function issues(name: string, args: JsonObject): [string, string][] {
  const result = failure(parseToolRequest(name, args));
  expect(result.code).toBe('validation_failed');
  expect(result.message).toBe('Request failed public contract validation.');
  return result.issues;
}

function command(name: string, args: JsonObject) {
  const result = parseToolRequest(name, args);
  if (!result.ok) throw new Error(`request refused: ${result.error.code} ${JSON.stringify(result.error.issues)}`);
  return result.command;
}

describe('dispatch', () => {
  it('refuses unknown tools and tools outside the profile', () => {
    expect(failure(parseToolRequest('aipcs_record_purge', {}))).toEqual({ code: 'unsupported_operation', message: 'The requested MCP tool is unavailable.', issues: [] });
    const stateless = new Set(['aipcs_server_info']);
    expect(failure(parseToolRequest('aipcs_service_list', {}, { available: stateless })).code).toBe('unsupported_operation');
    expect(parseToolRequest('aipcs_server_info', {}, { available: stateless })).toEqual({ ok: true, command: { tool: 'aipcs_server_info' } });
  });

  it('refuses any argument to server info, without issues', () => {
    expect(failure(parseToolRequest('aipcs_server_info', { verbose: true }))).toEqual({
      code: 'validation_failed',
      message: 'Request failed public contract validation.',
      issues: [],
    });
  });
});

describe('service seed, list and inspect', () => {
  const seed = { domain_name: 'project_memory', domain_class: 'project', intent_description: 'Keep decisions.', idempotency_key: 'seed-1' };

  it('trims Unicode White_Space (pydantic: Rust str::trim), not U+001C-U+001F and not U+FEFF', () => {
    expect(issues('aipcs_service_seed', { ...seed, domain_class: '\u2003\u0085' })).toEqual([['invalid_length', 'domain_class']]);
    expect(command('aipcs_service_seed', { ...seed, domain_class: '\u3000project\u0085' })).toMatchObject({ domainClass: 'project' });
    expect(command('aipcs_service_seed', { ...seed, domain_class: '\u001eproject\u001f' })).toMatchObject({ domainClass: '\u001eproject\u001f' });
    expect(command('aipcs_service_seed', { ...seed, idempotency_key: 'seed-1\u001c' })).toMatchObject({ idempotencyKey: 'seed-1\u001c' });
    expect(command('aipcs_service_seed', { ...seed, domain_class: '\ufeffproject' })).toMatchObject({ domainClass: '\ufeffproject' });
  });

  it('trims strings before validating them', () => {
    expect(command('aipcs_service_seed', { domain_name: '  project_memory ', domain_class: '\tproject\n', intent_description: ' Keep decisions. ', idempotency_key: ' seed-1 ' })).toEqual({
      tool: 'aipcs_service_seed',
      domainName: 'project_memory',
      domainClass: 'project',
      intentDescription: 'Keep decisions.',
      idempotencyKey: 'seed-1',
    });
  });

  it.each([
    ['an uppercase domain name', { domain_name: 'Project' }, [['invalid_value', 'domain_name']]],
    ['a 64-char domain name', { domain_name: 'a'.repeat(64) }, [['invalid_length', 'domain_name']]],
    ['a blank domain class', { domain_class: '   ' }, [['invalid_length', 'domain_class']]],
    ['a 1001-char intent', { intent_description: 'x'.repeat(1001) }, [['invalid_length', 'intent_description']]],
    ['a 129-char key', { idempotency_key: 'k'.repeat(129) }, [['invalid_length', 'idempotency_key']]],
    ['a non-string key', { idempotency_key: 5n }, [['invalid_value', 'idempotency_key']]],
    ['a lone surrogate in the domain class', { domain_class: 'project\ud800' }, [['invalid_value', 'domain_class']]],
    ['a lone surrogate in the key', { idempotency_key: '\udc00seed' }, [['invalid_value', 'idempotency_key']]],
    ['an unknown field', { principal_id: 'me' }, [['unknown_field', 'principal_id']]],
  ] as const)('refuses %s', (_name, change, expected) => {
    expect(issues('aipcs_service_seed', { ...seed, ...change })).toEqual(expected);
  });

  it('counts string lengths in code points, as Python does: an astral character is one', () => {
    expect(command('aipcs_service_seed', { ...seed, domain_class: '\u{1f600}'.repeat(64) })).toMatchObject({ domainClass: '\u{1f600}'.repeat(64) });
    expect(issues('aipcs_service_seed', { ...seed, domain_class: '\u{1f600}'.repeat(65) })).toEqual([['invalid_length', 'domain_class']]);
  });

  it('reports missing fields in schema order', () => {
    expect(issues('aipcs_service_seed', { idempotency_key: 'k' })).toEqual([
      ['field_required', 'domain_name'],
      ['field_required', 'domain_class'],
      ['field_required', 'intent_description'],
    ]);
  });

  it('applies the list default and strict integers', () => {
    expect(command('aipcs_service_list', {})).toEqual({ tool: 'aipcs_service_list', limit: 100 });
    expect(command('aipcs_service_list', { limit: 7n })).toEqual({ tool: 'aipcs_service_list', limit: 7 });
    for (const limit of [0n, 101n, 1.0, 5.5, '5', true, null] as JsonValue[]) {
      expect(issues('aipcs_service_list', { limit })).toEqual([['invalid_value', 'limit']]);
    }
  });

  it('answers invalid_identifier for a non-canonical service id on inspect, before any other check', () => {
    for (const serviceId of [
      SERVICE.toUpperCase(),
      // Upper case in any single group is not canonical either.
      ...[0, 9, 14, 19, 24].map((at) => SERVICE.slice(0, at) + SERVICE.slice(at).replace(/[a-f]/, (letter) => letter.toUpperCase())),
      `{${SERVICE}}`,
      `urn:uuid:${SERVICE}`,
      SERVICE.replaceAll('-', ''),
      '00000000-0000-0000-0000-000000000000',
      5n,
      null,
    ] as JsonValue[]) {
      expect(failure(parseToolRequest('aipcs_service_inspect', { service_id: serviceId, extra: 1n }))).toEqual({
        code: 'invalid_identifier',
        message: 'service_id must be a non-zero lowercase canonical UUID.',
        issues: [],
      });
    }
  });

  it('answers validation_failed for other inspect shape problems', () => {
    expect(issues('aipcs_service_inspect', {})).toEqual([['field_required', 'service_id']]);
    expect(issues('aipcs_service_inspect', { service_id: SERVICE, extra: 1n })).toEqual([['unknown_field', 'extra']]);
    expect(command('aipcs_service_inspect', { service_id: ` ${SERVICE} ` })).toEqual({ tool: 'aipcs_service_inspect', serviceId: SERVICE });
  });
});

describe('service design', () => {
  const design = (schema: JsonValue, extra: JsonObject = {}): JsonObject => ({ service_id: SERVICE, schema, idempotency_key: 'design-1', ...extra });

  it('accepts the quick-start design and carries the normalised manifest', () => {
    const result = command('aipcs_service_design', design(quickstartManifest()));
    expect(result.tool).toBe('aipcs_service_design');
    if (result.tool !== 'aipcs_service_design') return;
    expect(result.serviceId).toBe(SERVICE);
    expect(result.manifest.entities[0]?.attributes[8]).toMatchObject({ name: 'tags', retrieval_mode: 'membership', required: false });
  });

  it('checks in order: identifier, retired field, manifest version, validation', () => {
    const legacy = { ...manifest(), manifest_version: 1n, endpoint: 'x' };
    expect(failure(parseToolRequest('aipcs_service_design', design(legacy, { service_id: 'nope' }))).code).toBe('invalid_identifier');
    expect(failure(parseToolRequest('aipcs_service_design', design(legacy))).code).toBe('retired_field');
    expect(failure(parseToolRequest('aipcs_service_design', design({ ...manifest(), manifest_version: 1n }, { bogus: 1n }))).code).toBe('legacy_import_required');
    expect(failure(parseToolRequest('aipcs_service_design', design(manifest(), { bogus: 1n }))).issues).toEqual([['unknown_field', 'bogus']]);
  });

  it('finds retired names as keys at any depth, but not as values', () => {
    const nested = manifest([entity('note', undefined, { description: 'endpoint' })]);
    (nested['entities'] as JsonObject[])[0]!['attributes'] = [...((nested['entities'] as JsonObject[])[0]!['attributes'] as JsonValue[]), { name: 'endpoint', type: 'string', materialization: true }];
    expect(failure(parseToolRequest('aipcs_service_design', design(nested)))).toEqual({
      code: 'retired_field',
      message: 'The request contains a field retired from the public v1 contract.',
      issues: [],
    });
    const valueOnly = manifest([entity('note', [{ name: 'endpoint', type: 'string', description: 'dsn' }])]);
    expect(parseToolRequest('aipcs_service_design', design(valueOnly)).ok).toBe(true);
  });

  it.each([['1'], ['1.0'], ['true']])('answers legacy_import_required for manifest_version %s', (version) => {
    expect(failure(parseToolRequest('aipcs_service_design', design({ ...manifest(), manifest_version: json(version) })))).toEqual({
      code: 'legacy_import_required',
      message: 'Manifest version 1 is private legacy input; use the explicit legacy importer.',
      issues: [],
    });
  });

  it.each([['3'], ['0'], ['"2"'], ['null'], ['false']])('answers manifest_version_unsupported for manifest_version %s', (version) => {
    expect(failure(parseToolRequest('aipcs_service_design', design({ ...manifest(), manifest_version: json(version) })))).toEqual({
      code: 'manifest_version_unsupported',
      message: 'Public design intake supports manifest_version 2 only.',
      issues: [],
    });
  });

  it('answers manifest_version_unsupported when the version is missing, validation_failed when schema is no object', () => {
    const missing = manifest();
    delete missing['manifest_version'];
    expect(failure(parseToolRequest('aipcs_service_design', design(missing))).code).toBe('manifest_version_unsupported');
    expect(issues('aipcs_service_design', design('manifest'))).toEqual([['invalid_value', 'schema']]);
  });

  it('points manifest issues into schema', () => {
    const bad = manifest([entity('note', [{ name: 'title', type: 'text' }])]);
    expect(issues('aipcs_service_design', design(bad))).toEqual([['invalid_value', 'schema.entities.0.attributes.6.type']]);
  });

  it('requires an initial schema: version 1 and empty history, else one issue at request', () => {
    const later = manifest(undefined, { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['x'] }] });
    expect(issues('aipcs_service_design', design(later))).toEqual([['invalid_value', 'request']]);
    // Version 1 with a history entry is also not an initial schema: still the one issue at request.
    const withHistory = manifest(undefined, { migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['x'] }] });
    expect(issues('aipcs_service_design', design(withHistory))).toEqual([['invalid_value', 'request']]);
    // A later version without any history, and a version below 1, are no initial schema either.
    expect(issues('aipcs_service_design', design(manifest(undefined, { schema_version: 2n })))).toEqual([['invalid_value', 'request']]);
    expect(issues('aipcs_service_design', design(manifest(undefined, { schema_version: 0n })))).toEqual([['invalid_value', 'request']]);
  });

  it.each([
    ['a string', '1'],
    ['a boolean', true],
    ['null', null],
    ['a float', 1.0],
  ] as const)('reports a design schema_version that is %s at its own path, as evolve does', (_name, version) => {
    const typed = manifest(undefined, { schema_version: version });
    expect(issues('aipcs_service_design', design(typed))).toEqual([['invalid_value', 'schema.schema_version']]);
  });
});

describe('service materialise and evolve', () => {
  const materialise = { service_id: SERVICE, expected_service_revision: 2n, expected_schema_version: 1n, idempotency_key: 'm-1' };

  it('accepts exact revisions up to 2^63−1', () => {
    expect(command('aipcs_service_materialise', { ...materialise, expected_service_revision: 2n ** 63n - 1n })).toMatchObject({ expectedServiceRevision: 2n ** 63n - 1n, expectedSchemaVersion: 1 });
  });

  it.each([
    ['revision 0', { expected_service_revision: 0n }, 'expected_service_revision'],
    ['revision 2^63', { expected_service_revision: 2n ** 63n }, 'expected_service_revision'],
    ['revision 2.0', { expected_service_revision: 2.0 }, 'expected_service_revision'],
    ['schema version 2', { expected_schema_version: 2n }, 'expected_schema_version'],
  ] as const)('refuses %s', (_name, change, path) => {
    expect(issues('aipcs_service_materialise', { ...materialise, ...change })).toEqual([['invalid_value', path]]);
  });

  it('checks retired fields on materialise too', () => {
    expect(failure(parseToolRequest('aipcs_service_materialise', { ...materialise, dsn: 'x' })).code).toBe('retired_field');
  });

  const target = (): JsonObject =>
    manifest([entity('note')], { schema_version: 2n, migration_history: [{ from_schema_version: 1n, to_schema_version: 2n, operations: ['add'] }] });
  const evolve = (schema: JsonValue, extra: JsonObject = {}): JsonObject => ({
    service_id: SERVICE,
    expected_service_revision: 3n,
    expected_schema_version: 1n,
    idempotency_key: 'e-1',
    schema,
    ...extra,
  });

  it('accepts a target one version ahead of the expected one', () => {
    expect(command('aipcs_service_evolve', evolve(target()))).toMatchObject({ tool: 'aipcs_service_evolve', expectedSchemaVersion: 1, manifest: { schema_version: 2 } });
  });

  it('holds the manifest to its byte bound even when an argument checked before it is refused', () => {
    // 32 entities of 58 fields with 500-character descriptions: each part within its bound, the whole over the byte bound.
    const described = (e: number) => entity(`e${e}`, Array.from({ length: 58 }, (_, a) => attr(`f${a}`, 'string', { description: 'x'.repeat(500) })));
    const oversized = { ...target(), entities: Array.from({ length: 32 }, (_, e) => described(e)) };
    expect(issues('aipcs_service_evolve', evolve(oversized))).toEqual([['invalid_length', 'schema']]);
    expect(issues('aipcs_service_evolve', evolve(oversized, { idempotency_key: ' ' }))).toEqual([
      ['invalid_length', 'idempotency_key'],
      ['invalid_length', 'schema'],
    ]);
  });

  it('refuses a target not one version ahead with one issue at request', () => {
    expect(issues('aipcs_service_evolve', evolve(target(), { expected_schema_version: 2n }))).toEqual([['invalid_value', 'request']]);
    expect(issues('aipcs_service_evolve', evolve(target(), { expected_schema_version: 65n }))).toEqual([['invalid_value', 'expected_schema_version']]);
    // Two versions ahead: the single request issue, not the manifest's own history complaint.
    const skipping = { ...target(), schema_version: 3n };
    expect(issues('aipcs_service_evolve', evolve(skipping, { expected_schema_version: 1n }))).toEqual([['invalid_value', 'request']]);
    // Up to the highest expected version (64), a skipped version is still the one issue at request.
    expect(issues('aipcs_service_evolve', evolve({ ...target(), schema_version: 66n }, { expected_schema_version: 64n }))).toEqual([['invalid_value', 'request']]);
  });

  it('answers invalid_identifier for a non-canonical service id on materialise and evolve, before a retired field or manifest version', () => {
    const invalidIdentifier = { code: 'invalid_identifier', message: 'service_id must be a non-zero lowercase canonical UUID.', issues: [] };
    for (const serviceId of [SERVICE.toUpperCase(), '00000000-0000-0000-0000-000000000000', 7n] as const) {
      expect(failure(parseToolRequest('aipcs_service_materialise', { ...materialise, service_id: serviceId, dsn: 'x' }))).toEqual(invalidIdentifier);
      expect(failure(parseToolRequest('aipcs_service_evolve', evolve({ ...target(), manifest_version: 1n }, { service_id: serviceId, dsn: 'x' })))).toEqual(invalidIdentifier);
    }
  });

  it('uses the lifecycle wording for an unsupported manifest version', () => {
    expect(failure(parseToolRequest('aipcs_service_evolve', evolve({ ...target(), manifest_version: 3n })))).toEqual({
      code: 'manifest_version_unsupported',
      message: 'Public lifecycle intake supports manifest_version 2 only.',
      issues: [],
    });
    expect(failure(parseToolRequest('aipcs_service_evolve', evolve({ ...target(), manifest_version: 1n }))).code).toBe('legacy_import_required');
  });
});

describe('records', () => {
  const create = (record: JsonValue, extra: JsonObject = {}): JsonObject => ({ idempotency_key: 'c-1', service_id: SERVICE, entity_name: 'note', record, ...extra });

  it('keeps values as sent and trims only the keys', () => {
    const record = json('{" title ": "  A  ", "score": 1.0, "count": 1, "tags": [" x "], "gone": null, "ok": true}') as JsonObject;
    const result = command('aipcs_record_create', create(record));
    expect(result).toEqual({
      tool: 'aipcs_record_create',
      serviceId: SERVICE,
      entityName: 'note',
      record: { title: '  A  ', score: 1, count: 1n, tags: [' x '], gone: null, ok: true },
      idempotencyKey: 'c-1',
    });
    expect(command('aipcs_record_create', create({}))).toMatchObject({ record: {} });
  });

  it('accepts a string list of exactly 256 members, and a member of exactly 256 characters', () => {
    const tags = Array.from({ length: 256 }, (_, i) => `t${i}`);
    expect(command('aipcs_record_create', create({ tags }))).toMatchObject({ record: { tags } });
    expect(command('aipcs_record_create', create({ tags: ['😀'.repeat(256)] }))).toMatchObject({ record: { tags: ['😀'.repeat(256)] } });
  });

  it('answers validation_failed (not invalid_identifier) for a bad service id on data tools', () => {
    expect(issues('aipcs_record_create', create({}, { service_id: SERVICE.toUpperCase() }))).toEqual([['invalid_value', 'service_id']]);
  });

  it.each([
    ['a server-managed key', { id: RECORD }, [['invalid_value', 'record.id']]],
    ['a non-identifier key', { 'Bad-Key': 1n }, [['invalid_value', 'record.<field>']]],
    ['keys colliding once trimmed', { a: 1n, ' a': 2n }, [['invalid_value', 'record.a']]],
    ['an object value', { meta: { a: 1n } }, [['invalid_value', 'record.meta']]],
    ['a list of numbers', { tags: ['a', 1n] }, [['invalid_value', 'record.tags.1']]],
    ['a nested list', { tags: [['a']] }, [['invalid_value', 'record.tags.0']]],
    ['a duplicate list member', { tags: ['a', 'b', 'a'] }, [['invalid_value', 'record.tags.2']]],
    ['an empty list member', { tags: [''] }, [['invalid_length', 'record.tags.0']]],
    ['a 257-char list member', { tags: ['x'.repeat(257)] }, [['invalid_length', 'record.tags.0']]],
    ['257 list members', { tags: Array.from({ length: 257 }, (_, i) => `t${i}`) }, [['invalid_length', 'record.tags']]],
    ['a NUL in a string', { title: 'a\u0000b' }, [['invalid_value', 'record.title']]],
    ['a NUL in a list member', { tags: ['a\u0000'] }, [['invalid_value', 'record.tags.0']]],
    ['a lone surrogate', { title: 'a\udc00' }, [['invalid_value', 'record.title']]],
    ['a lone surrogate in a list member', { tags: ['ok', 'a\ud800'] }, [['invalid_value', 'record.tags.1']]],
    ['a string over 16 KiB', { title: 'é'.repeat(8193) }, [['invalid_length', 'record.title']]],
    ['an integer beyond signed 64', { count: 2n ** 63n }, [['invalid_value', 'record.count']]],
    ['an integer below signed 64', { count: -(2n ** 63n) - 1n }, [['invalid_value', 'record.count']]],
    ['a string of 16 KiB and one byte', { title: 'x'.repeat(16385) }, [['invalid_length', 'record.title']]],
  ] as const)('refuses %s', (_name, record, expected) => {
    expect(issues('aipcs_record_create', create(record as JsonObject))).toEqual(expected);
  });

  it('refuses a number binary64 cannot hold (1e400 reads as Infinity) wherever it is', () => {
    expect(issues('aipcs_record_create', create({ title: 'a', confidence: Infinity }))).toEqual([['invalid_value', 'record.confidence']]);
    expect(issues('aipcs_record_search', { service_id: SERVICE, entity_name: 'note', filters: { score: -Infinity } })).toEqual([['invalid_value', 'filters.score']]);
    expect(issues('aipcs_service_list', { limit: Infinity })).toEqual([['invalid_value', 'limit']]);
  });

  it('refuses a non-finite number before any other check, with the one issue at its full path', () => {
    // docs/decisions-aipcs-contract.md "Numbers at the edge": invalid_value at its path, before other checks.
    expect(issues('aipcs_record_create', create({ meta: { deep: [1n, NaN] }, id: RECORD }, { extra: 'x' }))).toEqual([['invalid_value', 'record.meta.deep.1']]);
    expect(issues('aipcs_service_list', { limit: 500n, verbose: -Infinity })).toEqual([['invalid_value', 'verbose']]);
  });

  it('measures floats as Python writes them: 1e16 is 1e+16, 1.0 is 1.0', () => {
    // {"a":"…","b":"…","c":"…","d":"…","e":1e+16}: 34 bytes of syntax, 5 of value.
    const sized = (last: number, e: number): JsonObject => ({ a: 'x'.repeat(16384), b: 'x'.repeat(16384), c: 'x'.repeat(16384), d: 'x'.repeat(last), e });
    expect(parseToolRequest('aipcs_record_create', create(sized(16384 - 39, 1e16))).ok).toBe(true);
    expect(issues('aipcs_record_create', create(sized(16384 - 38, 1e16)))).toEqual([['invalid_length', 'record']]);
    // 1.0 is three bytes, as the float it is.
    expect(parseToolRequest('aipcs_record_create', create(sized(16384 - 37, 1))).ok).toBe(true);
    expect(issues('aipcs_record_create', create(sized(16384 - 36, 1)))).toEqual([['invalid_length', 'record']]);
  });

  it('accepts both signed 64-bit integer bounds exactly', () => {
    expect(command('aipcs_record_create', create({ low: -(2n ** 63n), high: 2n ** 63n - 1n }))).toMatchObject({ record: { low: -(2n ** 63n), high: 2n ** 63n - 1n } });
  });

  it('accepts a string of exactly 16 KiB and a record of exactly 64 KiB, refuses one byte more', () => {
    expect(parseToolRequest('aipcs_record_create', create({ title: 'x'.repeat(16384) })).ok).toBe(true);
    // {"a":"…","b":"…","c":"…","d":"…"}: 29 bytes of syntax around the four values.
    const sized = (last: number): JsonObject => ({ a: 'x'.repeat(16384), b: 'x'.repeat(16384), c: 'x'.repeat(16384), d: 'x'.repeat(last) });
    expect(parseToolRequest('aipcs_record_create', create(sized(16384 - 29))).ok).toBe(true);
    expect(issues('aipcs_record_create', create(sized(16384 - 28)))).toEqual([['invalid_length', 'record']]);
    // Non-ASCII counts its UTF-8 bytes (é is 2), not the 6 of a \u00e9 escape.
    const wide = (last: number): JsonObject => ({ a: 'é'.repeat(8192), b: 'é'.repeat(8192), c: 'é'.repeat(8192), d: 'x'.repeat(last) });
    expect(parseToolRequest('aipcs_record_create', create(wide(16384 - 29))).ok).toBe(true);
    expect(issues('aipcs_record_create', create(wide(16384 - 28)))).toEqual([['invalid_length', 'record']]);
  });

  it('refuses a record of more members than 64 KiB of JSON can hold without checking each, and still measures one that could fit', () => {
    // Each member takes at least `"a":0` and a comma: 10 922 short ones fit (65 533 bytes), 10 923 cannot.
    const members = (count: number): JsonObject => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i.toString(36)}`, 0]));
    expect(issues('aipcs_record_create', create(members(200_000)))).toEqual([['invalid_length', 'record']]);
    expect(issues('aipcs_record_update', { service_id: SERVICE, entity_name: 'note', record_id: SERVICE, expected_record_version: 1n, idempotency_key: 'u', updates: members(200_000) })).toEqual([['invalid_length', 'updates']]);
    // Below the count, the bytes decide: 6 000 members of at most 9 bytes each fit, 8 000 do not.
    expect(parseToolRequest('aipcs_record_create', create(members(6_000))).ok).toBe(true);
    expect(issues('aipcs_record_create', create(members(8_000)))).toEqual([['invalid_length', 'record']]);
  });

  it('finds a retired key after any number of other objects', () => {
    const design = (extra: JsonValue[]): JsonObject => ({ service_id: SERVICE, idempotency_key: 'd', schema: { manifest_version: 2n, entities: [{ name: 'note', tools: [] }] }, padding: extra });
    const many = Array.from({ length: 1_100_000 }, (): JsonValue => ({}));
    for (const extra of [[], many]) expect(failure(parseToolRequest('aipcs_service_design', design(extra))).code).toBe('retired_field');
  });

  it('reserves the __aipcs_ key prefix for the server', () => {
    expect(issues('aipcs_record_create', create({}, { idempotency_key: '__aipcs_write_admission' }))).toEqual([['invalid_value', 'idempotency_key']]);
    expect(parseToolRequest('aipcs_service_seed', { domain_name: 'x', domain_class: 'c', intent_description: 'i', idempotency_key: '__aipcs_x' }).ok).toBe(true);
  });

  it.each<[string, JsonObject]>([
    ['aipcs_record_create', { service_id: SERVICE, entity_name: 'note', record: {} }],
    ['aipcs_record_update', { service_id: SERVICE, entity_name: 'note', record_id: RECORD, updates: { title: 'B' }, expected_record_version: 1n }],
    ['aipcs_record_delete', { service_id: SERVICE, entity_name: 'note', record_id: RECORD, expected_record_version: 1n }],
    ['aipcs_branch_create', { service_id: SERVICE, slug: 'topic', title: 'T', intent: 'I' }],
    ['aipcs_branch_update', { service_id: SERVICE, branch_id: RECORD, expected_branch_revision: 1n, updates: { title: 'T' } }],
    [
      'aipcs_branch_assign_records',
      { service_id: SERVICE, branch_id: RECORD, role: 'primary', operation: 'assign', records: [{ entity_name: 'note', record_id: RECORD, expected_record_version: 1n }] },
    ],
  ])('reserves the __aipcs_ key prefix on the data mutation %s (contract §6.4)', (tool, args) => {
    expect(parseToolRequest(tool, { ...args, idempotency_key: 'k-1' }).ok).toBe(true);
    expect(issues(tool, { ...args, idempotency_key: '__aipcs_k' })).toEqual([['invalid_value', 'idempotency_key']]);
    // Only a key that starts with the prefix is reserved.
    for (const idempotency_key of ['k__aipcs_', 'x__aipcs_k']) expect(parseToolRequest(tool, { ...args, idempotency_key }).ok).toBe(true);
  });

  it('refuses U+0000 in every free-text argument kept outside the manifest', () => {
    const seed = { domain_name: 'x', domain_class: 'c\u0000', intent_description: 'i\u0000', idempotency_key: 's\u0000' };
    expect(issues('aipcs_service_seed', seed)).toEqual([
      ['invalid_value', 'idempotency_key'],
      ['invalid_value', 'domain_class'],
      ['invalid_value', 'intent_description'],
    ]);
    expect(issues('aipcs_record_create', create({ title: 'a' }, { idempotency_key: 'k\u0000' }))).toEqual([['invalid_value', 'idempotency_key']]);
    expect(issues('aipcs_service_materialise', { service_id: SERVICE, expected_service_revision: 2n, expected_schema_version: 1n, idempotency_key: '\u0000m' })).toEqual([
      ['invalid_value', 'idempotency_key'],
    ]);
    const branch = { idempotency_key: 'b', service_id: SERVICE, slug: 'topic', title: 't\u0000', intent: '\u0000', retrieval_summary: 'r\u0000' };
    expect(issues('aipcs_branch_create', branch)).toEqual([
      ['invalid_value', 'title'],
      ['invalid_value', 'intent'],
      ['invalid_value', 'retrieval_summary'],
    ]);
    const updates = { title: 't\u0000', intent: 'i\u0000', retrieval_summary: 'r\u0000' };
    expect(issues('aipcs_branch_update', { idempotency_key: 'u', service_id: SERVICE, branch_id: RECORD, expected_branch_revision: 1n, updates })).toEqual([
      ['invalid_value', 'updates.title'],
      ['invalid_value', 'updates.intent'],
      ['invalid_value', 'updates.retrieval_summary'],
    ]);
    // Other control characters and manifest text stay accepted.
    expect(parseToolRequest('aipcs_service_seed', { ...seed, domain_class: 'c\u0001', intent_description: 'i\u2028', idempotency_key: 's\u001f' }).ok).toBe(true);
  });

  it('requires at least one update and strict versions', () => {
    const update = { idempotency_key: 'u-1', service_id: SERVICE, entity_name: 'note', record_id: RECORD, updates: { title: 'B' }, expected_record_version: 1n };
    expect(command('aipcs_record_update', update)).toMatchObject({ updates: { title: 'B' }, expectedRecordVersion: 1n });
    expect(issues('aipcs_record_update', { ...update, updates: {} })).toEqual([['invalid_length', 'updates']]);
    expect(issues('aipcs_record_update', { ...update, updates: { record_version: 2n } })).toEqual([['invalid_value', 'updates.record_version']]);
    expect(issues('aipcs_record_update', { ...update, expected_record_version: 1.0 })).toEqual([['invalid_value', 'expected_record_version']]);
    expect(command('aipcs_record_update', { ...update, expected_record_version: 7n })).toMatchObject({ expectedRecordVersion: 7n });
    expect(command('aipcs_record_delete', { idempotency_key: 'd', service_id: SERVICE, entity_name: 'note', record_id: RECORD, expected_record_version: 7n })).toMatchObject({
      recordId: RECORD,
      expectedRecordVersion: 7n,
    });
    expect(issues('aipcs_record_delete', { idempotency_key: 'd', service_id: SERVICE, entity_name: 'note', record_id: RECORD, expected_record_version: 0n })).toEqual([
      ['invalid_value', 'expected_record_version'],
    ]);
  });

  it.each([
    ['aipcs_record_list', { service_id: SERVICE, entity_name: 'note' }],
    ['aipcs_record_search', { service_id: SERVICE, entity_name: 'note', filters: { status: 'open' } }],
    ['aipcs_record_history', { service_id: SERVICE, entity_name: 'note' }],
    ['aipcs_branch_list', { service_id: SERVICE }],
    ['aipcs_maintenance_scan', { service_id: SERVICE }],
  ] as const)('bounds the %s page size to 1..100', (tool, args) => {
    const pageSize = (limit: bigint): number | undefined => {
      const parsed = command(tool, { ...args, limit });
      return 'page' in parsed ? parsed.page.limit : 'limit' in parsed ? parsed.limit : undefined;
    };
    expect([pageSize(1n), pageSize(100n)]).toEqual([1, 100]);
    expect(issues(tool, { ...args, limit: 0n })).toEqual([['invalid_value', 'limit']]);
    expect(issues(tool, { ...args, limit: 101n })).toEqual([['invalid_value', 'limit']]);
  });

  it('pages with defaults and requires branch id and role together', () => {
    expect(command('aipcs_record_list', { service_id: SERVICE, entity_name: 'note' })).toEqual({
      tool: 'aipcs_record_list',
      serviceId: SERVICE,
      entityName: 'note',
      page: { limit: 50, cursor: null },
      branchScope: null,
    });
    expect(command('aipcs_record_list', { service_id: SERVICE, entity_name: 'note', branch_id: RECORD, branch_role: 'primary', cursor: 'abc_-9' })).toMatchObject({
      page: { limit: 50, cursor: 'abc_-9' },
      branchScope: { branchId: RECORD, role: 'primary' },
    });
    expect(issues('aipcs_record_list', { service_id: SERVICE, entity_name: 'note', branch_id: RECORD })).toEqual([['invalid_value', 'request']]);
    expect(issues('aipcs_record_list', { service_id: SERVICE, entity_name: 'note', branch_role: 'related', branch_id: null })).toEqual([['invalid_value', 'request']]);
    const search = { service_id: SERVICE, entity_name: 'note', filters: { status: 'open' } };
    expect(command('aipcs_record_search', { ...search, branch_id: RECORD, branch_role: 'related' })).toMatchObject({ branchScope: { branchId: RECORD, role: 'related' } });
    expect(issues('aipcs_record_search', { ...search, branch_id: RECORD })).toEqual([['invalid_value', 'request']]);
    expect(issues('aipcs_record_search', { ...search, branch_role: 'primary' })).toEqual([['invalid_value', 'request']]);
  });

  it("checks only a cursor's length; its characters are the core's to judge, after the service is located", () => {
    // Contract §3.3 and §6.12: a bad cursor is semantic validation (empty issues), not request shape.
    expect(command('aipcs_record_history', { service_id: SERVICE, entity_name: 'note', cursor: 'abc+/=' })).toMatchObject({ page: { cursor: 'abc+/=' } });
    expect(issues('aipcs_record_history', { service_id: SERVICE, entity_name: 'note', cursor: 'a'.repeat(1025) })).toEqual([['invalid_length', 'cursor']]);
    expect(issues('aipcs_branch_list', { service_id: SERVICE, cursor: '' })).toEqual([['invalid_length', 'cursor']]);
    expect(command('aipcs_record_history', { service_id: SERVICE, entity_name: 'note' })).toMatchObject({ recordId: null, page: { limit: 50, cursor: null } });
    expect(command('aipcs_record_history', { service_id: SERVICE, entity_name: 'note', record_id: RECORD })).toMatchObject({ recordId: RECORD });
  });

  it('checks search filters: 1..16 identifier keys with one scalar each', () => {
    const search = (filters: JsonValue): JsonObject => ({ service_id: SERVICE, entity_name: 'note', filters });
    expect(command('aipcs_record_search', search(json('{" status ": "open", "score": 1.0, "n": 2, "flag": false}') as JsonObject))).toMatchObject({
      filters: { status: 'open', score: 1, n: 2n, flag: false },
    });
    expect(issues('aipcs_record_search', search({}))).toEqual([['invalid_length', 'filters']]);
    expect(parseToolRequest('aipcs_record_search', search(Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`f${i}`, 'x'])))).ok).toBe(true);
    expect(issues('aipcs_record_search', search(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`f${i}`, 'x']))))).toEqual([['invalid_length', 'filters']]);
    expect(issues('aipcs_record_search', search({ status: null }))).toEqual([['invalid_value', 'filters.status']]);
    expect(issues('aipcs_record_search', search({ tags: ['a'] }))).toEqual([['invalid_value', 'filters.tags']]);
    expect(issues('aipcs_record_search', search({ 'a.b': 'x' }))).toEqual([['invalid_value', 'filters.<field>']]);
  });
});

describe('discovery and maintenance', () => {
  it('applies summary and bootstrap defaults and bounds', () => {
    expect(command('aipcs_service_summary', { service_id: SERVICE })).toEqual({ tool: 'aipcs_service_summary', serviceId: SERVICE, sample: 0 });
    expect(issues('aipcs_service_summary', { service_id: SERVICE, sample: 4n })).toEqual([['invalid_value', 'sample']]);
    expect(command('aipcs_bootstrap', {})).toEqual({ tool: 'aipcs_bootstrap', limit: 100 });
  });

  it('applies maintenance defaults', () => {
    expect(command('aipcs_maintenance_scan', { service_id: SERVICE })).toEqual({
      tool: 'aipcs_maintenance_scan',
      serviceId: SERVICE,
      entityName: null,
      branchId: null,
      scanTypes: ['expired', 'stale', 'low_confidence', 'superseded', 'missing_authority', 'unbranched', 'duplicate_authority', 'blob_candidate'],
      staleAfterDays: 90,
      lowConfidenceBelow: 0.5,
      limit: 50,
    });
    expect(command('aipcs_maintenance_scan', { service_id: SERVICE, low_confidence_below: 1n, scan_types: ['stale'] })).toMatchObject({ lowConfidenceBelow: 1, scanTypes: ['stale'] });
    const all = ['blob_candidate', 'duplicate_authority', 'unbranched', 'missing_authority', 'superseded', 'low_confidence', 'stale', 'expired'];
    expect(command('aipcs_maintenance_scan', { service_id: SERVICE, scan_types: all })).toMatchObject({ scanTypes: all });
    expect(command('aipcs_maintenance_scan', { service_id: SERVICE, entity_name: 'note', branch_id: RECORD, stale_after_days: 7n, limit: 3n })).toMatchObject({
      entityName: 'note',
      branchId: RECORD,
      staleAfterDays: 7,
      limit: 3,
    });
  });

  it.each([
    ['duplicate scan types', { scan_types: ['stale', 'expired', 'stale'] }, [['invalid_value', 'scan_types.2']]],
    ['no scan types', { scan_types: [] }, [['invalid_length', 'scan_types']]],
    ['nine scan types', { scan_types: ['expired', 'stale', 'low_confidence', 'superseded', 'missing_authority', 'unbranched', 'duplicate_authority', 'blob_candidate', 'stale'] }, [['invalid_length', 'scan_types']]],
    ['an unknown scan type', { scan_types: ['orphans'] }, [['invalid_value', 'scan_types.0']]],
    ['a threshold above 1', { low_confidence_below: 1.5 }, [['invalid_value', 'low_confidence_below']]],
    ['a boolean threshold', { low_confidence_below: true }, [['invalid_value', 'low_confidence_below']]],
    ['a string threshold', { low_confidence_below: '0.5' }, [['invalid_value', 'low_confidence_below']]],
    ['3651 stale days', { stale_after_days: 3651n }, [['invalid_value', 'stale_after_days']]],
    ['an entity name that is no identifier', { entity_name: 'Note' }, [['invalid_value', 'entity_name']]],
  ] as const)('refuses %s', (_name, change, expected) => {
    expect(issues('aipcs_maintenance_scan', { service_id: SERVICE, ...change } as JsonObject)).toEqual(expected);
  });
});

describe('branches', () => {
  const create = { idempotency_key: 'b-1', service_id: SERVICE, slug: 'release-notes', title: 'Release', intent: 'Track releases.' };

  it('creates with nullable defaults', () => {
    expect(command('aipcs_branch_create', create)).toMatchObject({ branchType: null, parentBranchId: null, retrievalSummary: null });
  });

  it.each([
    ['a 2-char slug', { slug: 'ab' }, [['invalid_length', 'slug']]],
    ['an uppercase slug', { slug: 'Release' }, [['invalid_value', 'slug']]],
    ['a slug ending in a hyphen', { slug: 'release-' }, [['invalid_value', 'slug']]],
    ['a branch type with a dot', { branch_type: 'topic.x' }, [['invalid_value', 'branch_type']]],
    ['a blank retrieval summary', { retrieval_summary: '   ' }, [['invalid_length', 'retrieval_summary']]],
    ['a non-canonical parent', { parent_branch_id: RECORD.toUpperCase() }, [['invalid_value', 'parent_branch_id']]],
  ] as const)('refuses %s', (_name, change, expected) => {
    expect(issues('aipcs_branch_create', { ...create, ...change })).toEqual(expected);
  });

  const update = (updates: JsonValue): JsonObject => ({ idempotency_key: 'u', service_id: SERVICE, branch_id: RECORD, expected_branch_revision: 1n, updates });

  it('keeps only the supplied updates, distinguishing absent from null', () => {
    const result = command('aipcs_branch_update', update({ branch_type: null, title: ' New ' }));
    expect(result).toMatchObject({ updates: { branchType: null, title: 'New' }, suppliedUpdates: { branch_type: null, title: 'New' } });
    if (result.tool === 'aipcs_branch_update') expect(Object.keys(result.updates)).toEqual(['title', 'branchType']);
  });

  it('clears the parent and the summary with null, and keeps a supplied status, intent and parent', () => {
    expect(command('aipcs_branch_update', update({ parent_branch_id: null, retrieval_summary: null }))).toMatchObject({
      updates: { parentBranchId: null, retrievalSummary: null },
      suppliedUpdates: { parent_branch_id: null, retrieval_summary: null },
    });
    expect(command('aipcs_branch_update', update({ intent: 'Why', status: 'archived', parent_branch_id: SERVICE, retrieval_summary: 'S' }))).toMatchObject({
      updates: { intent: 'Why', status: 'archived', parentBranchId: SERVICE, retrievalSummary: 'S' },
    });
  });

  it.each([
    ['empty updates', {}, [['invalid_length', 'updates']]],
    ['a null title', { title: null }, [['invalid_value', 'updates.title']]],
    ['a null intent', { intent: null }, [['invalid_value', 'updates.intent']]],
    ['a null status', { status: null }, [['invalid_value', 'updates.status']]],
    ['a NUL in the title', { title: 'a\u0000b' }, [['invalid_value', 'updates.title']]],
    ['a NUL in the intent', { intent: 'a\u0000b' }, [['invalid_value', 'updates.intent']]],
    ['a NUL in the summary', { retrieval_summary: 'a\u0000b' }, [['invalid_value', 'updates.retrieval_summary']]],
    ['a slug change', { slug: 'other' }, [['unknown_field', 'updates.slug']]],
    ['an empty summary', { retrieval_summary: '' }, [['invalid_length', 'updates.retrieval_summary']]],
    ['an unknown status', { status: 'deleted' }, [['invalid_value', 'updates.status']]],
  ] as const)('refuses %s', (_name, updates, expected) => {
    expect(issues('aipcs_branch_update', update(updates as JsonObject))).toEqual(expected);
  });

  it('holds each update to the bound of the same field at create: title 160, intent 1000, branch type 80, summary 1000', () => {
    const atLimit = { title: 't'.repeat(160), intent: 'i'.repeat(1000), branch_type: 'b'.repeat(80), retrieval_summary: 'r'.repeat(1000) };
    expect(command('aipcs_branch_update', update(atLimit))).toMatchObject({ suppliedUpdates: atLimit });
    expect(issues('aipcs_branch_update', update({ title: 't'.repeat(161) }))).toEqual([['invalid_length', 'updates.title']]);
    expect(issues('aipcs_branch_update', update({ intent: 'i'.repeat(1001) }))).toEqual([['invalid_length', 'updates.intent']]);
    expect(issues('aipcs_branch_update', update({ branch_type: 'b'.repeat(81) }))).toEqual([['invalid_length', 'updates.branch_type']]);
    expect(issues('aipcs_branch_update', update({ retrieval_summary: 'r'.repeat(1001) }))).toEqual([['invalid_length', 'updates.retrieval_summary']]);
  });

  const assign = (records: JsonValue): JsonObject => ({ idempotency_key: 'a', service_id: SERVICE, branch_id: RECORD, role: 'primary', operation: 'assign', records });
  const target = (entityName: string, recordId: string, version: bigint = 1n): JsonObject => ({ entity_name: entityName, record_id: recordId, expected_record_version: version });

  it('assigns bounded, distinct targets in request order', () => {
    expect(command('aipcs_branch_assign_records', assign([target('note', RECORD), target('task', RECORD, 3n)]))).toMatchObject({
      records: [
        { entityName: 'note', recordId: RECORD, expectedRecordVersion: 1n },
        { entityName: 'task', recordId: RECORD, expectedRecordVersion: 3n },
      ],
    });
    expect(issues('aipcs_branch_assign_records', assign([target('note', RECORD), target('note', RECORD, 2n)]))).toEqual([['invalid_value', 'records.1']]);
    expect(issues('aipcs_branch_assign_records', assign([]))).toEqual([['invalid_length', 'records']]);
    // Exactly 100 distinct targets are accepted.
    const hundred = Array.from({ length: 100 }, (_, i) => target('note', `${RECORD.slice(0, -3)}${i.toString(16).padStart(3, '0')}`));
    const accepted = command('aipcs_branch_assign_records', assign(hundred));
    expect(accepted.tool === 'aipcs_branch_assign_records' ? accepted.records.length : 0).toBe(100);
    expect(issues('aipcs_branch_assign_records', assign(Array.from({ length: 101 }, () => target('note', RECORD))))).toEqual([['invalid_length', 'records']]);
    expect(issues('aipcs_branch_assign_records', assign([{ ...target('note', RECORD), role: 'x' }]))).toEqual([['unknown_field', 'records.0.role']]);
    expect(issues('aipcs_branch_assign_records', { ...assign([target('note', RECORD)]), operation: 'move' })).toEqual([['invalid_value', 'operation']]);
  });

  it('lists with optional exact filters', () => {
    expect(command('aipcs_branch_list', { service_id: SERVICE, status: 'archived' })).toEqual({
      tool: 'aipcs_branch_list',
      serviceId: SERVICE,
      status: 'archived',
      branchType: null,
      parentBranchId: null,
      page: { limit: 50, cursor: null },
    });
    expect(issues('aipcs_branch_list', { service_id: SERVICE, status: 'deleted' })).toEqual([['invalid_value', 'status']]);
  });
});
