import { describe, expect, it } from 'vitest';
import { CLI_ERROR_CODES, type CliErrorCode } from '../../../src/aipcs/cli/error-document.js';
import { EXIT_CODE_BY_ERROR_CODE, exitCodeForError } from '../../../src/aipcs/cli/exit-codes.js';

const TABLE: Record<2 | 3 | 4 | 5 | 6, CliErrorCode[]> = {
  2: ['invalid_request', 'invalid_identifier', 'validation_failed', 'retired_field', 'manifest_version_unsupported', 'legacy_import_required', 'transport_not_supported'],
  3: [
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
    'storage_migration_required',
    'forbidden',
  ],
  4: ['operation_in_progress', 'storage_busy', 'operation_uncertain'],
  5: ['recovery_required'],
  6: ['storage_unavailable', 'internal_error'],
};

describe('exit codes (§1.4)', () => {
  it('maps every error code, and only those', () => {
    const mapped = Object.values(TABLE).flat();
    expect([...mapped].sort()).toEqual([...CLI_ERROR_CODES].sort());
    expect(Object.keys(EXIT_CODE_BY_ERROR_CODE).sort()).toEqual([...CLI_ERROR_CODES].sort());
  });

  it.each(Object.entries(TABLE).flatMap(([exit, codes]) => codes.map((code) => [code, Number(exit)] as const)))(
    'admin: %s exits %i',
    (code, exit) => {
      expect(exitCodeForError({ code, retryable: exit === 4 }, 'admin')).toBe(exit);
    },
  );

  it.each(Object.entries(TABLE).flatMap(([exit, codes]) => codes.map((code) => [code, Number(exit)] as const)))(
    'admin: %s exits %i without the retryable flag too',
    (code, exit) => {
      expect(exitCodeForError({ code, retryable: false }, 'admin')).toBe(exit);
    },
  );

  it('admin order: 5 first, then 4 by code or flag, then the class', () => {
    expect(exitCodeForError({ code: 'recovery_required', retryable: true }, 'admin')).toBe(5);
    expect(exitCodeForError({ code: 'storage_busy', retryable: false }, 'admin')).toBe(4);
    expect(exitCodeForError({ code: 'not_found', retryable: true }, 'admin')).toBe(4);
    expect(exitCodeForError({ code: 'validation_failed', retryable: true }, 'admin')).toBe(4);
    expect(exitCodeForError({ code: 'internal_error', retryable: true }, 'admin')).toBe(4);
  });

  it.each(['serve', 'config'] as const)('%s: every failure exits 2', (command) => {
    for (const code of CLI_ERROR_CODES) {
      expect(exitCodeForError({ code, retryable: false }, command)).toBe(2);
      expect(exitCodeForError({ code, retryable: true }, command)).toBe(2);
    }
  });
});
