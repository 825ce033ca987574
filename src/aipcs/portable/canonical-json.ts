// aipcs-json-c14n-1 (operations spec §5.3) for one artefact line, built on
// src/common/json.ts: its canonicalJson already renders the profile (sorted
// UTF-16 keys, the seven short escapes, other controls as lowercase \u00xx,
// U+007F and U+2028 literal, ECMAScript numbers, -0 as 0, lone surrogates
// refused) and parseJson is lossless and bounded. This module adds what the
// profile asks beyond them: signed 64-bit integers, and acceptance only when
// re-encoding the parse gives back the very text. It owns no I/O.

import { JsonError, canonicalJson, isJsonObject, parseJson, type JsonObject, type JsonValue } from '../../common/json.js';
import { BundleInvalidError, type BundleDefect } from './errors.js';
import { INT64_MAX, INT64_MIN, MAX_DEPTH, MAX_LINE_BYTES } from './format.js';

const PARSE_LIMITS = { maxBytes: MAX_LINE_BYTES, maxDepth: MAX_DEPTH, rejectDuplicateKeys: true } as const;

function parseDefect(error: JsonError): BundleDefect {
  switch (error.code) {
    case 'json_too_deep':
      return 'json_too_deep';
    case 'json_duplicate_key':
      return 'json_duplicate_key';
    case 'json_unrepresentable':
      return 'number_out_of_range';
    case 'json_too_large':
      return 'line_too_long';
    default:
      return 'json_malformed';
  }
}

function integersFit(value: JsonValue): boolean {
  if (typeof value === 'bigint') return value >= INT64_MIN && value <= INT64_MAX;
  if (Array.isArray(value)) return value.every(integersFit);
  if (isJsonObject(value)) {
    for (const key in value) if (!integersFit(value[key] as JsonValue)) return false;
  }
  return true;
}

/**
 * Parses one line (without its LF) and accepts it only if it is the
 * canonical encoding of a JSON object within the profile's domains.
 * `encodedHere` skips the re-encoding comparison for text this codec just
 * produced with canonicalJson (re-encoding its parse is the identity, which
 * the property tests check); the domain checks still run.
 */
export function parseCanonicalLine(text: string, encodedHere = false): JsonObject {
  let value: JsonValue;
  try {
    value = parseJson(text, PARSE_LIMITS);
  } catch (error) {
    if (error instanceof JsonError) throw new BundleInvalidError(parseDefect(error));
    throw error;
  }
  if (!integersFit(value)) throw new BundleInvalidError('integer_out_of_range');
  if (encodedHere) {
    if (!isJsonObject(value)) throw new BundleInvalidError('frame_shape');
    return value;
  }
  let again: string;
  try {
    again = canonicalJson(value);
  } catch (error) {
    // Only a lone surrogate (reachable through a \ud800 escape) has no canonical form.
    if (error instanceof JsonError) throw new BundleInvalidError('not_canonical');
    throw error;
  }
  if (again !== text) throw new BundleInvalidError('not_canonical');
  if (!isJsonObject(value)) throw new BundleInvalidError('frame_shape');
  return value;
}

/** Canonical text of a value the writer built; values without a canonical form are writer-input defects. */
export function encodeCanonical(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch (error) {
    if (error instanceof JsonError) throw new BundleInvalidError('unrepresentable_value');
    throw error;
  }
}
