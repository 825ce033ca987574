// The admin error mapper in process (§1.9.7): each kind of failure an admin
// command can throw becomes its code, retryable flag and exit status. Most
// storage failures reach it already classified by the core, so the CLI tests
// do not reach every branch here.

import { describe, expect, it } from 'vitest';
import { adminError, adminErrorFrom, refusal } from '../../../src/aipcs/cli/admin-errors.js';
import { CLI_ERROR_CODES, CLI_INTERNAL_ERROR } from '../../../src/aipcs/cli/error-document.js';
import { normaliseErrorDocument } from '../../../src/aipcs/cli/output.js';
import { exitCodeForError } from '../../../src/aipcs/cli/exit-codes.js';
import { AdminStorageUnavailable } from '../../../src/aipcs/compose.js';
import { AipcsError } from '../../../src/aipcs/contract/error-codes.js';
import { UnfinishedOperation } from '../../../src/aipcs/core/operations.js';
import { StorageFailure } from '../../../src/aipcs/core/ports.js';
import { BundleInvalidError } from '../../../src/aipcs/portable/index.js';

function outcome(error: unknown): [string, boolean, number] {
  const document = adminErrorFrom(error);
  return [document.code, document.retryable, exitCodeForError(document, 'admin')];
}

describe('admin error mapping (§1.9.7)', () => {
  it('maps each storage failure kind to its outcome', () => {
    expect(outcome(new StorageFailure('busy'))).toEqual(['storage_busy', true, 4]);
    expect(outcome(new StorageFailure('uncertain'))).toEqual(['operation_uncertain', true, 4]);
    expect(outcome(new StorageFailure('migration_required'))).toEqual(['storage_migration_required', false, 3]);
    for (const kind of ['unavailable', 'constraint', 'incompatible', 'fence_closed'] as const) {
      expect(outcome(new StorageFailure(kind)), kind).toEqual(['storage_unavailable', false, 6]);
    }
    expect(outcome(new AdminStorageUnavailable())).toEqual(['storage_unavailable', false, 6]);
  });

  it('keeps a contract error code and its issues, remediation included, with the fixed admin message', () => {
    const issue = { code: 'invalid_value', path: 'expected_revision', message: 'The revision is stale.', remediation: 'Inspect the service again.' } as const;
    const document = adminErrorFrom(new AipcsError('stale_revision', { issues: [issue] }));
    expect(document).toEqual({ code: 'stale_revision', message: 'The service lifecycle precondition is stale.', issues: [issue], retryable: false });
  });

  it('says an unknown service was not found in the words of the registry tools (contract §3.4 table)', () => {
    expect(adminErrorFrom(new AipcsError('not_found_service'))).toEqual({ code: 'not_found', message: 'The requested service was not found.', issues: [], retryable: false });
  });

  it('names the defective artefact line, or the artefact as a whole', () => {
    expect(adminErrorFrom(new BundleInvalidError('trailer_invalid', 7)).issues[0]?.path).toBe('artifact.line[7]');
    expect(adminErrorFrom(new BundleInvalidError('trailer_invalid')).issues[0]?.path).toBe('artifact');
    expect(outcome(new BundleInvalidError('trailer_invalid', 7))).toEqual(['validation_failed', false, 2]);
  });

  it('names an unfinished operation with its article and remedy', () => {
    expect(adminErrorFrom(new UnfinishedOperation('operation_in_progress', { kind: 'archive' })).message).toBe(
      'A lifecycle operation is already in progress. An archive of this service is unfinished or still running; to finish it, repeat that command with the operation id it was given.',
    );
    expect(adminErrorFrom(new UnfinishedOperation('operation_in_progress', { kind: 'suspend' })).message).toContain(' A suspend of this service ');
  });

  it('gives every code a safe message of its own or the internal one, printed as it is', () => {
    for (const code of CLI_ERROR_CODES) {
      const document = adminError(code);
      expect(document.message, code).not.toBe('');
      expect(normaliseErrorDocument(document).message, code).toBe(document.message);
    }
    // A code without an operator text says the generic one.
    expect(adminError('forbidden').message).toBe(CLI_INTERNAL_ERROR.message);
  });

  it('passes an edge refusal through and turns anything else into the internal error', () => {
    expect(adminErrorFrom(refusal('invalid_state'))).toEqual({
      code: 'invalid_state',
      message: 'The operation was not confirmed; nothing was changed.',
      issues: [],
      retryable: false,
    });
    expect(adminErrorFrom(new Error('/secret/path'))).toBe(CLI_INTERNAL_ERROR);
    expect(adminErrorFrom('text')).toBe(CLI_INTERNAL_ERROR);
  });
});
