// Opaque, query-bound keyset cursors (contract §6.12): base64url of a small
// canonical JSON document carrying the position, a hash of the query identity
// and a check value. A cursor presented with another query, principal,
// service or schema version, or with altered bytes, fails validation.

import { AipcsError } from '../contract/error-codes.js';
import { isCanonicalUuid } from '../contract/schema-check.js';
import { fingerprintText } from './record-rules.js';

export type CursorKind = 'record' | 'history' | 'branch';

const CURSOR_TEXT = /^[A-Za-z0-9_-]{1,1024}$/;
/** An event sequence as issued: a positive integer in decimal, no leading zero, at most 2^63-1 (a signed 64-bit integer). */
const EVENT_SEQUENCE = /^[1-9][0-9]{0,18}$/;
const MAX_EVENT_SEQUENCE = 2n ** 63n - 1n;

const isEventSequence = (position: string): boolean => EVENT_SEQUENCE.test(position) && BigInt(position) <= MAX_EVENT_SEQUENCE;

export interface CursorCodec {
  sha256(text: string): string;
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

export function encodeCursor(codec: CursorCodec, kind: CursorKind, position: string, queryIdentity: unknown): string {
  const query = codec.sha256(fingerprintText(queryIdentity));
  const body = { kind, position, query, v: 1 };
  const check = codec.sha256(fingerprintText(body)).slice(0, 16);
  return base64url(fingerprintText({ ...body, check }));
}

/** The position inside a cursor issued for exactly this query, or a validation failure. */
export function decodeCursor(codec: CursorCodec, kind: CursorKind, cursor: string, queryIdentity: unknown): string {
  const invalid = new AipcsError('validation_failed');
  if (!CURSOR_TEXT.test(cursor)) throw invalid;
  let document: unknown;
  try {
    document = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw invalid;
  const { kind: k, position, query, v, check, ...rest } = document as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || k !== kind || typeof position !== 'string' || typeof query !== 'string' || v !== 1 || typeof check !== 'string') throw invalid;
  // No id or sequence a page ends on holds U+0000, which PostgreSQL cannot even bind.
  if (position.includes('\u0000')) throw invalid;
  const body = { kind, position, query, v: 1 };
  if (codec.sha256(fingerprintText(body)).slice(0, 16) !== check) throw invalid;
  if (base64url(fingerprintText({ ...body, check })) !== cursor) throw invalid;
  if (query !== codec.sha256(fingerprintText(queryIdentity))) throw invalid;
  // The check is no secret: a position must also be one a page could have
  // ended on (an id, or an event sequence), as issued.
  if (kind === 'history' ? !isEventSequence(position) : !isCanonicalUuid(position)) throw invalid;
  return position;
}
