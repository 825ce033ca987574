// aipcs-json-c14n-1 (operations spec §5.3) for one artefact line, built on
// src/common/json.ts: its canonicalJson already renders the profile (sorted
// UTF-16 keys, the seven short escapes, other controls as lowercase \u00xx,
// U+007F and U+2028 literal, ECMAScript numbers, -0 as 0, lone surrogates
// refused) and its parser is lossless and bounded and notes, while parsing,
// whether the text is exactly that rendering of its value. This module adds
// what the profile asks beyond them: signed 64-bit integers, and acceptance
// only of canonical text. It owns no I/O.

import { JsonError, canonicalJson, isJsonObject, parseJsonNotingForm, type JsonObject, type JsonValue } from '../../common/json.js';
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

/**
 * Whether every integer a parsed text holds (`rendered`: a value about to be
 * rendered will hold) is a signed 64-bit one. ECMAScript writes an integral
 * number below 1e21 without fraction or exponent, so once rendered it reads
 * back as an integer token too: the token of its shortest text, which is not
 * always its exact value (-2^63 is written -9223372036854776000).
 */
function integersFit(value: JsonValue, rendered = false): boolean {
  if (typeof value === 'bigint') return value >= INT64_MIN && value <= INT64_MAX;
  if (typeof value === 'number') return !rendered || !Number.isInteger(value) || Math.abs(value) >= 1e21 || integersFit(BigInt(String(value)));
  if (Array.isArray(value)) return value.every((item) => integersFit(item, rendered));
  if (isJsonObject(value)) {
    for (const key in value) if (!integersFit(value[key] as JsonValue, rendered)) return false;
  }
  return true;
}

/**
 * Parses one line (without its LF) and accepts it only if it is the
 * canonical encoding of a JSON object within the profile's domains. The
 * defects keep the order of a parse followed by a re-encoding: malformed
 * JSON first, then integer range, then non-canonical form.
 */
export function parseCanonicalLine(text: string): JsonObject {
  let parsed: { value: JsonValue; canonical: boolean };
  try {
    parsed = parseJsonNotingForm(text, PARSE_LIMITS);
  } catch (error) {
    if (error instanceof JsonError) throw new BundleInvalidError(parseDefect(error));
    throw error;
  }
  const value = parsed.value;
  if (!integersFit(value)) throw new BundleInvalidError('integer_out_of_range');
  if (!parsed.canonical) throw new BundleInvalidError('not_canonical');
  if (!isJsonObject(value)) throw new BundleInvalidError('frame_shape');
  return value;
}

/** What liftIntegers answers when only the careful parser can read the text exactly. */
const NEEDS_CAREFUL_PARSE = Symbol('needs careful parse');

/** A JSON.parse result made lossless in place (integer tokens as bigints), or NEEDS_CAREFUL_PARSE. */
function liftIntegers(value: unknown, depth: number): JsonValue | typeof NEEDS_CAREFUL_PARSE {
  if (typeof value === 'number') {
    // In canonical text an integral number below 1e21 was an integer token.
    if (!Number.isInteger(value) || Math.abs(value) >= 1e21) return value;
    return Number.isSafeInteger(value) ? BigInt(value) : NEEDS_CAREFUL_PARSE;
  }
  if (typeof value !== 'object' || value === null) return value as JsonValue;
  if (depth > MAX_DEPTH) return NEEDS_CAREFUL_PARSE;
  const container = value as Record<string, unknown>;
  for (const key of Object.keys(container)) {
    // An own `__proto__` member is data; leave it to the parser that builds objects that way.
    if (key === '__proto__') return NEEDS_CAREFUL_PARSE;
    const lifted = liftIntegers(container[key], depth + 1);
    if (lifted === NEEDS_CAREFUL_PARSE) return lifted;
    container[key] = lifted;
  }
  return value as JsonValue;
}

/**
 * parseCanonicalLine for a line a first read already accepted, in a second
 * read bound to that read's root (import staging from the private spool):
 * the native parser, with integer tokens made exact again. A line that
 * changed since fails the root check at the end, before anything commits;
 * a line JSON.parse cannot read exactly goes through the careful parser.
 */
export function parseAcceptedLine(text: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return parseCanonicalLine(text);
  }
  const lifted = liftIntegers(value, 1);
  return lifted !== NEEDS_CAREFUL_PARSE && isJsonObject(lifted) ? lifted : parseCanonicalLine(text);
}

/**
 * The domain checks of parseCanonicalLine for a frame this codec rendered
 * itself with canonicalJson (canonical by construction, which the property
 * tests check by reading every written artefact back).
 */
export function checkEncodedFrame(frame: JsonObject): JsonObject {
  if (!integersFit(frame, true)) throw new BundleInvalidError('integer_out_of_range');
  return frame;
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
