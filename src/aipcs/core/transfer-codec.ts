// The portable artefact codec as the transfer use cases see it: the shapes
// of src/aipcs/portable's content types, declared here because core depends
// on ports only. Composition passes the real writer and reader; the compiler
// checks that they fit these declarations, so the two cannot drift silently.

import type { JsonObject } from '../../common/json.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import type { BackendName, BranchRole, BranchStatus, DesignState, FieldSet, HistoryKind, Micros, OperationalStatus } from './ports.js';

export interface TransferHeader {
  readonly producerPackageVersion: string;
  readonly producerMcpContract: string;
  readonly createdAt: Micros;
  readonly sourceBackend: BackendName;
}

export interface TransferService {
  readonly serviceId: string;
  readonly domainName: string;
  readonly domainClass: string;
  readonly intentDescription: string;
  readonly designState: DesignState;
  readonly operationalStatus: OperationalStatus;
  readonly manifest: JsonObject | null;
  readonly schemaVersion: number | null;
  readonly serviceRevision: bigint;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly lastActivityAt: Micros;
  readonly materialisedAt: Micros | null;
  readonly exportFence: { readonly generation: bigint; readonly state: 'closed' } | null;
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

export interface TransferMembership {
  readonly branchId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly role: BranchRole;
}

export type TransferSource<T> = Iterable<T> | AsyncIterable<T>;

/** Members must come in the canonical order of operations spec §5.5; the writer refuses anything else. */
export interface TransferContent {
  readonly header: TransferHeader;
  readonly service: TransferService;
  readonly records: TransferSource<TransferRecord>;
  readonly history: TransferSource<TransferHistoryEvent>;
  readonly branches: TransferSource<TransferBranch>;
  readonly memberships: TransferSource<TransferMembership>;
}

export type TransferSectionKind = 'header' | 'service' | 'record' | 'history' | 'branch' | 'branch_membership' | 'audit';

export interface TransferSummary {
  readonly exportFormatVersion: 1;
  readonly sourceBackend: BackendName;
  readonly rootSha256: string;
  readonly frameCount: number;
  readonly preTrailerByteCount: number;
  readonly totalByteCount: number;
  readonly sections: readonly { readonly kind: TransferSectionKind; readonly count: number; readonly sha256: string }[];
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
