// The writer's check of its own output on a second thread (operations spec
// §5.9 export step 3): the lines the writer renders arrive here as bytes, in
// order, and go through the reader's own validation (FrameValidator on the
// text: canonical form, per-line digest, payloads, order, limits, section
// and root digests), while the writer's thread reads the store and renders
// the next lines. Messages (in): `lines` (whole lines, LF included),
// `facts` (what the trailer must say), `trailer` (the trailer line). Out:
// `ack` per batch of lines, `facts`, `end` (the summary), or `error`.

import { parentPort, workerData } from 'node:worker_threads';
import type { BundleSummary } from './content.js';
import { BundleInvalidError } from './errors.js';
import type { BundleLimits } from './format.js';
import { FrameValidator, type TrailerFacts } from './frame-validator.js';

const LF = 0x0a;

export type CheckRequest =
  | { readonly type: 'lines'; readonly bytes: Uint8Array }
  /** Lines in a slot of the shared buffer (`SLOT_BYTES` apart), free again once acknowledged. */
  | { readonly type: 'slot'; readonly slot: number; readonly length: number }
  | { readonly type: 'facts' }
  | { readonly type: 'trailer'; readonly bytes: Uint8Array };

export type CheckReply =
  /** A chunk was checked; its slot (if it came in one) is free. */
  | { readonly type: 'ack'; readonly slot: number | null }
  | { readonly type: 'facts'; readonly facts: TrailerFacts }
  | { readonly type: 'end'; readonly summary: BundleSummary }
  | { readonly type: 'error'; readonly reason: BundleInvalidError['reason'] | null; readonly line: number | null; readonly message: string };

/** What the writer passes the worker. */
export interface CheckSetup {
  readonly limits: BundleLimits;
  /** The shared slots, each `slotBytes` long. */
  readonly slots: Uint8Array;
  readonly slotBytes: number;
}

const port = parentPort;
if (port !== null) {
  const setup = workerData as CheckSetup;
  const validator = new FrameValidator(setup.limits);
  /** This thread's copy of a slot's lines (reused; the slot is free once copied). */
  const copy = Buffer.allocUnsafe(setup.slotBytes);
  let failed = false;
  const acceptLines = (bytes: Uint8Array): void => {
    let start = 0;
    while (start < bytes.length) {
      const newline = bytes.indexOf(LF, start);
      // The writer sends whole lines only.
      const end = newline < 0 ? bytes.length : newline + 1;
      validator.acceptLine(bytes.subarray(start, end));
      start = end;
    }
  };
  port.on('message', (request: CheckRequest) => {
    if (failed) return;
    try {
      switch (request.type) {
        case 'lines':
          acceptLines(request.bytes);
          port.postMessage({ type: 'ack', slot: null } satisfies CheckReply);
          break;
        case 'slot': {
          const from = request.slot * setup.slotBytes;
          copy.set(setup.slots.subarray(from, from + request.length));
          port.postMessage({ type: 'ack', slot: request.slot } satisfies CheckReply);
          acceptLines(copy.subarray(0, request.length));
          break;
        }
        case 'facts':
          port.postMessage({ type: 'facts', facts: validator.trailerFacts() } satisfies CheckReply);
          break;
        case 'trailer': {
          const item = validator.acceptLine(request.bytes);
          if (item.kind !== 'end') throw new Error('the trailer did not close the artefact');
          port.postMessage({ type: 'end', summary: item.value } satisfies CheckReply);
          break;
        }
      }
    } catch (error) {
      failed = true;
      const reply: CheckReply =
        error instanceof BundleInvalidError
          ? { type: 'error', reason: error.reason, line: error.line, message: error.message }
          : { type: 'error', reason: null, line: null, message: error instanceof Error ? error.message : String(error) };
      port.postMessage(reply);
    }
  });
}
