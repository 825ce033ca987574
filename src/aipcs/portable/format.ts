// Fixed facts of the portable export format, export_format_version 1
// (operations spec §5): profile names, section kinds and their order, and the
// limits of aipcs-bundle-limits-1. Pure constants; no I/O, no storage.

export const EXPORT_FORMAT_VERSION = 1;
export const CANONICALIZATION_PROFILE = 'aipcs-json-c14n-1';
export const LIMIT_PROFILE = 'aipcs-bundle-limits-1';
export const PRODUCER_PACKAGE = 'aipcs';

/** Every kind a trailer accounts for, in trailer order (also the file order). */
export const SECTION_KINDS = ['header', 'service', 'record', 'history', 'branch', 'branch_membership', 'audit'] as const;
export type SectionKind = (typeof SECTION_KINDS)[number];

/** The four member sections, in file order. */
export const MEMBER_KINDS = ['record', 'history', 'branch', 'branch_membership'] as const;
export type MemberKind = (typeof MEMBER_KINDS)[number];

export type FrameKind = SectionKind | 'trailer';

/** SHA-256 of zero bytes: the digest of an empty section. */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** One line, LF included. */
export const MAX_LINE_BYTES = 1_048_576;
/** Default bound on a whole artefact; a caller may lower it or raise it up to the absolute bound. */
export const DEFAULT_MAX_BUNDLE_BYTES = 268_435_456;
export const ABSOLUTE_MAX_BUNDLE_BYTES = 1_073_741_824;
/** Lines including the trailer (so at most 999,997 members after header and service). */
export const MAX_LINES = 1_000_000;
/** JSON nesting, the line object being level 1. */
export const MAX_DEPTH = 64;

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** The limits one codec run enforces. Only maxBundleBytes is a public knob; tests lower the others. */
export interface BundleLimits {
  readonly maxBundleBytes: number;
  readonly maxLineBytes: number;
  readonly maxLines: number;
}

export const DEFAULT_LIMITS: BundleLimits = {
  maxBundleBytes: DEFAULT_MAX_BUNDLE_BYTES,
  maxLineBytes: MAX_LINE_BYTES,
  maxLines: MAX_LINES,
};

/** Public options shared by the writer and the reader. */
export interface BundleOptions {
  /** Upper bound on the artefact size in bytes: 1..1 GiB, 256 MiB when absent. */
  readonly maxBundleBytes?: number;
}

export function resolveLimits(options: BundleOptions | undefined): BundleLimits {
  const maxBundleBytes = options?.maxBundleBytes ?? DEFAULT_MAX_BUNDLE_BYTES;
  if (!Number.isSafeInteger(maxBundleBytes) || maxBundleBytes < 1 || maxBundleBytes > ABSOLUTE_MAX_BUNDLE_BYTES) {
    // A caller bug, not an artefact defect: the bound is never derived from input.
    throw new RangeError('maxBundleBytes must be an integer in 1..1073741824.');
  }
  return { ...DEFAULT_LIMITS, maxBundleBytes };
}
