// The portable export codec's public surface (operations spec §5): content
// types, the streaming writer, the streaming reader/validator, the error.
// Exporters and importers (core/cli) use only what is re-exported here.

export type {
  BranchRole,
  BranchStatus,
  BundleBranch,
  BundleContent,
  BundleHeader,
  BundleHistoryEvent,
  BundleItem,
  BundleMembership,
  BundleRecord,
  BundleService,
  BundleSource,
  BundleSummary,
  DesignState,
  ExportFence,
  FieldSet,
  FieldValue,
  HistoryKind,
  Micros,
  OperationalStatus,
  SectionDigest,
  SourceBackend,
} from './content.js';
export { BUNDLE_DEFECTS, BundleInvalidError, isBundleInvalidError, type BundleDefect } from './errors.js';
export {
  ABSOLUTE_MAX_BUNDLE_BYTES,
  CANONICALIZATION_PROFILE,
  DEFAULT_MAX_BUNDLE_BYTES,
  EMPTY_SHA256,
  EXPORT_FORMAT_VERSION,
  LIMIT_PROFILE,
  MAX_LINE_BYTES,
  MAX_LINES,
  SECTION_KINDS,
  type BundleOptions,
  type SectionKind,
} from './format.js';
export { writeBundle, type BundleSink } from './bundle-writer.js';
export { readBundle, readBundleItems, validateBundle, type BundleFacts, type BundleVisitor, type ReadOptions, type ValidatedBundle } from './bundle-reader.js';
export { summaryToJson } from './summary.js';
export { formatTimestamp27, parseTimestamp27 } from './timestamp27.js';
