// Writing one service's logical content as an artefact (operations spec §5):
// canonical lines with per-line digests, then the trailer. It streams: each
// member is encoded, checked by the same validator the reader uses (on the
// frame object it rendered, which spares parsing the text back), and
// buffered into chunks of about 64 KiB for the sink, so memory stays bounded
// whatever the size. It reads no storage and opens no file.

import { hash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { JsonObject } from '../../common/json.js';
import type { CheckReply, CheckRequest, CheckSetup } from './bundle-check-worker.js';
import { encodeCanonical } from './canonical-json.js';
import type { BundleContent, BundleSummary } from './content.js';
import { BundleInvalidError } from './errors.js';
import { resolveLimits, type BundleLimits, type BundleOptions, type SectionKind } from './format.js';
import { FrameValidator, type EncodedFrame, type TrailerFacts } from './frame-validator.js';
import { renderHistoryCovered, renderRecordCovered } from './line-render.js';
import { encodeBranch, encodeHeader, encodeHistory, encodeMembership, encodeRecord, encodeService } from './payload-codec.js';

export type BundleSink = (chunk: Uint8Array) => void | Promise<void>;

const CHUNK_BYTES = 64 * 1024;

class ChunkedSink {
  private parts: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly sink: BundleSink,
    /** Also sees every chunk, after the sink (the check thread). */
    private readonly tap?: (chunk: Buffer) => Promise<void>,
  ) {}

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
    if (this.tap !== undefined) await this.tap(chunk);
  }
}

/** The longest text withDigest adds to a covered text: `,"sha256":"` + 64 hex + `"}` and the LF, less the covered closing brace. */
const DIGEST_TAIL_BYTES = 80;

/**
 * The lines of the checked-aside writer, each written once, straight into
 * the chunk it travels in: the covered text is encoded there, its digest
 * taken over those bytes, and its closing brace overwritten with the digest
 * member (the text withDigest builds). Spares a per-line string copy, a
 * second UTF-8 encoding for the digest and a per-line buffer. Chunks are
 * fresh buffers: a sink may keep the chunks it was given.
 */
class LineChunks {
  private buffer = Buffer.allocUnsafe(2 * CHUNK_BYTES);
  private used = 0;

  constructor(
    private readonly sink: BundleSink,
    /** Also sees every chunk, after the sink (the check thread). */
    private readonly tap: (chunk: Buffer) => Promise<void>,
  ) {}

  /**
   * Appends the line of the covered text `covered` (a canonical object
   * rendering): digest spliced in, LF. Returns a promise only when it hands
   * a chunk on, so most lines cost the caller no await.
   */
  line(covered: string): Promise<void> | undefined {
    // A UTF-16 code unit takes at most three UTF-8 bytes.
    const room = covered.length * 3 + DIGEST_TAIL_BYTES;
    if (this.used + room > this.buffer.length) return this.flush().then(() => this.lineAfterFlush(covered, room));
    return this.write(covered);
  }

  private lineAfterFlush(covered: string, room: number): Promise<void> | undefined {
    if (room > this.buffer.length) this.buffer = Buffer.allocUnsafe(room);
    return this.write(covered);
  }

  private write(covered: string): Promise<void> | undefined {
    const buffer = this.buffer;
    const start = this.used;
    const end = start + buffer.write(covered, start, 'utf8');
    const digest = hash('sha256', buffer.subarray(start, end), 'hex');
    let at = end - 1;
    at += buffer.write(',"sha256":"', at, 'latin1');
    at += buffer.write(digest, at, 'latin1');
    at += buffer.write('"}\n', at, 'latin1');
    this.used = at;
    return at >= CHUNK_BYTES ? this.flush() : undefined;
  }

  async flush(): Promise<void> {
    if (this.used === 0) return;
    const chunk = this.buffer.subarray(0, this.used);
    this.buffer = Buffer.allocUnsafe(2 * CHUNK_BYTES);
    this.used = 0;
    await this.sink(chunk);
    await this.tap(chunk);
  }
}

/** Chunks of lines the check thread may hold unchecked: memory stays bounded if it falls behind. */
const MAX_UNCHECKED_CHUNKS = 16;
/**
 * Chunks travel through slots of one shared buffer, reused once the check
 * thread took its copy: a fresh buffer per chunk would leave it the whole
 * artefact in buffers its collector frees only lazily. A chunk larger than
 * a slot (a line near the 1 MiB bound) travels as its own copy.
 */
const SLOT_BYTES = 128 * 1024;

/**
 * The check worker, when this module runs compiled: its sibling file. Under
 * a source transformer (unit tests) there is no compiled sibling, and the
 * writer checks in its own thread.
 */
const CHECK_WORKER = import.meta.url.endsWith('.js') ? new URL('./bundle-check-worker.js', import.meta.url) : null;

/** The writer's side of the check thread: sends lines in order, bounded, and surfaces its verdicts. */
class CheckThread {
  private readonly worker: Worker;
  private unchecked = 0;
  private failure: Error | null = null;
  private closing = false;
  private readonly replies: CheckReply[] = [];
  private waiter: (() => void) | null = null;
  private readonly slots = new Uint8Array(new SharedArrayBuffer(SLOT_BYTES * MAX_UNCHECKED_CHUNKS));
  private readonly freeSlots: number[] = Array.from({ length: MAX_UNCHECKED_CHUNKS }, (_, slot) => slot);

  constructor(url: URL, limits: BundleLimits) {
    this.worker = new Worker(url, { workerData: { limits, slots: this.slots, slotBytes: SLOT_BYTES } satisfies CheckSetup });
    this.worker.on('message', (reply: CheckReply) => {
      if (reply.type === 'ack') {
        this.unchecked--;
        if (reply.slot !== null) this.freeSlots.push(reply.slot);
      }
      else if (reply.type === 'error') this.failure ??= reply.reason === null ? new Error(reply.message) : new BundleInvalidError(reply.reason, reply.line);
      else this.replies.push(reply);
      this.wake();
    });
    this.worker.on('error', (error: Error) => {
      this.failure ??= error;
      this.wake();
    });
    this.worker.on('exit', () => {
      if (!this.closing) this.failure ??= new Error('the artefact check thread stopped');
      this.wake();
    });
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }

  private async until(done: () => boolean): Promise<void> {
    for (;;) {
      if (this.failure !== null) throw this.failure;
      if (done()) return;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private post(request: CheckRequest): void {
    if (request.type === 'facts' || request.type === 'slot') this.worker.postMessage(request);
    else this.worker.postMessage(request, [request.bytes.buffer as ArrayBuffer]);
  }

  /** Hands over whole lines (copied: the caller's buffer may be pooled); waits while too many are unchecked. */
  async lines(chunk: Uint8Array): Promise<void> {
    if (this.failure !== null) throw this.failure;
    this.unchecked++;
    const slot = chunk.length <= SLOT_BYTES ? this.freeSlots.pop() : undefined;
    if (slot === undefined) {
      this.post({ type: 'lines', bytes: new Uint8Array(chunk) });
    } else {
      this.slots.set(chunk, slot * SLOT_BYTES);
      this.post({ type: 'slot', slot, length: chunk.length });
    }
    await this.until(() => this.unchecked < MAX_UNCHECKED_CHUNKS);
  }

  private async reply<T extends CheckReply['type']>(type: T): Promise<Extract<CheckReply, { type: T }>> {
    await this.until(() => this.replies.length > 0);
    const reply = this.replies.shift() as CheckReply;
    if (reply.type !== type) throw new Error(`the artefact check thread answered ${reply.type} instead of ${type}`);
    return reply as Extract<CheckReply, { type: T }>;
  }

  async facts(): Promise<TrailerFacts> {
    this.post({ type: 'facts' });
    return (await this.reply('facts')).facts;
  }

  async trailer(line: Uint8Array): Promise<BundleSummary> {
    this.post({ type: 'trailer', bytes: new Uint8Array(line) });
    return (await this.reply('end')).summary;
  }

  close(): void {
    this.closing = true;
    void this.worker.terminate();
  }
}

/** A non-trailer line's text (without LF): the covered text with its digest spliced in as the last member (canonical order puts `sha256` after `kind`, `ordinal` and `payload`). */
function withDigest(covered: string, digest = hash('sha256', covered, 'hex')): string {
  return `${covered.slice(0, -1)},"sha256":"${digest}"}`;
}

/** Renders the line at `ordinal`; a content defect found there names that line. */
function atLine<T>(ordinal: number, render: () => T): T {
  try {
    return render();
  } catch (error) {
    if (error instanceof BundleInvalidError && error.line === null) throw new BundleInvalidError(error.reason, ordinal);
    throw error;
  }
}

/** One non-trailer line: its text (without LF), the object its digest covers spliced in as the last member, and that frame object. */
export function encodeFrame(kind: Exclude<SectionKind, 'audit'>, ordinal: number, payload: JsonObject): EncodedFrame {
  const covered = encodeCanonical({ kind, ordinal: BigInt(ordinal), payload });
  const digest = hash('sha256', covered, 'hex');
  return { text: withDigest(covered, digest), frame: { kind, ordinal: BigInt(ordinal), payload, sha256: digest } };
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

/** The trailer frame the facts of the lines before it call for. */
function trailerFrame(ordinal: number, facts: TrailerFacts): JsonObject {
  return {
    kind: 'trailer',
    ordinal: BigInt(ordinal),
    payload: {
      pre_trailer_byte_count: BigInt(facts.preTrailerByteCount),
      root_sha256: facts.rootSha256,
      sections: facts.sections.map((section) => ({ count: BigInt(section.count), kind: section.kind, sha256: section.sha256 })),
    },
  };
}

/**
 * writeBundle with explicit limits; exported for tests that shrink the line
 * limits. Content streamed from a store (member sources that are not
 * arrays) is checked on a second thread when the module runs compiled: the
 * same rules, run by the reader's own validator on the rendered bytes,
 * while this thread reads and renders the next members.
 */
export async function writeWithLimits(content: BundleContent, sink: BundleSink, limits: BundleLimits): Promise<BundleSummary> {
  if (CHECK_WORKER !== null && !Array.isArray(content.records)) return writeCheckedAside(content, sink, limits, CHECK_WORKER);
  const validator = new FrameValidator(limits);
  const out = new ChunkedSink(sink);
  let ordinal = 0;
  const emit = async (kind: Exclude<SectionKind, 'audit'>, payload: () => JsonObject): Promise<void> => {
    const encoded = atLine(ordinal, () => encodeFrame(kind, ordinal, payload()));
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

  const frame = trailerFrame(ordinal, validator.trailerFacts());
  const trailer = encodeCanonical(frame);
  const line = Buffer.from(`${trailer}\n`, 'utf8');
  const end = validator.acceptLine(line, { text: trailer, frame });
  await out.push(line);
  await out.flush();
  if (end.kind !== 'end') throw new Error('the trailer did not close the artefact');
  return end.value;
}

/** writeWithLimits with the check on the worker at `url` (see there). */
async function writeCheckedAside(content: BundleContent, sink: BundleSink, limits: BundleLimits, url: URL): Promise<BundleSummary> {
  const check = new CheckThread(url, limits);
  try {
    const out = new LineChunks(sink, (chunk) => check.lines(chunk));
    let ordinal = 0;
    /**
     * Emits the line whose digest covers the text `covered` renders for this
     * ordinal; a promise only when a chunk was handed on (awaited by the caller).
     */
    const emit = (covered: (ordinal: number) => string): Promise<void> | undefined => {
      const text = atLine(ordinal, () => covered(ordinal));
      ordinal++;
      return out.line(text);
    };
    const framed = (kind: Exclude<SectionKind, 'audit'>, payload: () => JsonObject) => (at: number) => encodeCanonical({ kind, ordinal: BigInt(at), payload: payload() });
    await emit(framed('header', () => encodeHeader(content.header)));
    await emit(framed('service', () => encodeService(content.service)));
    // Records and history, nearly all the lines, are rendered straight from the member.
    for await (const record of content.records) {
      const handedOn = emit((at) => renderRecordCovered(at, record));
      if (handedOn !== undefined) await handedOn;
    }
    for await (const event of content.history) {
      const handedOn = emit((at) => renderHistoryCovered(at, event));
      if (handedOn !== undefined) await handedOn;
    }
    for await (const branch of content.branches) await emit(framed('branch', () => encodeBranch(branch)));
    for await (const membership of content.memberships) await emit(framed('branch_membership', () => encodeMembership(membership)));
    await out.flush();
    const trailer = Buffer.from(`${encodeCanonical(trailerFrame(ordinal, await check.facts()))}\n`, 'utf8');
    const summary = await check.trailer(trailer);
    // Straight to the sink: the check thread has its own copy of the trailer.
    await sink(trailer);
    return summary;
  } finally {
    check.close();
  }
}
