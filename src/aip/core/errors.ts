// The AIP error vocabulary: one stable code per failure (spec 5.9 plus the
// repository, runner and CLI codes this product adds) and the Outcome type
// used wherever a failure is an expected result. Pure: no I/O.
import { errorCode, SafeError } from '../../common/errors.js';

export const PROTOCOL_CODES = [
  'cbor.too_large',
  'cbor.truncated',
  'cbor.trailing',
  'cbor.too_deep',
  'cbor.indefinite',
  'cbor.reserved',
  'cbor.not_shortest',
  'cbor.type',
  'cbor.utf8',
  'cbor.key_type',
  'cbor.key_order',
  'object.envelope',
  'object.unsupported',
  'schema.unknown_field',
  'schema.missing_field',
  'schema.type',
  'schema.range',
  'schema.enum',
  'schema.id',
  'schema.ids',
  'schema.time',
  'schema.nonempty',
  'schema.path',
  'schema.path_conflict',
  'schema.effects',
  'schema.effect',
  'schema.inputs',
  'schema.state_shape',
  'schema.argv',
  'schema.executable',
  'schema.exit_code',
  'schema.error',
  'schema.workspace_error',
  'schema.result',
  'graph.missing',
  'graph.type',
  'graph.cycle',
  'graph.before',
  'graph.apply',
  'graph.state_parent',
  'graph.state_intents',
  'graph.state_files',
  'graph.operations_subset',
  'graph.capture_length',
  'store.hash',
  'store.not_found',
  'store.ambiguous',
] as const;

// Codes this product adds for its repository, runner and CLI (docs/decisions-aip.md).
export const PRODUCT_CODES = [
  'object.id',
  'store.index',
  'repo.not_found',
  'repo.exists',
  'repo.config',
  'head.moved',
  'lock.timeout',
  'snapshot.invalid',
  'operation.empty',
  'bundle.format',
  'run.materialize',
  'usage',
  'io',
  'internal',
] as const;

export type ProtocolCode = (typeof PROTOCOL_CODES)[number];
export type ProductCode = (typeof PRODUCT_CODES)[number];
export type AipErrorCode = ProtocolCode | ProductCode;

export class AipError extends SafeError<AipErrorCode> {
  constructor(code: AipErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'AipError';
  }
}

export function isAipError(value: unknown): value is AipError {
  return value instanceof AipError;
}

export type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: AipError };

/**
 * A failed write (a full disk: ENOSPC), said as what could not be written:
 * the bare system code named neither the object nor a path. Anything that
 * is no system error passes through unchanged.
 */
export function notWritten(what: string, error: unknown): unknown {
  const code = errorCode(error);
  return code !== undefined && /^E[A-Z0-9]+$/.test(code) ? new AipError('io', `cannot write ${what}: ${code}`, { cause: error }) : error;
}

export function success<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

export function failure<T = never>(code: AipErrorCode, message: string): Outcome<T> {
  return { ok: false, error: new AipError(code, message) };
}

/** "an intent", "a state": an object type name with its article, for messages. */
export function withArticle(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
