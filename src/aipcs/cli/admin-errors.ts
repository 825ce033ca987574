// The one error mapper of the `aipcs` administration commands: every failure
// becomes a CLI error document with a fixed safe message per code (spec
// §1.9.7); only contract codes pass through, anything unknown is
// internal_error. Never echoes a path, value, principal or driver text.

import { AipcsError, isRetryableCode } from '../contract/error-codes.js';
import { UnfinishedOperation } from '../core/operations.js';
import { StorageFailure } from '../core/ports.js';
import { isBundleInvalidError } from '../portable/index.js';
import { AdminStorageUnavailable } from '../compose.js';
import { CLI_INTERNAL_ERROR, type CliErrorCode, type CliErrorDocument, type CliIssue } from './error-document.js';

/** Operator-facing texts, one per code the admin commands can print. */
const ADMIN_MESSAGES: Partial<Record<CliErrorCode, string>> = {
  invalid_request: 'The command needs an interactive terminal for confirmation.',
  validation_failed: 'Command input failed validation.',
  not_found: 'The requested service was not found.',
  already_exists: 'The target already exists.',
  invalid_state: 'The operation was not confirmed; nothing was changed.',
  unsupported_operation: 'The command needs a persistent storage profile.',
  conflict: 'The operation id belongs to a purged service.',
  unsupported_transition: 'The service lifecycle transition is not supported.',
  stale_revision: 'The service lifecycle precondition is stale.',
  changed_fingerprint: 'The operation id cannot be reused for a different request.',
  operation_in_progress: 'A lifecycle operation is already in progress.',
  recovery_required: 'The service requires recovery before lifecycle work can continue.',
  storage_busy: 'Storage is temporarily busy.',
  storage_migration_required: 'Storage requires migration; run aipcs serve once to migrate the registry.',
  operation_uncertain: 'The operation outcome is uncertain; retry the same command with the same operation id.',
  storage_unavailable: 'Storage is unavailable.',
  internal_error: 'The request could not be completed safely.',
};

export function adminError(code: CliErrorCode, issues: readonly CliIssue[] = []): CliErrorDocument {
  return { code, message: ADMIN_MESSAGES[code] ?? CLI_INTERNAL_ERROR.message, issues, retryable: isRetryableCode(code) };
}

/**
 * The refusal's text, then which kind of operation is unfinished and how to
 * finish it (D54): repeating that command is the only way on. Its operation
 * id is not printed (operations spec §2.9); the operator has it.
 */
function unfinishedOperationError(error: UnfinishedOperation): CliErrorDocument {
  const document = adminError(error.code);
  const article = /^[aeiou]/.test(error.operation) ? 'An' : 'A';
  const subject = error.code === 'already_exists' ? 'An import of this service id' : error.byOperator ? `${article} ${error.operation} of this service` : `An MCP client's ${error.operation} of this service`;
  const remedy = error.byOperator ? 'to finish it, repeat that command with the operation id it was given.' : 'it finishes when that client repeats its request.';
  return { ...document, message: `${document.message} ${subject} is unfinished or still running; ${remedy}` };
}

/** A validation failure naming the flag or argument at fault. */
export function invalidArgument(path: string, message: string, remediation: string | null = null): CliErrorDocument {
  return adminError('validation_failed', [{ code: 'invalid_argument', path, message, remediation }]);
}

/** An artefact that failed validation: the defect's line (when it has one), never its content. */
function artefactIssue(line: number | null): CliIssue {
  return {
    code: 'artifact_invalid',
    path: line === null ? 'artifact' : `artifact.line[${line}]`,
    message: 'The artifact is not a valid export_format_version 1 artifact.',
    remediation: 'Use an unmodified artifact written by aipcs export.',
  };
}

/** A refusal the CLI edge itself raises (files, terminal), already classified. */
export class AdminRefusal extends Error {
  constructor(
    readonly document: CliErrorDocument,
    options?: { cause?: unknown },
  ) {
    super(document.message, options);
    this.name = 'AdminRefusal';
  }
}

export function refusal(code: CliErrorCode, issues: readonly CliIssue[] = [], cause?: unknown): AdminRefusal {
  return new AdminRefusal(adminError(code, issues), cause === undefined ? undefined : { cause });
}

/** Maps anything an admin command threw to the document it prints. */
export function adminErrorFrom(error: unknown): CliErrorDocument {
  if (error instanceof AdminRefusal) return error.document;
  if (isBundleInvalidError(error)) return adminError('validation_failed', [artefactIssue(error.line)]);
  if (error instanceof UnfinishedOperation) return unfinishedOperationError(error);
  if (error instanceof AipcsError) {
    const issues = error.issues.map((issue) => ({ code: issue.code, path: issue.path, message: issue.message, remediation: issue.remediation }));
    return adminError(error.code, issues);
  }
  if (error instanceof AdminStorageUnavailable) return adminError('storage_unavailable');
  if (error instanceof StorageFailure) {
    if (error.kind === 'busy') return adminError('storage_busy');
    if (error.kind === 'uncertain') return adminError('operation_uncertain');
    if (error.kind === 'migration_required') return adminError('storage_migration_required');
    return adminError('storage_unavailable');
  }
  return CLI_INTERNAL_ERROR;
}
