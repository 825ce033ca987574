// Objects <-> canonical bytes, and object IDs (spec 2.4, 2.5). The one entry
// point for untrusted bytes: size bound, strict scan, envelope, schema. Pure
// apart from hashing (node:crypto); it never touches files or processes.
import { createHash } from 'node:crypto';
import { DEFAULT_MAX_OBJECT_BYTES, decodeCanonical, encodeCanonical, type CborValue } from './cbor-profile.js';
import { AipError, success, type Outcome } from './errors.js';
import type { AipObject, ArtifactV1, Id, TypeVersion } from './objects.js';
import { objectToValue, validateObjectValue } from './schemas.js';

export interface DecodeOptions {
  /** Bound checked before anything else (default 64 MiB). */
  readonly maxObjectBytes?: number;
  /** Supported type/version pairs (default all seven). */
  readonly accept?: readonly TypeVersion[];
}

export interface Encoded<T extends AipObject = AipObject> {
  readonly id: Id;
  readonly bytes: Uint8Array;
  readonly object: T;
}

export function sha256Hex(bytes: Uint8Array): Id {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Decodes untrusted bytes into a valid object, or the first failure (spec 2.5). */
export function decodeObject(bytes: Uint8Array, options: DecodeOptions = {}): Outcome<AipObject> {
  const maxBytes = options.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES;
  const value = decodeCanonical(bytes, maxBytes);
  if (!value.ok) return value;
  return validateObjectValue(value.value, options.accept === undefined ? {} : { accept: options.accept });
}

/** Like decodeObject, also returning the ID of the bytes. */
export function decodeWithId(bytes: Uint8Array, options: DecodeOptions = {}): Outcome<Encoded> {
  const decoded = decodeObject(bytes, options);
  if (!decoded.ok) return decoded;
  return success({ id: sha256Hex(bytes), bytes, object: decoded.value });
}

/**
 * Validates a typed object against its schema and encodes it. Validation
 * first, because the encoder would otherwise turn a lone surrogate into
 * U+FFFD or a fraction into a float instead of refusing them.
 */
export function encodeObject<T extends AipObject>(object: T): Outcome<Encoded<T>> {
  // The object as it is, own properties and all, goes through the reader's
  // checks: a field the schema does not list is refused (schema.unknown_field,
  // or object.envelope beside type/version/data) instead of being dropped from
  // the bytes, and an absent one is schema.missing_field (spec 2.2, 2.5).
  const checked = validateObjectValue(typedToValue(object));
  if (!checked.ok) return checked;
  const value = objectToValue(checked.value);
  const bytes = encodeCanonical(value);
  if (!bytes.ok) return bytes;
  return success({ id: sha256Hex(bytes.value), bytes: bytes.value, object });
}

/**
 * A typed object as a profile value, keeping every own enumerable property of
 * its plain objects (a property holding `undefined` counts as absent). Values
 * outside the data model are passed on unchanged for the schema to refuse.
 */
function typedToValue(value: unknown): CborValue {
  if (Array.isArray(value)) return value.map(typedToValue);
  if (value instanceof Map) {
    const out = new Map<string, CborValue>();
    for (const [key, item] of value as Map<string, unknown>) out.set(key, typedToValue(item));
    return out;
  }
  if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array)) {
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype === Object.prototype || prototype === null) {
      const out = new Map<string, CborValue>();
      for (const [key, item] of Object.entries(value)) if (item !== undefined) out.set(key, typedToValue(item));
      return out;
    }
  }
  return value as CborValue;
}

/** encodeObject for objects the caller built and knows to be valid; a failure is a bug. */
export function mustEncode<T extends AipObject>(object: T): Encoded<T> {
  const encoded = encodeObject(object);
  if (!encoded.ok) throw new AipError('internal', `built an invalid ${object.type}: ${encoded.error.code}: ${encoded.error.message}`);
  return encoded.value;
}

// Artifact encodings are a fixed prefix, a byte-string header, the content and
// a fixed suffix (spec 2.4), so the ID can be hashed without a copy of the content.
const ARTIFACT_PREFIX = Buffer.from('a36464617461a2646b696e646466696c6567636f6e74656e74', 'hex');
const ARTIFACT_SUFFIX = Buffer.from('64747970656861727469666163746776657273696f6e01', 'hex');

export function byteStringHeader(length: number): Uint8Array {
  if (length < 24) return Uint8Array.of(0x40 | length);
  if (length < 0x100) return Uint8Array.of(0x58, length);
  if (length < 0x10000) return Uint8Array.of(0x59, length >> 8, length & 0xff);
  if (length < 0x1_0000_0000) return Uint8Array.of(0x5a, length >>> 24, (length >> 16) & 0xff, (length >> 8) & 0xff, length & 0xff);
  const out = new Uint8Array(9);
  out[0] = 0x5b;
  new DataView(out.buffer).setBigUint64(1, BigInt(length));
  return out;
}

/** The encoded size of an artifact holding `contentLength` bytes. */
export function artifactEncodedLength(contentLength: number): number {
  return ARTIFACT_PREFIX.length + byteStringHeader(contentLength).length + contentLength + ARTIFACT_SUFFIX.length;
}

/** The largest content whose artifact encoding is at most `maxObjectBytes` (0 when none fits). */
export function maxArtifactContent(maxObjectBytes: number): number {
  // Start from the bound a one-byte length header would allow and step down
  // past the wider headers (at most 8 steps).
  let n = Math.max(0, maxObjectBytes - ARTIFACT_PREFIX.length - 1 - ARTIFACT_SUFFIX.length);
  while (n > 0 && artifactEncodedLength(n) > maxObjectBytes) n--;
  return n;
}

/** ID of the artifact holding `content`, streamed into one hash. */
export function artifactId(content: Uint8Array): Id {
  return createHash('sha256').update(ARTIFACT_PREFIX).update(byteStringHeader(content.length)).update(content).update(ARTIFACT_SUFFIX).digest('hex');
}

export function makeArtifact(content: Uint8Array): ArtifactV1 {
  return { type: 'artifact', version: 1, data: { kind: 'file', content } };
}

/** An artifact with exactly its envelope and data fields, each valid: safe to hash as a stream. */
function isPlainFileArtifact(object: AipObject): object is ArtifactV1 {
  // Loosely typed callers may pass anything: a non-object envelope or data is left to encodeObject's codes.
  const loose = object as unknown as { readonly type?: unknown; readonly version?: unknown; readonly data?: unknown } | null;
  if (typeof loose !== 'object' || loose === null || loose.type !== 'artifact' || loose.version !== 1) return false;
  if (typeof loose.data !== 'object' || loose.data === null) return false;
  const data = loose.data as { readonly kind?: unknown; readonly content?: unknown };
  const envelopeKeys = Object.keys(loose);
  const dataKeys = Object.keys(data);
  return (
    envelopeKeys.length === 3 && ['data', 'type', 'version'].every((key) => envelopeKeys.includes(key)) &&
    dataKeys.length === 2 && dataKeys.includes('kind') && dataKeys.includes('content') &&
    data.kind === 'file' && data.content instanceof Uint8Array
  );
}

/** The ID of any valid object; artifacts take the streaming path. */
export function objectId(object: AipObject): Outcome<Id> {
  if (isPlainFileArtifact(object)) return success(artifactId(object.data.content));
  // Anything else, artifacts with a defect included, gets encodeObject's checks and codes.
  const encoded = encodeObject(object);
  return encoded.ok ? success(encoded.value.id) : encoded;
}
