// The error document every `aipcs` failure prints (operations spec §1.3,
// contract §3.2), as a small local type: the 26 error codes and the issue
// shape. Structurally equal to the contract's and configuration's documents.

import { ERROR_CODES } from '../contract/error-codes.js';

// The CLI prints the contract's codes; one list, owned by the contract layer.
export const CLI_ERROR_CODES = ERROR_CODES;

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
