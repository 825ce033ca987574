// Turns AIPCS envelopes into MCP tool results: one text item holding the
// envelope as compact, ASCII-only JSON (Python-style floats) and the same
// envelope as structuredContent, with isError mirroring `ok`.

import { renderJson } from '../../common/json.js';
import type { ToolCallResult } from '../../common/mcp/tool-server.js';

export interface EnvelopeIssue {
  readonly code: string;
  readonly path: string;
  readonly message: string;
  readonly remediation: string | null;
}

export interface FailureDocument {
  readonly code: string;
  readonly message: string;
  readonly issues: readonly EnvelopeIssue[];
  readonly retryable: boolean;
}

export type Envelope =
  | { readonly ok: true; readonly result: object; readonly error: null }
  | { readonly ok: false; readonly result: null; readonly error: FailureDocument };

export function renderEnvelopeText(envelope: Envelope): string {
  return renderJson(envelope, { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' });
}

export function envelopeToolResult(envelope: Envelope): ToolCallResult {
  return {
    content: [{ type: 'text', text: renderEnvelopeText(envelope) }],
    structuredContent: envelope as unknown as Record<string, unknown>,
    isError: !envelope.ok,
  };
}

export function successResult(result: object): ToolCallResult {
  return envelopeToolResult({ ok: true, result, error: null });
}

export function failureResult(error: FailureDocument): ToolCallResult {
  return envelopeToolResult({ ok: false, result: null, error });
}
