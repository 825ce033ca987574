import { describe, expect, it } from 'vitest';
import { parseJson, type JsonObject } from '../../../src/common/json.js';
import { SafeError } from '../../../src/common/errors.js';
import {
  AipcsError,
  ERROR_CODES,
  ERROR_SITUATIONS,
  isRetryableCode,
  validationFailed,
  type ErrorSituation,
} from '../../../src/aipcs/contract/error-codes.js';
import {
  envelopeForError,
  failureEnvelope,
  renderEnvelopeText,
  successEnvelope,
  toToolResult,
} from '../../../src/aipcs/contract/envelope.js';
import { formatIssuePath, makeIssue, MAX_ISSUES } from '../../../src/aipcs/contract/issues.js';

describe('error codes', () => {
  it('enumerates the 26 codes in output-schema order', () => {
    expect(ERROR_CODES).toEqual([
      'invalid_request',
      'invalid_identifier',
      'validation_failed',
      'retired_field',
      'manifest_version_unsupported',
      'legacy_import_required',
      'not_found',
      'already_exists',
      'invalid_state',
      'unsupported_operation',
      'conflict',
      'unsupported_transition',
      'stale_revision',
      'stale_record_version',
      'stale_branch_revision',
      'changed_fingerprint',
      'constraint_violation',
      'operation_in_progress',
      'recovery_required',
      'storage_busy',
      'storage_migration_required',
      'operation_uncertain',
      'storage_unavailable',
      'forbidden',
      'transport_not_supported',
      'internal_error',
    ]);
  });

  it('marks exactly storage_busy, operation_uncertain and operation_in_progress retryable', () => {
    expect(ERROR_CODES.filter(isRetryableCode)).toEqual(['operation_in_progress', 'storage_busy', 'operation_uncertain']);
    expect(new AipcsError('operation_uncertain_data').retryable).toBe(true);
    expect(new AipcsError('stale_revision').retryable).toBe(false);
  });

  it('has a situation for every code', () => {
    const covered = new Set(Object.values(ERROR_SITUATIONS).map((situation) => situation.code));
    expect(ERROR_CODES.filter((code) => !covered.has(code))).toEqual([]);
  });

  const exact: [ErrorSituation, string, string][] = [
    ['validation_failed', 'validation_failed', 'Request failed public contract validation.'],
    ['invalid_identifier', 'invalid_identifier', 'service_id must be a non-zero lowercase canonical UUID.'],
    ['retired_field', 'retired_field', 'The request contains a field retired from the public v1 contract.'],
    ['legacy_import_required', 'legacy_import_required', 'Manifest version 1 is private legacy input; use the explicit legacy importer.'],
    ['manifest_version_unsupported_design', 'manifest_version_unsupported', 'Public design intake supports manifest_version 2 only.'],
    ['manifest_version_unsupported_lifecycle', 'manifest_version_unsupported', 'Public lifecycle intake supports manifest_version 2 only.'],
    ['not_found_service', 'not_found', 'The requested service was not found.'],
    ['not_found_data', 'not_found', 'The requested record or branch was not found.'],
    ['conflict', 'conflict', 'The request conflicts with existing application state.'],
    ['invalid_state', 'invalid_state', 'The service is not in a state that permits this operation.'],
    ['unsupported_operation', 'unsupported_operation', 'The requested MCP tool is unavailable.'],
    ['unsupported_transition', 'unsupported_transition', 'The service lifecycle transition is not supported.'],
    ['stale_revision', 'stale_revision', 'The service lifecycle precondition is stale.'],
    ['changed_fingerprint', 'changed_fingerprint', 'The idempotency key cannot be reused for a different request.'],
    ['operation_in_progress', 'operation_in_progress', 'A lifecycle operation is already in progress.'],
    ['recovery_required', 'recovery_required', 'The service requires recovery before lifecycle work can continue.'],
    ['storage_busy', 'storage_busy', 'Storage is temporarily busy.'],
    ['operation_uncertain_lifecycle', 'operation_uncertain', 'The lifecycle operation outcome is uncertain.'],
    ['operation_uncertain_data', 'operation_uncertain', 'The operation outcome is uncertain.'],
    ['storage_unavailable', 'storage_unavailable', 'Storage is unavailable.'],
    ['stale_record_version', 'stale_record_version', 'The record version precondition is stale.'],
    ['stale_branch_revision', 'stale_branch_revision', 'The branch revision precondition is stale.'],
    ['already_exists', 'already_exists', 'The requested record or branch already exists.'],
    ['constraint_violation', 'constraint_violation', 'The requested data relationship is not permitted.'],
    ['storage_migration_required', 'storage_migration_required', 'Service storage requires migration.'],
    ['internal_error', 'internal_error', 'The request could not be completed safely.'],
    ['internal_error_application', 'internal_error', 'The application operation could not be completed.'],
  ];

  it.each(exact)('%s has code %s and its exact message', (situation, code, message) => {
    const error = new AipcsError(situation);
    expect(error.code).toBe(code);
    expect(error.message).toBe(message);
    expect(error).toBeInstanceOf(SafeError);
  });
});

describe('issue paths', () => {
  it.each([
    [['schema', 'entities', 0, 'attributes', 8], 'schema.entities.0.attributes.8'],
    [['records', 0, 'record_id'], 'records.0.record_id'],
    [['updates', 'title'], 'updates.title'],
    [[], 'request'],
    [['record', 'bad-key'], 'record.<field>'],
    [['record', '1abc'], 'record.<field>'],
    [['record', 'x'.repeat(65)], 'record.<field>'],
    [['record', 'x'.repeat(64)], `record.${'x'.repeat(64)}`],
    [['record', 'Ünïcode_ok'], 'record.Ünïcode_ok'],
    // Characters, not UTF-16 units: 64 astral letters (128 units) are still a segment, 65 are not.
    [['record', '\u{1D400}'.repeat(64)], `record.${'\u{1D400}'.repeat(64)}`],
    [['record', '\u{1D400}'.repeat(65)], 'record.<field>'],
    [['record', ''], 'record.<field>'],
  ] as const)('%j → %s', (path, expected) => {
    expect(formatIssuePath(path)).toBe(expected);
  });

  it('truncates to 240 characters', () => {
    const path = Array.from({ length: 10 }, () => 'x'.repeat(60));
    expect(formatIssuePath(path)).toHaveLength(240);
    // 240 characters, never half of a surrogate pair.
    const astral = formatIssuePath(Array.from({ length: 4 }, () => '\u{1D400}'.repeat(64)));
    expect([...astral]).toHaveLength(240);
    expect(astral.endsWith('\u{1D400}')).toBe(true);
    expect(makeIssue('invalid_value', '\u{1F600}'.repeat(300)).path).toBe('\u{1F600}'.repeat(240));
  });

  it('fills the fixed vocabulary texts', () => {
    expect(makeIssue('field_required', ['service_id'])).toEqual({
      code: 'field_required',
      path: 'service_id',
      message: 'A required field is missing.',
      remediation: 'Provide the required field and retry.',
    });
    expect(makeIssue('unknown_field', ['x']).message).toBe('The request contains an unsupported field.');
    expect(makeIssue('invalid_length', ['x']).remediation).toBe('Adjust the field length to the documented bound and retry.');
  });
});

describe('envelope', () => {
  it('renders success with keys ok, result, error and Python float numbers', () => {
    const result = parseJson('{"record_version": 2, "fields": {"confidence": 1.0, "big": 1e16, "small": 0.00001, "third": 0.1, "count": 12345678901234567890}}') as JsonObject;
    expect(renderEnvelopeText(successEnvelope(result))).toBe(
      '{"ok":true,"result":{"record_version":2,"fields":{"confidence":1.0,"big":1e+16,"small":1e-05,"third":0.1,"count":12345678901234567890}},"error":null}',
    );
  });

  it('escapes every non-ASCII character, astral ones as surrogate pairs', () => {
    const text = renderEnvelopeText(successEnvelope({ title: 'café 😀 \u007f "q" \\ \n' }));
    expect(text).toBe('{"ok":true,"result":{"title":"caf\\u00e9 \\ud83d\\ude00 \\u007f \\"q\\" \\\\ \\n"},"error":null}');
    expect([...text].every((char) => char.charCodeAt(0) < 0x80)).toBe(true);
    expect(JSON.parse(text).result.title).toBe('café 😀 \u007f "q" \\ \n');
  });

  it('renders failures with error keys code, message, issues, retryable and issue keys in order', () => {
    const error = validationFailed([makeIssue('field_required', ['service_id'])]);
    expect(renderEnvelopeText(failureEnvelope(error))).toBe(
      '{"ok":false,"result":null,"error":{"code":"validation_failed","message":"Request failed public contract validation.","issues":[{"code":"field_required","path":"service_id","message":"A required field is missing.","remediation":"Provide the required field and retry."}],"retryable":false}}',
    );
  });

  it('sets retryable from the code', () => {
    expect(failureEnvelope(new AipcsError('storage_busy')).error.retryable).toBe(true);
    expect(failureEnvelope(new AipcsError('conflict')).error.retryable).toBe(false);
  });

  it('keeps at most 32 issues', () => {
    const issues = Array.from({ length: 40 }, (_, i) => makeIssue('unknown_field', [`f${i}`]));
    expect(failureEnvelope(validationFailed(issues)).error.issues).toHaveLength(MAX_ISSUES);
  });

  it('builds a CallToolResult whose structuredContent equals the parsed text', () => {
    const ok = toToolResult(successEnvelope({ n: 1n, x: 2.5 }));
    expect(ok.isError).toBe(false);
    expect(ok.content).toHaveLength(1);
    expect(ok.content[0]?.type).toBe('text');
    expect(JSON.parse(ok.content[0]?.text ?? '')).toEqual({ ok: true, result: { n: 1, x: 2.5 }, error: null });
    expect(ok.structuredContent).toEqual({ ok: true, result: { n: 1n, x: 2.5 }, error: null });
    const failed = toToolResult(failureEnvelope(new AipcsError('not_found_data')));
    expect(failed.isError).toBe(true);
  });

  it('turns an unrenderable result into the internal error envelope', () => {
    const result = toToolResult(successEnvelope({ bad: Number.NaN }));
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toBe(
      '{"ok":false,"result":null,"error":{"code":"internal_error","message":"The request could not be completed safely.","issues":[],"retryable":false}}',
    );
  });
});

describe('nothing internal leaks', () => {
  const secrets = ['SELECT * FROM aipcs_registry_service', '/home/agent/data/registry.sqlite', 'postgres://user:pw@host/db', 'principal-42', 'SQLITE_BUSY: database is locked'];

  it('never renders the cause of a contract error', () => {
    for (const secret of secrets) {
      const text = renderEnvelopeText(envelopeForError(new AipcsError('storage_busy', { cause: new Error(secret) })));
      expect(text).not.toContain(secret);
      expect(text).toContain('Storage is temporarily busy.');
    }
  });

  it('maps any other thrown value to the generic internal error', () => {
    for (const secret of secrets) {
      for (const thrown of [new Error(secret), new SafeError('storage_busy', secret), secret, { message: secret }]) {
        const text = renderEnvelopeText(envelopeForError(thrown));
        expect(text).not.toContain(secret);
        expect(JSON.parse(text).error).toEqual({ code: 'internal_error', message: 'The request could not be completed safely.', issues: [], retryable: false });
      }
    }
  });

  it('builds errors only from the closed situation table', () => {
    for (const situation of Object.keys(ERROR_SITUATIONS) as ErrorSituation[]) {
      const message = new AipcsError(situation).message;
      expect(message.length).toBeGreaterThan(0);
      expect(message.length).toBeLessThanOrEqual(500);
      expect(message).toBe(message.split(/\s+/).join(' '));
    }
  });
});
