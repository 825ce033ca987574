// The logical content of one exported service, as plain values independent of
// any storage adapter: what the writer encodes and the reader yields. Times are
// microseconds since the Unix epoch (Timestamp27 on the wire), 64-bit integers
// are bigint. The exporter and importer map storage rows to and from these.

import type { JsonObject } from '../../common/json.js';
import type { ManifestV2 } from '../contract/manifest/types.js';
import type { SectionKind } from './format.js';

/** Microseconds since the Unix epoch, UTC. */
export type Micros = bigint;

export type SourceBackend = 'sqlite' | 'postgresql';
export type DesignState = 'seeded' | 'materialised';
export type OperationalStatus = 'active' | 'suspended' | 'archived';
export type HistoryKind = 'create' | 'update' | 'delete' | 'primary_assign' | 'primary_move' | 'primary_unassign' | 'related_assign' | 'related_unassign';
export type BranchStatus = 'active' | 'archived' | 'superseded';
export type BranchRole = 'primary' | 'related';

/**
 * One domain-field value. `integer` fields are bigint; `number` fields are
 * number (the reader turns an integral token in a number field back into a
 * number); string lists are arrays of strings.
 */
export type FieldValue = null | string | bigint | number | boolean | readonly string[];
/** Domain fields only (never server-managed ones); a subset of the entity's domain fields. */
export type FieldSet = Readonly<Record<string, FieldValue>>;

/** Line 0. The profile constants are implied; only these vary. */
export interface BundleHeader {
  readonly producerPackageVersion: string;
  readonly producerMcpContract: string;
  /** Export time; the receipt time when an export is replayed. */
  readonly createdAt: Micros;
  /** Informational: an import may land on either backend. */
  readonly sourceBackend: SourceBackend;
}

export interface ExportFence {
  readonly generation: bigint;
  readonly state: 'closed';
}

/** Line 1: registry metadata with the current manifest; no principal, no storage locator. */
export interface BundleService {
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
  /** The closed write fence the export was taken under; null for a seeded service. */
  readonly exportFence: ExportFence | null;
}

export interface BundleRecord {
  readonly entityName: string;
  readonly recordId: string;
  readonly recordVersion: bigint;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
  readonly createdVia: string;
  readonly fields: FieldSet;
}

export interface BundleHistoryEvent {
  readonly entityName: string;
  readonly recordId: string;
  /** The record's version after the event. */
  readonly recordVersion: bigint;
  readonly kind: HistoryKind;
  readonly occurredAt: Micros;
  readonly before: FieldSet | null;
  readonly after: FieldSet | null;
}

export interface BundleBranch {
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
export interface BundleMembership {
  readonly branchId: string;
  readonly entityName: string;
  readonly recordId: string;
  readonly role: BranchRole;
}

export type BundleSource<T> = Iterable<T> | AsyncIterable<T>;

/**
 * What the writer encodes. Each member source must yield in the canonical
 * order of §5.5 (the writer refuses anything else): records by (entity_name,
 * record id), history by (entity_name, record id, record_version), branches
 * by branch id, memberships by (branch id, entity_name, record id, role).
 * Ids compare as lowercase canonical text, which orders like their hex.
 */
export interface BundleContent {
  readonly header: BundleHeader;
  readonly service: BundleService;
  readonly records: BundleSource<BundleRecord>;
  readonly history: BundleSource<BundleHistoryEvent>;
  readonly branches: BundleSource<BundleBranch>;
  readonly memberships: BundleSource<BundleMembership>;
}

export interface SectionDigest {
  readonly kind: SectionKind;
  readonly count: number;
  readonly sha256: string;
}

/** Facts about one whole artefact; safe to print (no payload content). */
export interface BundleSummary {
  readonly exportFormatVersion: 1;
  readonly sourceBackend: SourceBackend;
  readonly rootSha256: string;
  /** Lines including the trailer (trailer ordinal + 1, at least 3). */
  readonly frameCount: number;
  readonly preTrailerByteCount: number;
  readonly totalByteCount: number;
  /** All seven sections in trailer order. */
  readonly sections: readonly SectionDigest[];
}

/** One validated element of an artefact, in file order; `end` comes only after the trailer checked out. */
export type BundleItem =
  | { readonly kind: 'header'; readonly value: BundleHeader }
  | { readonly kind: 'service'; readonly value: BundleService; readonly manifest: ManifestV2 | null }
  | { readonly kind: 'record'; readonly value: BundleRecord }
  | { readonly kind: 'history'; readonly value: BundleHistoryEvent }
  | { readonly kind: 'branch'; readonly value: BundleBranch }
  | { readonly kind: 'branch_membership'; readonly value: BundleMembership }
  | { readonly kind: 'end'; readonly value: BundleSummary };
