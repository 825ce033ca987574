// Time and identity sources, injected so tests control them. Production code
// takes a Clock and an IdSource instead of calling Date.now or randomUUID.

import { randomBytes, randomUUID } from 'node:crypto';

export interface Clock {
  /** Microseconds since the Unix epoch; never goes backwards within a process. */
  nowMicros(): bigint;
}

export interface IdSource {
  /** A random (version 4) UUID in canonical lowercase form. */
  uuid(): string;
  randomBytes(length: number): Uint8Array;
}

/** Wall-clock time with microsecond resolution, made monotonic within the process. */
export function systemClock(): Clock {
  const originMicros = BigInt(Date.now()) * 1000n;
  const originHr = process.hrtime.bigint();
  let last = 0n;
  return {
    nowMicros() {
      const wall = BigInt(Date.now()) * 1000n;
      const precise = originMicros + (process.hrtime.bigint() - originHr) / 1000n;
      // Follow the wall clock when it jumps ahead; never step backwards.
      let now = wall > precise + 1_000_000n ? wall : precise;
      if (now <= last) now = last + 1n;
      last = now;
      return now;
    },
  };
}

export interface ManualClock extends Clock {
  set(micros: bigint): void;
  advance(micros: bigint): void;
}

/** A clock that only moves when told to. */
export function manualClock(startMicros: bigint): ManualClock {
  let now = startMicros;
  return {
    nowMicros: () => now,
    set(micros) {
      now = micros;
    },
    advance(micros) {
      now += micros;
    },
  };
}

export const systemIds: IdSource = {
  uuid: () => randomUUID(),
  randomBytes: (length) => new Uint8Array(randomBytes(length)),
};

/** Deterministic ids for tests: UUIDs and bytes derived from a counter. */
export function sequentialIds(prefix = 0): IdSource {
  let counter = 0;
  return {
    uuid() {
      counter++;
      const hex = (prefix * 0x1000000 + counter).toString(16).padStart(12, '0');
      return `00000000-0000-4000-8000-${hex}`;
    },
    randomBytes(length) {
      counter++;
      return Uint8Array.from({ length }, (_, i) => (counter + i) & 0xff);
    },
  };
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the thread for `ms` without a timer, for code that is synchronous anyway (SQLite retries). */
export function sleepSync(ms: number): void {
  Atomics.wait(PAUSE, 0, 0, ms);
}
