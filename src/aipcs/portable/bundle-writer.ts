// Writing one service's logical content as an artefact (operations spec §5):
// canonical lines with per-line digests, then the trailer. It streams: each
// member is encoded, checked by the same validator the reader uses (on the
// frame object it rendered, which spares parsing the text back), and
// buffered into chunks of about 64 KiB for the sink, so memory stays bounded
// whatever the size. It reads no storage and opens no file.

import { hash } from 'node:crypto';
import type { JsonObject } from '../../common/json.js';
import { encodeCanonical } from './canonical-json.js';
import type { BundleContent, BundleSummary } from './content.js';
import { BundleInvalidError } from './errors.js';
import { resolveLimits, type BundleLimits, type BundleOptions, type SectionKind } from './format.js';
import { FrameValidator, type EncodedFrame } from './frame-validator.js';
import { encodeBranch, encodeHeader, encodeHistory, encodeMembership, encodeRecord, encodeService } from './payload-codec.js';

export type BundleSink = (chunk: Uint8Array) => void | Promise<void>;

const CHUNK_BYTES = 64 * 1024;

class ChunkedSink {
  private parts: Buffer[] = [];
  private size = 0;

  constructor(private readonly sink: BundleSink) {}

  async push(bytes: Buffer): Promise<void> {
    this.parts.push(bytes);
    this.size += bytes.length;
    if (this.size >= CHUNK_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.size === 0) return;
    const chunk = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    await this.sink(chunk);
  }
}

/** One non-trailer line: its text (without LF), the object its digest covers spliced in as the last member, and that frame object. */
export function encodeFrame(kind: Exclude<SectionKind, 'audit'>, ordinal: number, payload: JsonObject): EncodedFrame {
  const covered = encodeCanonical({ kind, ordinal: BigInt(ordinal), payload });
  const digest = hash('sha256', covered, 'hex');
  // Canonical order puts `sha256` after `kind`, `ordinal` and `payload`.
  return { text: `${covered.slice(0, -1)},"sha256":"${digest}"}`, frame: { kind, ordinal: BigInt(ordinal), payload, sha256: digest } };
}

/**
 * Encodes `content` and hands the artefact to `sink` in order. Resolves with
 * the summary the CLI prints; rejects with BundleInvalidError when the
 * content breaks a rule (wrong order, an invalid value, a limit), after
 * which the bytes already sunk must be discarded.
 */
export async function writeBundle(content: BundleContent, sink: BundleSink, options?: BundleOptions): Promise<BundleSummary> {
  return writeWithLimits(content, sink, resolveLimits(options));
}

/** writeBundle with explicit limits; exported for tests that shrink the line limits. */
export async function writeWithLimits(content: BundleContent, sink: BundleSink, limits: BundleLimits): Promise<BundleSummary> {
  const validator = new FrameValidator(limits);
  const out = new ChunkedSink(sink);
  let ordinal = 0;
  const emit = async (kind: Exclude<SectionKind, 'audit'>, payload: () => JsonObject): Promise<void> => {
    let encoded: EncodedFrame;
    try {
      encoded = encodeFrame(kind, ordinal, payload());
    } catch (error) {
      if (error instanceof BundleInvalidError && error.line === null) throw new BundleInvalidError(error.reason, ordinal);
      throw error;
    }
    const line = Buffer.from(`${encoded.text}\n`, 'utf8');
    // The service line is checked as a reader parses it: canonical JSON
    // writes an integral float as an integer token, so a manifest's
    // allowed_values [1, 1.0] reads back as [1, 1] and 1e17 as an integer
    // literal a number attribute refuses, although the object rendered was
    // valid. Members need no such pass (field rules map integer tokens in
    // number fields back), and there is one service line per artefact.
    validator.acceptLine(line, kind === 'service' ? undefined : encoded);
    ordinal++;
    await out.push(line);
  };

  await emit('header', () => encodeHeader(content.header));
  await emit('service', () => encodeService(content.service));
  for await (const record of content.records) await emit('record', () => encodeRecord(record));
  for await (const event of content.history) await emit('history', () => encodeHistory(event));
  for await (const branch of content.branches) await emit('branch', () => encodeBranch(branch));
  for await (const membership of content.memberships) await emit('branch_membership', () => encodeMembership(membership));

  const facts = validator.trailerFacts();
  const trailerFrame: JsonObject = {
    kind: 'trailer',
    ordinal: BigInt(ordinal),
    payload: {
      pre_trailer_byte_count: BigInt(facts.preTrailerByteCount),
      root_sha256: facts.rootSha256,
      sections: facts.sections.map((section) => ({ count: BigInt(section.count), kind: section.kind, sha256: section.sha256 })),
    },
  };
  const trailer = encodeCanonical(trailerFrame);
  const line = Buffer.from(`${trailer}\n`, 'utf8');
  const end = validator.acceptLine(line, { text: trailer, frame: trailerFrame });
  await out.push(line);
  await out.flush();
  if (end.kind !== 'end') throw new Error('the trailer did not close the artefact');
  return end.value;
}
