// Exit statuses of `aipcs` (operations spec §1.4): every error code has a
// class; admin commands check 5, then 4 (code or retryable flag), then the
// class; every failure of `serve` and `config …` exits 2. Pure.

import type { CliErrorCode } from './error-document.js';

export type ExitCode = 0 | 2 | 3 | 4 | 5 | 6;

export const EXIT_SUCCESS = 0;
export const EXIT_INVALID_INPUT = 2;
export const EXIT_REFUSED = 3;
export const EXIT_RETRYABLE = 4;
export const EXIT_RECOVERY_REQUIRED = 5;
export const EXIT_UNAVAILABLE = 6;

/** Which exit policy applies: `serve` and `config` always exit 2 on failure. */
export type CommandKind = 'serve' | 'config' | 'admin';

/** The class of each code for admin commands (§1.4 table). */
export const EXIT_CODE_BY_ERROR_CODE: Readonly<Record<CliErrorCode, Exclude<ExitCode, 0>>> = {
  invalid_request: 2,
  invalid_identifier: 2,
  validation_failed: 2,
  retired_field: 2,
  manifest_version_unsupported: 2,
  legacy_import_required: 2,
  transport_not_supported: 2,
  not_found: 3,
  already_exists: 3,
  invalid_state: 3,
  unsupported_operation: 3,
  conflict: 3,
  unsupported_transition: 3,
  stale_revision: 3,
  stale_record_version: 3,
  stale_branch_revision: 3,
  changed_fingerprint: 3,
  constraint_violation: 3,
  storage_migration_required: 3,
  forbidden: 3,
  operation_in_progress: 4,
  storage_busy: 4,
  operation_uncertain: 4,
  recovery_required: 5,
  storage_unavailable: 6,
  internal_error: 6,
};

export function exitCodeForError(error: { readonly code: CliErrorCode; readonly retryable: boolean }, command: CommandKind): ExitCode {
  if (command !== 'admin') return EXIT_INVALID_INPUT;
  if (error.code === 'recovery_required') return EXIT_RECOVERY_REQUIRED;
  const base = EXIT_CODE_BY_ERROR_CODE[error.code] ?? EXIT_UNAVAILABLE;
  if (error.retryable || base === EXIT_RETRYABLE) return EXIT_RETRYABLE;
  return base;
}
