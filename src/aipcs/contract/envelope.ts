// The AIPCS response envelope (contract §3.1) and its exact text rendering
// (§2.3): compact JSON, ASCII-only with \uXXXX escapes, keys in contract
// order, integers (bigint) as integers and JS numbers as Python floats.
// Owns the one error mapper of the MCP boundary; it never renders a cause.

import { renderJson, type JsonObject, type JsonValue } from '../../common/json.js';
import { AipcsError, ERROR_SITUATIONS, isRetryableCode, type ErrorCode } from './error-codes.js';
import { MAX_ISSUES, type Issue } from './issues.js';

export interface ErrorDocument {
  readonly code: ErrorCode;
  readonly message: string;
  readonly issues: readonly Issue[];
  readonly retryable: boolean;
}

export interface SuccessEnvelope {
  readonly ok: true;
  /** Lossless JSON: integers must be bigint, `number` fields JS numbers (rendered `1.0`). */
  readonly result: JsonObject;
  readonly error: null;
}

export interface FailureEnvelope {
  readonly ok: false;
  readonly result: null;
  readonly error: ErrorDocument;
}

export type Envelope = SuccessEnvelope | FailureEnvelope;

const MAX_MESSAGE_LENGTH = 500;

function boundedText(text: string, max: number): string {
  const collapsed = text.split(/\s+/u).filter((part) => part.length > 0).join(' ');
  return Array.from(collapsed).slice(0, max).join('');
}

export function successEnvelope(result: JsonObject): SuccessEnvelope {
  return { ok: true, result, error: null };
}

/** The failure envelope of a contract error; issues are kept only up to the bound. */
export function failureEnvelope(error: AipcsError): FailureEnvelope {
  const issues = error.issues.slice(0, MAX_ISSUES).map((issue) => ({
    code: issue.code,
    path: issue.path,
    message: issue.message,
    remediation: issue.remediation,
  }));
  return {
    ok: false,
    result: null,
    error: {
      code: error.code,
      message: boundedText(error.message, MAX_MESSAGE_LENGTH),
      issues,
      retryable: isRetryableCode(error.code),
    },
  };
}

/**
 * The one error mapper of the boundary: a contract error passes through with
 * its fixed texts; anything else (a bug, a driver error) becomes the generic
 * internal error, and its text is dropped.
 */
export function envelopeForError(error: unknown): FailureEnvelope {
  if (error instanceof AipcsError) return failureEnvelope(error);
  return failureEnvelope(new AipcsError('internal_error'));
}

/** The envelope of an unexpected failure, prebuilt so it can never fail itself. */
export const INTERNAL_ERROR_ENVELOPE: FailureEnvelope = Object.freeze({
  ok: false,
  result: null,
  error: Object.freeze({
    code: ERROR_SITUATIONS.internal_error.code,
    message: ERROR_SITUATIONS.internal_error.message,
    issues: Object.freeze([]) as readonly Issue[],
    retryable: false,
  }),
}) as FailureEnvelope;

/** The envelope as a lossless JSON object with keys in contract order. */
export function envelopeToJson(envelope: Envelope): JsonObject {
  if (envelope.ok) return { ok: true, result: envelope.result, error: null };
  const error: JsonObject = {
    code: envelope.error.code,
    message: envelope.error.message,
    issues: envelope.error.issues.map((issue) => ({
      code: issue.code,
      path: issue.path,
      message: issue.message,
      remediation: issue.remediation,
    })),
    retryable: envelope.error.retryable,
  };
  return { ok: false, result: null, error };
}

/**
 * The exact `content[0].text` of a tool result: compact separators, insertion
 * key order, every non-ASCII character escaped (astral ones as surrogate
 * pairs), bigint as integers and JS numbers as Python float reprs.
 */
export function renderEnvelopeText(envelope: Envelope): string {
  return renderContractJson(envelopeToJson(envelope));
}

/**
 * The same rendering for any contract value (used for results and snapshots).
 * Throws only on a bug: a non-finite number has no JSON form.
 */
export function renderContractJson(value: JsonValue): string {
  if (hasNonFiniteNumber(value)) throw new Error('a contract value holds a non-finite number');
  return renderJson(value, { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'lossless' });
}

function hasNonFiniteNumber(root: JsonValue): boolean {
  // Iterative so that a deep value cannot exhaust the stack.
  const stack: JsonValue[] = [root];
  while (stack.length > 0) {
    const value = stack.pop() as JsonValue;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (value !== null && typeof value === 'object') {
      for (const item of Object.values(value)) stack.push(item);
    }
  }
  return false;
}

export interface AipcsToolResult {
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
  isError: boolean;
}

/**
 * A complete MCP CallToolResult body. `structuredContent` stays lossless (a
 * JsonObject); the transport converts it with its plain-JSON writer.
 */
export function toToolResult(envelope: Envelope): AipcsToolResult {
  let text: string;
  let structured: JsonObject;
  try {
    structured = envelopeToJson(envelope);
    text = renderContractJson(structured);
  } catch {
    // Unrenderable results (a non-finite number from a bug) still give a well-formed envelope.
    structured = envelopeToJson(INTERNAL_ERROR_ENVELOPE);
    text = renderContractJson(structured);
    return { content: [{ type: 'text', text }], structuredContent: structured, isError: true };
  }
  return { content: [{ type: 'text', text }], structuredContent: structured, isError: !envelope.ok };
}
