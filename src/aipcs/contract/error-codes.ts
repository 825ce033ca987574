// Every AIPCS error code, its retryable flag and the fixed safe messages of
// contract §3.4, plus AipcsError, the one error type the contract layer emits.
// Messages are chosen from a closed table, never composed from input, so no
// error can carry SQL, paths, credentials, principals or driver text.

import { SafeError } from '../../common/errors.js';
import { MAX_ISSUES, type Issue } from './issues.js';

/** The ErrorCode enum, in the order of the output schema (contract §3.4). */
export const ERROR_CODES = [
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

export type ErrorCode = (typeof ERROR_CODES)[number];

const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['storage_busy', 'operation_uncertain', 'operation_in_progress']);

/** Retryability is a property of the code, never of the call site. */
export function isRetryableCode(code: ErrorCode): boolean {
  return RETRYABLE.has(code);
}

/**
 * Each situation a caller can be in, with its code and exact message. Where
 * one code has several messages (registry vs data tools, design vs evolve)
 * the situation names the variant.
 */
export const ERROR_SITUATIONS = {
  validation_failed: { code: 'validation_failed', message: 'Request failed public contract validation.' },
  invalid_identifier: { code: 'invalid_identifier', message: 'service_id must be a non-zero lowercase canonical UUID.' },
  retired_field: { code: 'retired_field', message: 'The request contains a field retired from the public v1 contract.' },
  legacy_import_required: {
    code: 'legacy_import_required',
    message: 'Manifest version 1 is private legacy input; use the explicit legacy importer.',
  },
  manifest_version_unsupported_design: {
    code: 'manifest_version_unsupported',
    message: 'Public design intake supports manifest_version 2 only.',
  },
  manifest_version_unsupported_lifecycle: {
    code: 'manifest_version_unsupported',
    message: 'Public lifecycle intake supports manifest_version 2 only.',
  },
  not_found_service: { code: 'not_found', message: 'The requested service was not found.' },
  not_found_data: { code: 'not_found', message: 'The requested record or branch was not found.' },
  already_exists: { code: 'already_exists', message: 'The requested record or branch already exists.' },
  conflict: { code: 'conflict', message: 'The request conflicts with existing application state.' },
  invalid_state: { code: 'invalid_state', message: 'The service is not in a state that permits this operation.' },
  unsupported_operation: { code: 'unsupported_operation', message: 'The requested MCP tool is unavailable.' },
  unsupported_transition: { code: 'unsupported_transition', message: 'The service lifecycle transition is not supported.' },
  stale_revision: { code: 'stale_revision', message: 'The service lifecycle precondition is stale.' },
  changed_fingerprint: { code: 'changed_fingerprint', message: 'The idempotency key cannot be reused for a different request.' },
  operation_in_progress: { code: 'operation_in_progress', message: 'A lifecycle operation is already in progress.' },
  recovery_required: { code: 'recovery_required', message: 'The service requires recovery before lifecycle work can continue.' },
  storage_busy: { code: 'storage_busy', message: 'Storage is temporarily busy.' },
  operation_uncertain_lifecycle: { code: 'operation_uncertain', message: 'The lifecycle operation outcome is uncertain.' },
  operation_uncertain_data: { code: 'operation_uncertain', message: 'The operation outcome is uncertain.' },
  storage_unavailable: { code: 'storage_unavailable', message: 'Storage is unavailable.' },
  stale_record_version: { code: 'stale_record_version', message: 'The record version precondition is stale.' },
  stale_branch_revision: { code: 'stale_branch_revision', message: 'The branch revision precondition is stale.' },
  constraint_violation: { code: 'constraint_violation', message: 'The requested data relationship is not permitted.' },
  storage_migration_required: { code: 'storage_migration_required', message: 'Service storage requires migration.' },
  internal_error: { code: 'internal_error', message: 'The request could not be completed safely.' },
  internal_error_application: { code: 'internal_error', message: 'The application operation could not be completed.' },
  // Library-only situations: never a tool result, but still closed texts.
  invalid_request: { code: 'invalid_request', message: 'Request input must be a JSON object.' },
  forbidden: { code: 'forbidden', message: 'The operation is not permitted.' },
  transport_not_supported: { code: 'transport_not_supported', message: 'The requested transport or listener setting is not supported.' },
  legacy_not_object: { code: 'invalid_request', message: 'Legacy input must be a JSON object.' },
  legacy_version_unsupported: { code: 'manifest_version_unsupported', message: 'The legacy importer accepts manifest_version 1 only.' },
  legacy_field_unrecognised: { code: 'validation_failed', message: 'Legacy input contains an unrecognised field and was not converted.' },
  legacy_relationship_ambiguous: {
    code: 'validation_failed',
    message: 'Legacy relationships are not imported because their constraints are ambiguous.',
  },
  legacy_schema_version_invalid: { code: 'validation_failed', message: 'Legacy schema_version must be a positive integer.' },
  legacy_facet_ambiguous: {
    code: 'validation_failed',
    message: 'A legacy discovery facet is ambiguous; use an explicit entity.field object.',
  },
  legacy_malformed: { code: 'validation_failed', message: 'Legacy input is malformed and was not converted.' },
} as const satisfies Record<string, { readonly code: ErrorCode; readonly message: string }>;

export type ErrorSituation = keyof typeof ERROR_SITUATIONS;

export interface AipcsErrorOptions {
  readonly issues?: readonly Issue[];
  /** Internal detail for logs and tests; never rendered by any edge. */
  readonly cause?: unknown;
}

/**
 * A safe, bounded contract failure. Build it from a situation so the code,
 * message and retryable flag always agree with contract §3.4.
 */
export class AipcsError extends SafeError<ErrorCode> {
  override readonly name = 'AipcsError';
  readonly situation: ErrorSituation;
  readonly issues: readonly Issue[];

  constructor(situation: ErrorSituation, options: AipcsErrorOptions = {}) {
    const { code, message } = ERROR_SITUATIONS[situation];
    super(code, message, {
      retryable: isRetryableCode(code),
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.situation = situation;
    this.issues = Object.freeze((options.issues ?? []).slice(0, MAX_ISSUES));
  }
}

/** Shorthand for the most common failure: request-shape validation with issues. */
export function validationFailed(issues: readonly Issue[] = []): AipcsError {
  return new AipcsError('validation_failed', { issues });
}
