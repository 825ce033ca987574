// ATProto TIDs: syntax, encoding, and a generator whose clock and clock id are
// injected so tests control them. Knows nothing about files: callers pass the
// floor (greatest TID already on disk) so that order holds across processes.

import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';

const ALPHABET = '234567abcdefghijklmnopqrstuvwxyz';
const TID_PATTERN = /^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$/;
const CLOCK_ID_BITS = 10n;
const CLOCK_ID_MASK = (1n << CLOCK_ID_BITS) - 1n;
/** Bits 62..10: 53 bits of microseconds, so a JavaScript number holds them exactly. */
export const MAX_TID_MICROS = 2 ** 53 - 1;

export function isValidTid(value: string): boolean {
  return TID_PATTERN.test(value);
}

/**
 * A TID as generators make them: valid syntax and bit 63 clear, so its first
 * character is one of `234567ab` (spec 3.6). The syntax alone admits first
 * characters up to `j`, whose values have bit 63 set.
 */
export function isGeneratedTid(value: string): boolean {
  return isValidTid(value) && '234567ab'.includes(value[0] ?? '');
}

export class InvalidTidError extends Error {
  override readonly name = 'InvalidTidError';
}

export function ensureValidTid(value: string): void {
  if (!isValidTid(value)) throw new InvalidTidError(`not a TID: ${JSON.stringify(value)}`);
}

/** Encodes a 64-bit value (top bit clear) as 13 base32-sortable characters. */
export function encodeTidValue(value: bigint): string {
  if (value < 0n || value >= 1n << 63n) throw new InvalidTidError(`TID value out of range: ${value}`);
  let rest = value;
  let out = '';
  for (let i = 0; i < 13; i++) {
    out = ALPHABET[Number(rest & 31n)]! + out;
    rest >>= 5n;
  }
  return out;
}

export function decodeTidValue(tid: string): bigint {
  ensureValidTid(tid);
  let value = 0n;
  for (const ch of tid) value = (value << 5n) | BigInt(ALPHABET.indexOf(ch));
  return value;
}

export function tidFromParts(micros: number, clockId: number): string {
  if (!Number.isSafeInteger(micros) || micros < 0 || micros > MAX_TID_MICROS) {
    throw new InvalidTidError(`TID timestamp out of range: ${micros}`);
  }
  if (!Number.isInteger(clockId) || clockId < 0 || clockId > 1023) throw new InvalidTidError(`bad clock id: ${clockId}`);
  return encodeTidValue((BigInt(micros) << CLOCK_ID_BITS) | BigInt(clockId));
}

export function tidMicros(tid: string): number {
  return Number(decodeTidValue(tid) >> CLOCK_ID_BITS);
}

export function tidClockId(tid: string): number {
  return Number(decodeTidValue(tid) & CLOCK_ID_MASK);
}

/**
 * Wall clock in integer microseconds. The monotonic high-resolution clock
 * supplies the digits below the millisecond while it agrees with the wall
 * clock; once they drift apart (NTP steps, sleep) the wall clock wins, since
 * TIDs and createdAt should tell the same time.
 */
export function systemMicros(): number {
  const wall = Date.now() * 1000;
  const fine = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  return Math.abs(fine - wall) < 1000 ? fine : wall;
}

export interface TidGeneratorOptions {
  /** Wall clock in microseconds since the Unix epoch. */
  readonly nowMicros?: () => number;
  /** The 10-bit clock id; chosen at random once per generator by default. */
  readonly clockId?: number;
}

/**
 * Strictly increasing TIDs for one process. `next(floor)` returns a TID whose
 * timestamp is greater than `floor` (the greatest timestamp already taken by
 * anyone, e.g. on disk), than every TID this generator made, and at least now.
 * A wall clock that steps back therefore never reorders records.
 */
export class TidGenerator {
  readonly clockId: number;
  private readonly nowMicros: () => number;
  private lastMicros = -1;

  constructor(options: TidGeneratorOptions = {}) {
    this.nowMicros = options.nowMicros ?? systemMicros;
    this.clockId = options.clockId ?? randomInt(1024);
    if (!Number.isInteger(this.clockId) || this.clockId < 0 || this.clockId > 1023) {
      throw new InvalidTidError(`bad clock id: ${this.clockId}`);
    }
  }

  /**
   * @param floorMicros every returned timestamp is strictly greater than this (use -1 for none),
   * unless no timestamp is left above it (or above this generator's last TID): at the end of
   * the TID space (year 2255: a stray record name) such a bound is dropped and the clock picks,
   * so order gives way there and the caller's exclusive create keeps names unique.
   */
  next(floorMicros = -1): string {
    const now = this.nowMicros();
    const following = [this.lastMicros + 1, floorMicros + 1].filter((micros) => micros <= MAX_TID_MICROS);
    const micros = Math.max(now, ...following);
    const tid = tidFromParts(micros, this.clockId);
    this.lastMicros = micros;
    return tid;
  }
}
