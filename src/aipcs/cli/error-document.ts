// The error document every `aipcs` failure prints (operations spec §1.3,
// contract §3.2), as a small local type: the 26 error codes and the issue
// shape. Structurally equal to the contract's and configuration's documents.

export const CLI_ERROR_CODES = [
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
] as const;

export type CliErrorCode = (typeof CLI_ERROR_CODES)[number];

export interface CliIssue {
  readonly code: string;
  readonly path: string;
  readonly message: string;
  readonly remediation: string | null;
}

export interface CliErrorDocument {
  readonly code: CliErrorCode;
  readonly message: string;
  readonly issues: readonly CliIssue[];
  readonly retryable: boolean;
}

export function isCliErrorCode(value: unknown): value is CliErrorCode {
  return typeof value === 'string' && (CLI_ERROR_CODES as readonly string[]).includes(value);
}

/** Unexpected failures of the CLI edge itself (contract §3.4 text). */
export const CLI_INTERNAL_ERROR: CliErrorDocument = Object.freeze({
  code: 'internal_error',
  message: 'The request could not be completed safely.',
  issues: Object.freeze([]) as readonly CliIssue[],
  retryable: false,
}) as CliErrorDocument;
