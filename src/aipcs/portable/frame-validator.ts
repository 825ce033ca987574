// Line-by-line validation of one artefact (operations spec §5.2-§5.7): size,
// bytes, canonical JSON, frame shape, kind order, ordinals, per-line digest,
// payloads, cross-line rules, section digests, the root and the trailer. Both
// the reader and the writer (checking its own output) drive it, so nothing is
// written that would not read back. It sees whole lines, never storage.

import { createHash, hash, type Hash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../../common/json.js';
import { isJsonObject } from '../../common/json.js';
import type { BundleHeader, BundleItem, BundleService, BundleSummary, SectionDigest } from './content.js';
import { checkEncodedFrame, parseAcceptedLine, parseCanonicalLine } from './canonical-json.js';
import { ContentRules } from './content-rules.js';
import { BundleInvalidError } from './errors.js';
import { compileEntityRules, type EntityFieldRules } from './field-rules.js';
import { EXPORT_FORMAT_VERSION, MEMBER_KINDS, SECTION_KINDS, type BundleLimits, type MemberKind, type SectionKind } from './format.js';
import { decodeBranch, decodeHeader, decodeHistory, decodeMembership, decodeRecord, decodeService, hasExactKeys } from './payload-codec.js';

const LF = 0x0a;
const CR = 0x0d;
const CLOSE_BRACE = 0x7d;
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** `,"sha256":"` + 64 hex + `"}` + LF: what a frame adds to the object its digest covers. */
const DIGEST_SUFFIX_BYTES = 11 + 64 + 2 + 1;
const FRAME_KEYS = ['kind', 'ordinal', 'payload', 'sha256'] as const;
const TRAILER_KEYS = ['kind', 'ordinal', 'payload'] as const;
const TRAILER_PAYLOAD_KEYS = ['pre_trailer_byte_count', 'root_sha256', 'sections'] as const;
const SECTION_ENTRY_KEYS = ['count', 'kind', 'sha256'] as const;

/**
 * The root and section digests of the lines accepted so far. Lines are
 * copied into one reused buffer and hashed in runs of up to 256 KiB (one
 * section at a time, as sections never interleave): one update per line
 * would cost more than the hashing itself, and a fresh buffer per run would
 * leave the collector megabytes of garbage outside the heap.
 */
class RunningDigests {
  private readonly root: Hash = createHash('sha256');
  private readonly sections = new Map<SectionKind, Hash>(SECTION_KINDS.map((kind) => [kind, createHash('sha256')]));
  private readonly counts = new Map<SectionKind, number>(SECTION_KINDS.map((kind) => [kind, 0]));
  private readonly run = Buffer.allocUnsafe(256 * 1024);
  private runKind: SectionKind | null = null;
  private runBytes = 0;

  add(kind: SectionKind, line: Uint8Array): void {
    if (kind !== this.runKind || this.runBytes + line.length > this.run.length) this.flush();
    this.runKind = kind;
    this.counts.set(kind, (this.counts.get(kind) as number) + 1);
    if (line.length > this.run.length) {
      this.hash(kind, line);
      return;
    }
    this.run.set(line, this.runBytes);
    this.runBytes += line.length;
  }

  private hash(kind: SectionKind, bytes: Uint8Array): void {
    this.root.update(bytes);
    (this.sections.get(kind) as Hash).update(bytes);
  }

  private flush(): void {
    if (this.runKind !== null && this.runBytes > 0) this.hash(this.runKind, this.run.subarray(0, this.runBytes));
    this.runBytes = 0;
  }

  /** Digests so far (copies: more lines may follow). */
  facts(): { root: string; sections: SectionDigest[] } {
    this.flush();
    return {
      root: this.root.copy().digest('hex'),
      sections: SECTION_KINDS.map((kind) => ({ kind, count: this.counts.get(kind) as number, sha256: (this.sections.get(kind) as Hash).copy().digest('hex') })),
    };
  }
}

/** A line as the writer encoded it: its text without LF and the frame object that text renders. */
export interface EncodedFrame {
  readonly text: string;
  readonly frame: JsonObject;
}

/** What the trailer must say, computed from the lines so far. */
export interface TrailerFacts {
  readonly preTrailerByteCount: number;
  readonly rootSha256: string;
  readonly sections: readonly SectionDigest[];
}

export class FrameValidator {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  private lineCount = 0;
  private byteCount = 0;
  private finishedSummary: BundleSummary | null = null;
  private readonly digests = new RunningDigests();
  /** Scratch for the bytes a line's own digest covers (the line up to its `sha256` member, then `}`). */
  private covered = Buffer.alloc(0);
  private header: BundleHeader | null = null;
  private service: BundleService | null = null;
  private entities: ReadonlyMap<string, EntityFieldRules> = new Map();
  private memberSection = -1;
  private readonly rules = new ContentRules();

  constructor(
    private readonly limits: BundleLimits,
    /** Set on a second read: the root the first read found. */
    private readonly expectedRoot: string | null = null,
  ) {}

  /** The summary, once the trailer has been accepted. */
  get summary(): BundleSummary | null {
    return this.finishedSummary;
  }

  get linesSeen(): number {
    return this.lineCount;
  }

  /**
   * Validates one whole line (LF included) and returns what it carries: a
   * header, service or member item, or the `end` item for the trailer.
   * The writer passes the frame it encoded the line from (canonicalJson of
   * that object, spliced digest included), which spares decoding and
   * parsing the text; every other check still runs on the frame object.
   */
  acceptLine(line: Uint8Array, encoded?: EncodedFrame): BundleItem {
    const index = this.lineCount;
    try {
      return this.accept(line, index, encoded);
    } catch (error) {
      if (error instanceof BundleInvalidError && error.line === null) throw new BundleInvalidError(error.reason, index);
      throw error;
    }
  }

  private accept(line: Uint8Array, index: number, encoded: EncodedFrame | undefined): BundleItem {
    if (this.finishedSummary !== null) throw new BundleInvalidError('bytes_after_trailer');
    if (index >= this.limits.maxLines) throw new BundleInvalidError('too_many_lines');
    const length = line.length;
    if (length > this.limits.maxLineBytes) throw new BundleInvalidError('line_too_long');
    if (length === 0 || line[length - 1] !== LF) throw new BundleInvalidError('truncated');
    if (length === 1) throw new BundleInvalidError('empty_line');
    if (line.indexOf(CR) >= 0) throw new BundleInvalidError('carriage_return');
    if (line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) throw new BundleInvalidError('byte_order_mark');
    if (this.byteCount + length > this.limits.maxBundleBytes) throw new BundleInvalidError('bundle_too_large');

    let frame: JsonObject;
    if (encoded !== undefined) {
      frame = checkEncodedFrame(encoded.frame);
    } else {
      let text: string;
      try {
        text = this.decoder.decode(line.subarray(0, length - 1));
      } catch {
        throw new BundleInvalidError('invalid_utf8');
      }
      frame = this.expectedRoot === null ? parseCanonicalLine(text) : parseAcceptedLine(text);
    }
    const kind = frame['kind'];
    if (typeof kind !== 'string') throw new BundleInvalidError('frame_shape');
    if (kind === 'trailer') return this.acceptTrailer(frame, index, length);
    if (!(SECTION_KINDS as readonly string[]).includes(kind)) throw new BundleInvalidError('unknown_kind');
    if (kind === 'audit') throw new BundleInvalidError('audit_present');
    if (frame['ordinal'] !== BigInt(index)) throw new BundleInvalidError('ordinal_mismatch');
    if (!hasExactKeys(frame, FRAME_KEYS)) throw new BundleInvalidError('frame_shape');
    const claimed = frame['sha256'];
    if (typeof claimed !== 'string') throw new BundleInvalidError('frame_shape');
    // The writer's frame carries the digest it just computed over this very
    // text (64 hex digits by construction); a second read is bound to the
    // first read's root, which covers every line (a changed line fails
    // there, before anything it fed commits). A claim equal to the line's
    // own digest is 64 lowercase hex digits, so the shape is tested only
    // when they differ, to name the defect as before: a malformed claim is
    // frame_shape, a well-formed wrong one frame_digest_mismatch.
    if (encoded === undefined && this.expectedRoot === null) {
      if (this.lineDigest(line) !== claimed) throw new BundleInvalidError(SHA256_HEX.test(claimed) ? 'frame_digest_mismatch' : 'frame_shape');
    } else if (encoded === undefined && !SHA256_HEX.test(claimed)) {
      throw new BundleInvalidError('frame_shape');
    }
    // A member must leave room for the trailer within the line limit.
    if (index + 1 >= this.limits.maxLines) throw new BundleInvalidError('too_many_lines');

    const item = this.decodeMember(kind as Exclude<SectionKind, 'audit'>, frame['payload'], index, length);
    this.byteCount += length;
    this.digests.add(kind as SectionKind, line);
    this.lineCount++;
    return item;
  }

  /** SHA-256 of what a frame's digest covers: the line without its `,"sha256":"…"}` LF suffix, closed by `}`. */
  private lineDigest(line: Uint8Array): string {
    const size = line.length - DIGEST_SUFFIX_BYTES + 1;
    if (this.covered.length < size) this.covered = Buffer.allocUnsafe(Math.max(size, 2 * this.covered.length, 4096));
    this.covered.set(line.subarray(0, size - 1));
    this.covered[size - 1] = CLOSE_BRACE;
    return hash('sha256', this.covered.subarray(0, size), 'hex');
  }

  private decodeMember(kind: Exclude<SectionKind, 'audit'>, payload: JsonValue | undefined, index: number, length: number): BundleItem {
    if (kind === 'header') {
      if (index !== 0) throw new BundleInvalidError('section_order');
      this.header = decodeHeader(payload);
      return { kind, value: this.header };
    }
    if (index === 0) throw new BundleInvalidError('section_order');
    if (kind === 'service') {
      if (index !== 1) throw new BundleInvalidError('section_order');
      const decoded = decodeService(payload);
      this.service = decoded.service;
      if (decoded.manifest !== null) {
        this.entities = compileEntityRules(decoded.manifest);
        this.rules.constrain(decoded.manifest);
      }
      return { kind, value: decoded.service, manifest: decoded.manifest };
    }
    if (index === 1 || this.service === null) throw new BundleInvalidError('section_order');
    const section = MEMBER_KINDS.indexOf(kind as MemberKind);
    if (section < this.memberSection) throw new BundleInvalidError('section_order');
    if (this.service.designState === 'seeded') throw new BundleInvalidError('seeded_with_members');
    if (section > this.memberSection) {
      this.memberSection = section;
      this.rules.enter(kind as MemberKind);
    }
    switch (kind) {
      case 'record': {
        const value = decodeRecord(payload, this.entities, length);
        this.rules.record(value);
        return { kind, value };
      }
      case 'history': {
        const value = decodeHistory(payload, this.entities, length);
        this.rules.history(value);
        return { kind, value };
      }
      case 'branch': {
        const value = decodeBranch(payload);
        this.rules.branch(value);
        return { kind, value };
      }
      case 'branch_membership': {
        const value = decodeMembership(payload);
        this.rules.membership(value);
        return { kind, value };
      }
    }
  }

  /** The trailer the lines so far call for (the writer encodes it; digests are copied, not finalised). */
  trailerFacts(): TrailerFacts {
    const digests = this.digests.facts();
    return { preTrailerByteCount: this.byteCount, rootSha256: digests.root, sections: digests.sections };
  }

  private acceptTrailer(frame: JsonObject, index: number, length: number): BundleItem {
    if (frame['ordinal'] !== BigInt(index)) throw new BundleInvalidError('ordinal_mismatch');
    if (!hasExactKeys(frame, TRAILER_KEYS)) throw new BundleInvalidError('frame_shape');
    if (this.header === null || this.service === null) throw new BundleInvalidError('section_order');
    this.rules.finish();
    const payload = frame['payload'];
    if (!isJsonObject(payload ?? null) || !hasExactKeys(payload as JsonObject, TRAILER_PAYLOAD_KEYS)) throw new BundleInvalidError('trailer_invalid');
    const claimed = payload as JsonObject;
    const sections = claimed['sections'];
    if (typeof claimed['pre_trailer_byte_count'] !== 'bigint' || typeof claimed['root_sha256'] !== 'string' || !Array.isArray(sections) || sections.length !== SECTION_KINDS.length) {
      throw new BundleInvalidError('trailer_invalid');
    }
    sections.forEach((entry, position) => {
      if (!isJsonObject(entry) || !hasExactKeys(entry, SECTION_ENTRY_KEYS) || entry['kind'] !== SECTION_KINDS[position] || typeof entry['count'] !== 'bigint' || typeof entry['sha256'] !== 'string') {
        throw new BundleInvalidError('trailer_invalid');
      }
    });
    const facts = this.trailerFacts();
    if (claimed['root_sha256'] !== facts.rootSha256) throw new BundleInvalidError('root_mismatch');
    if (claimed['pre_trailer_byte_count'] !== BigInt(facts.preTrailerByteCount)) throw new BundleInvalidError('trailer_mismatch');
    facts.sections.forEach((expected, position) => {
      const entry = sections[position] as JsonObject;
      if (entry['count'] !== BigInt(expected.count) || entry['sha256'] !== expected.sha256) throw new BundleInvalidError('trailer_mismatch');
    });
    if (this.expectedRoot !== null && facts.rootSha256 !== this.expectedRoot) throw new BundleInvalidError('root_changed');
    this.byteCount += length;
    this.lineCount++;
    const summary: BundleSummary = {
      exportFormatVersion: EXPORT_FORMAT_VERSION,
      sourceBackend: this.header.sourceBackend,
      rootSha256: facts.rootSha256,
      frameCount: index + 1,
      preTrailerByteCount: facts.preTrailerByteCount,
      totalByteCount: this.byteCount,
      sections: facts.sections,
    };
    this.finishedSummary = summary;
    return { kind: 'end', value: summary };
  }
}
