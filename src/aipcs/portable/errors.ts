// The one failure of the portable codec: an artefact (or, for the writer, the
// content it was given) breaks a rule of operations spec §5. It is the
// contract's `validation_failed` with a closed internal reason and a line
// number; it never carries bytes, values, paths or principals.

import { AipcsError } from '../contract/error-codes.js';

export const BUNDLE_DEFECTS = [
  // Framing (§5.2, §5.7)
  'bundle_too_large',
  'line_too_long',
  'too_many_lines',
  'truncated',
  'bytes_after_trailer',
  'empty_line',
  'carriage_return',
  'byte_order_mark',
  'invalid_utf8',
  // Canonical JSON (§5.3)
  'json_malformed',
  'json_too_deep',
  'json_duplicate_key',
  'integer_out_of_range',
  'number_out_of_range',
  'not_canonical',
  // Frames (§5.2, §5.5)
  'frame_shape',
  'unknown_kind',
  'audit_present',
  'ordinal_mismatch',
  'frame_digest_mismatch',
  'section_order',
  // Payloads (§5.4)
  'header_invalid',
  'service_invalid',
  'manifest_invalid',
  'fence_invalid',
  'record_invalid',
  'record_fields_invalid',
  'history_invalid',
  'branch_invalid',
  'membership_invalid',
  // Content (§5.5, §5.9 step 3)
  'seeded_with_members',
  'unknown_entity',
  'record_order',
  'history_order',
  'history_sequence',
  'history_record_mismatch',
  'record_reference_missing',
  'record_unique_duplicate',
  'branch_order',
  'branch_slug_duplicate',
  'branch_parent_missing',
  'branch_cycle',
  'membership_order',
  'membership_duplicate',
  'membership_branch_missing',
  'membership_record_missing',
  'membership_primary_conflict',
  // Trailer (§5.6)
  'trailer_invalid',
  'trailer_mismatch',
  'root_mismatch',
  'root_changed',
  // Writer input that has no canonical form (NaN, a lone surrogate, a time outside years 1..9999)
  'unrepresentable_value',
] as const;

export type BundleDefect = (typeof BUNDLE_DEFECTS)[number];

export class BundleInvalidError extends AipcsError {
  /** Why the artefact was refused; for logs and tests, never for clients. */
  readonly reason: BundleDefect;
  /** Zero-based line (= ordinal) where the defect was found, when it belongs to one line. */
  readonly line: number | null;

  constructor(reason: BundleDefect, line: number | null = null) {
    super('validation_failed');
    this.reason = reason;
    this.line = line;
  }
}

export function isBundleInvalidError(value: unknown): value is BundleInvalidError {
  return value instanceof BundleInvalidError;
}
