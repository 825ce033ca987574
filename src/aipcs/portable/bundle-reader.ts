// Reading an artefact from a byte stream (operations spec §5.9, import steps
// 1-3): split into lines within the limits, validate every line, the trailer
// and the end of input, and hand out validated content. Nothing is yielded as
// final before EOF is confirmed right after the trailer. Owns no file or
// storage access: callers pass byte streams (or a way to open one).

import type { ManifestV2 } from '../contract/manifest/types.js';
import type { BundleBranch, BundleHeader, BundleHistoryEvent, BundleItem, BundleMembership, BundleRecord, BundleService, BundleSummary } from './content.js';
import { BundleInvalidError } from './errors.js';
import { resolveLimits, type BundleLimits, type BundleOptions } from './format.js';
import { FrameValidator } from './frame-validator.js';

export interface ReadOptions extends BundleOptions {
  /** Refuse the artefact unless its root is this digest (a second read of a file validated before). */
  readonly expectedRootSha256?: string;
}

const LF = 0x0a;

function concat(parts: readonly Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Every validated item of an artefact in file order. The last item, `end`,
 * comes only once the trailer checked out and the input ended right after
 * it; a consumer that writes as it goes must undo its writes (roll back)
 * unless it saw `end`. Any defect throws BundleInvalidError; I/O errors of
 * the source pass through unchanged.
 */
export async function* readBundleItems(source: AsyncIterable<Uint8Array>, options?: ReadOptions): AsyncGenerator<BundleItem, void, undefined> {
  yield* readWithLimits(source, resolveLimits(options), options?.expectedRootSha256 ?? null);
}

/** readBundleItems with explicit limits; exported for tests that shrink the line limits. */
export async function* readWithLimits(source: AsyncIterable<Uint8Array>, limits: BundleLimits, expectedRoot: string | null): AsyncGenerator<BundleItem, void, undefined> {
  const validator = new FrameValidator(limits, expectedRoot);
  let received = 0;
  let pending: Uint8Array[] = [];
  let pendingLength = 0;
  let end: BundleItem | null = null;
  for await (const chunk of source) {
    if (chunk.length === 0) continue;
    received += chunk.length;
    if (end !== null) throw new BundleInvalidError('bytes_after_trailer', validator.linesSeen);
    if (received > limits.maxBundleBytes) throw new BundleInvalidError('bundle_too_large', validator.linesSeen);
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(LF, start);
      if (newline < 0) {
        const rest = chunk.subarray(start);
        pending.push(rest);
        pendingLength += rest.length;
        // Even the LF still to come would make this line too long.
        if (pendingLength >= limits.maxLineBytes) throw new BundleInvalidError('line_too_long', validator.linesSeen);
        break;
      }
      const tail = chunk.subarray(start, newline + 1);
      const line = pendingLength === 0 ? tail : concat([...pending, tail], pendingLength + tail.length);
      pending = [];
      pendingLength = 0;
      start = newline + 1;
      const item = validator.acceptLine(line);
      if (item.kind === 'end') {
        end = item;
        if (start < chunk.length) throw new BundleInvalidError('bytes_after_trailer', validator.linesSeen);
      } else {
        yield item;
      }
    }
  }
  if (end === null) throw new BundleInvalidError('truncated', validator.linesSeen);
  yield end;
}

/** What a full validation pass learns, with no member content kept. */
export interface BundleFacts {
  readonly header: BundleHeader;
  readonly service: BundleService;
  /** The validated manifest (null for a service not yet designed). */
  readonly manifest: ManifestV2 | null;
  readonly summary: BundleSummary;
}

/** Validates a whole artefact in one pass, keeping only the rules' bounded state; zero writes anywhere. */
export async function validateBundle(source: AsyncIterable<Uint8Array>, options?: ReadOptions): Promise<BundleFacts> {
  let header: BundleHeader | null = null;
  let service: BundleService | null = null;
  let manifest: ManifestV2 | null = null;
  for await (const item of readBundleItems(source, options)) {
    if (item.kind === 'header') header = item.value;
    else if (item.kind === 'service') {
      service = item.value;
      manifest = item.manifest;
    } else if (item.kind === 'end') {
      // The validator accepts a trailer only after a header and a service.
      return { header: header as BundleHeader, service: service as BundleService, manifest, summary: item.value };
    }
  }
  throw new BundleInvalidError('truncated');
}

/** Callbacks of a replay, each awaited before the next line is read. */
export interface BundleVisitor {
  readonly record?: (record: BundleRecord) => void | Promise<void>;
  readonly history?: (event: BundleHistoryEvent) => void | Promise<void>;
  readonly branch?: (branch: BundleBranch) => void | Promise<void>;
  readonly membership?: (membership: BundleMembership) => void | Promise<void>;
}

export interface ValidatedBundle extends BundleFacts {
  /**
   * Re-opens the artefact, validates it again in full and calls the visitor
   * for every member in file order. Resolves only when the second read ended
   * with the same root as the first; otherwise rejects (`root_changed` or any
   * other defect), possibly after some callbacks ran, so run it inside the
   * transaction that stages the members.
   */
  replay(visitor: BundleVisitor): Promise<BundleSummary>;
}

/**
 * Validates the artefact `open()` yields (the dry-run pass) and returns its
 * facts with a replay that re-opens it, as an import must (§5.9).
 */
export async function readBundle(open: () => AsyncIterable<Uint8Array>, options?: BundleOptions): Promise<ValidatedBundle> {
  const facts = await validateBundle(open(), options);
  const replayOptions: ReadOptions = { ...options, expectedRootSha256: facts.summary.rootSha256 };
  return {
    ...facts,
    async replay(visitor: BundleVisitor): Promise<BundleSummary> {
      for await (const item of readBundleItems(open(), replayOptions)) {
        switch (item.kind) {
          case 'record':
            await visitor.record?.(item.value);
            break;
          case 'history':
            await visitor.history?.(item.value);
            break;
          case 'branch':
            await visitor.branch?.(item.value);
            break;
          case 'branch_membership':
            await visitor.membership?.(item.value);
            break;
          case 'end':
            return item.value;
          default:
            break;
        }
      }
      throw new BundleInvalidError('truncated');
    },
  };
}
