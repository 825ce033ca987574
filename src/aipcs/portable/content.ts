// The logical content of one exported service under the artefact's names:
// the shapes are the transfer port's (core/transfer-codec.ts, documented
// there), so the codec and the use cases that run it cannot drift apart.

import type { ManifestV2 } from '../contract/manifest/types.js';
import type {
  TransferBranch,
  TransferContent,
  TransferHeader,
  TransferHistoryEvent,
  TransferMembership,
  TransferRecord,
  TransferSectionDigest,
  TransferService,
  TransferSource,
  TransferSummary,
} from '../core/transfer-codec.js';

export type { BranchRole, BranchStatus, DesignState, FieldSet, FieldValue, HistoryKind, Micros, OperationalStatus } from '../core/ports.js';
export type { BackendName as SourceBackend } from '../core/ports.js';
export type { ExportFence } from '../core/transfer-codec.js';

export type BundleHeader = TransferHeader;
export type BundleService = TransferService;
export type BundleRecord = TransferRecord;
export type BundleHistoryEvent = TransferHistoryEvent;
export type BundleBranch = TransferBranch;
export type BundleMembership = TransferMembership;
export type BundleSource<T> = TransferSource<T>;
export type BundleContent = TransferContent;
export type SectionDigest = TransferSectionDigest;
export type BundleSummary = TransferSummary;

/** One validated element of an artefact, in file order; `end` comes only after the trailer checked out. */
export type BundleItem =
  | { readonly kind: 'header'; readonly value: BundleHeader }
  | { readonly kind: 'service'; readonly value: BundleService; readonly manifest: ManifestV2 | null }
  | { readonly kind: 'record'; readonly value: BundleRecord }
  | { readonly kind: 'history'; readonly value: BundleHistoryEvent }
  | { readonly kind: 'branch'; readonly value: BundleBranch }
  | { readonly kind: 'branch_membership'; readonly value: BundleMembership }
  | { readonly kind: 'end'; readonly value: BundleSummary };
