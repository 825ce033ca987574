// The public library surface of AIP v1: the pure core (codec, IDs, schemas,
// graph verification, JSON presentation) plus the repository and runner for
// callers that want them. The CLI is not exported; it is a client of this.
export { DEFAULT_MAX_OBJECT_BYTES, MAX_DEPTH, compareMapKeys, compareUtf8, decodeCanonical, encodeCanonical } from './core/cbor-profile.js';
export type { CborMap, CborValue } from './core/cbor-profile.js';
export { artifactId, decodeObject, decodeWithId, encodeObject, makeArtifact, mustEncode, objectId, sha256Hex } from './core/codec.js';
export type { DecodeOptions, Encoded } from './core/codec.js';
export { applyEffects, diffFiles, resultingState, sameFiles } from './core/effects.js';
export { AipError, PRODUCT_CODES, PROTOCOL_CODES, isAipError } from './core/errors.js';
export type { AipErrorCode, Outcome } from './core/errors.js';
export { objectFromJson, objectToJson, parseJson, stringifyJson } from './core/json-presentation.js';
export * from './core/objects.js';
export { referencesOf } from './core/references.js';
export type { Reference } from './core/references.js';
export { expectedInputs, expectedResult, validateObjectValue } from './core/schemas.js';
export { formatTime, isId, isNonemptyText, isPath, isTime } from './core/value-rules.js';
export { GraphVerifier, verifyGraph } from './core/verify-graph.js';
export type { GraphOptions, LoadResult, ObjectSource, Verdict } from './core/verify-graph.js';
export { Repository } from './repository/repository.js';
export type { PutResult, RepositoryOptions, ReverseRef, VerifyReport } from './repository/repository.js';
export { runEvidence } from './runner/evaluate.js';
export type { RunOutcome, RunRequest } from './runner/evaluate.js';
