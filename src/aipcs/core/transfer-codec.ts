// The portable artefact codec as the transfer use cases see it, and the
// logical content of one exported service as plain values independent of any
// storage adapter: what the writer encodes and the reader yields. Times are
// microseconds since the Unix epoch (Timestamp27 on the wire), 64-bit
// integers are bigint. src/aipcs/portable implements the codec over these
// shapes (under its own names, content.ts); composition passes its writer
// and reader, and the compiler checks that they fit.

import type { JsonObject } from '../../common/json.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import type { BackendName, BranchRole, BranchStatus, DesignState, FieldSet, HistoryKind, Micros, OperationalStatus } from './ports.js';

/** Line 0. The profile constants are implied; only these vary. */
export interface TransferHeader {
  readonly producerPackageVersion: string;
  readonly producerMcpContract: string;
  /** Export time; the receipt time when an export is replayed. */
  readonly createdAt: Micros;
  /** Informational: an import may land on either backend. */
  readonly sourceBackend: BackendName;
}

/** The closed write fence an export was taken under. */
export interface ExportFence {
  readonly generation: bigint;
  readonly state: 'closed';
}

/** Line 1: registry metadata with the current manifest; no principal, no storage locator. */
export interface TransferService {
  readonly serviceId: string;
  readonly domainName: string;
  readonly domainClass: string;
  readonly intentDescription: string;
  readonly designState: DesignState;
  readonly operationalStatus: OperationalStatus;
  /** The manifest document as lossless JSON (the reader yields the normalised echo), or null before design. */
  readonly manifest: JsonObject | null;
  readonly schemaVersion: number | null;
  readonly serviceRevision: bigint;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly lastActivityAt: Micros;
  readonly materialisedAt: Micros | null;
  /** Null for a seeded service. */
  readonly exportFence: ExportFence | null;
}

export interface TransferRecord {
  readonly entityName: string;
  readonly recordId: string;
  readonly recordVersion: bigint;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly createdVia: string;
  readonly fields: FieldSet;
}

export interface TransferHistoryEvent {
  readonly entityName: string;
  readonly recordId: string;
  /** The record's version after the event. */
  readonly recordVersion: bigint;
  readonly kind: HistoryKind;
  readonly occurredAt: Micros;
  readonly before: FieldSet | null;
  readonly after: FieldSet | null;
}

export interface TransferBranch {
  readonly branchId: string;
  readonly slug: string;
  readonly title: string;
  readonly intent: string;
  readonly branchType: string | null;
  readonly parentBranchId: string | null;
  readonly status: BranchStatus;
  readonly retrievalSummary: string | null;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly branchRevision: bigint;
}

/** No assignment time: it is physical, not logical. */
export interface TransferMembership {
  readonly branchId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly role: BranchRole;
}

export type TransferSource<T> = Iterable<T> | AsyncIterable<T>;

/**
 * What the writer encodes. Each member source must yield in the canonical
 * order of operations spec §5.5 (the writer refuses anything else): records
 * by (entity_name, record id), history by (entity_name, record id,
 * record_version), branches by branch id, memberships by (branch id,
 * entity_name, record id, role). Ids compare as lowercase canonical text,
 * which orders like their hex.
 */
export interface TransferContent {
  readonly header: TransferHeader;
  readonly service: TransferService;
  readonly records: TransferSource<TransferRecord>;
  readonly history: TransferSource<TransferHistoryEvent>;
  readonly branches: TransferSource<TransferBranch>;
  readonly memberships: TransferSource<TransferMembership>;
}

export type TransferSectionKind = 'header' | 'service' | 'record' | 'history' | 'branch' | 'branch_membership' | 'audit';

export interface TransferSectionDigest {
  readonly kind: TransferSectionKind;
  readonly count: number;
  readonly sha256: string;
}

/** Facts about one whole artefact; safe to print (no payload content). */
export interface TransferSummary {
  readonly exportFormatVersion: 1;
  readonly sourceBackend: BackendName;
  readonly rootSha256: string;
  /** Lines including the trailer (trailer ordinal + 1, at least 3). */
  readonly frameCount: number;
  readonly preTrailerByteCount: number;
  readonly totalByteCount: number;
  /** All seven sections in trailer order. */
  readonly sections: readonly TransferSectionDigest[];
}

export interface TransferVisitor {
  readonly record?: (record: TransferRecord) => void | Promise<void>;
  readonly history?: (event: TransferHistoryEvent) => void | Promise<void>;
  readonly branch?: (branch: TransferBranch) => void | Promise<void>;
  readonly membership?: (membership: TransferMembership) => void | Promise<void>;
}

/** A whole artefact that validated, and a second validating pass over the same bytes. */
export interface ValidatedTransfer {
  readonly header: TransferHeader;
  readonly service: TransferService;
  readonly manifest: ManifestV2 | null;
  readonly summary: TransferSummary;
  /** Re-reads and re-validates; rejects (validation_failed) unless the root is unchanged. */
  replay(visitor: TransferVisitor): Promise<TransferSummary>;
}

export type TransferSink = (chunk: Uint8Array) => void | Promise<void>;

/** A running SHA-256 over the UTF-8 bytes of the texts given in turn. */
export interface TextDigest {
  update(text: string): void;
  /** The hex digest of everything given; the digest takes no more texts after this. */
  digest(): string;
}

export interface TransferCodec {
  /** Encodes in order; rejects with validation_failed when the content breaks a rule. */
  write(content: TransferContent, sink: TransferSink): Promise<TransferSummary>;
  /** Validates the artefact `open()` yields, in full, before anything else happens. */
  read(open: () => AsyncIterable<Uint8Array>): Promise<ValidatedTransfer>;
  /** The summary object the CLI prints. */
  summaryJson(summary: TransferSummary): JsonObject;
  /** A fresh running digest for comparing content on both sides of an import (re-observation). */
  textDigest(): TextDigest;
  /** Whether a write failed only because the content is more than one artefact may hold (bytes or lines). */
  exceedsLimits(error: unknown): boolean;
  /** Whether a write failed because a value has no form the artefact can carry (a number field holding an integral binary64 of 2^63 or more). */
  unrepresentable(error: unknown): boolean;
  /** Whether a write failed because one line would be longer than the artefact allows. */
  lineTooLong(error: unknown): boolean;
}
