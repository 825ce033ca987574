import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  decodeTidValue,
  encodeTidValue,
  InvalidTidError,
  isGeneratedTid,
  isValidTid,
  MAX_TID_MICROS,
  systemMicros,
  TidGenerator,
  tidClockId,
  tidFromParts,
  tidMicros,
} from '../../src/aigpt/core/tid.js';

const MARCH_1_2026_NOON_US = Date.parse('2026-03-01T12:00:00Z') * 1000;

describe('TID encoding', () => {
  it('encodes the spec golden example', () => {
    expect(tidFromParts(MARCH_1_2026_NOON_US, 0)).toBe('3mfyouuy62222');
    expect(tidMicros('3mfyouuy62222')).toBe(MARCH_1_2026_NOON_US);
    expect(tidClockId('3mfyouuy62222')).toBe(0);
  });

  it('encodes 0 and the extremes of the alphabet', () => {
    expect(encodeTidValue(0n)).toBe('2222222222222');
    expect(encodeTidValue(31n)).toBe('222222222222z');
    expect(encodeTidValue((1n << 63n) - 1n)).toBe('bzzzzzzzzzzzz');
    expect(() => encodeTidValue(1n << 63n)).toThrow();
    expect(() => encodeTidValue(-1n)).toThrow();
  });

  it('checks the ATProto syntax', () => {
    expect(isValidTid('3mfyouuy62222')).toBe(true);
    expect(isValidTid('3jzfcijpj2z2a')).toBe(true);
    // A 14th character at either end is refused, also when the other 13 form a TID.
    for (const bad of ['', '3mfyouuy6222', '3mfyouuy622222', '23mfyouuy62222', '3MFYOUUY62222', 'kzzzzzzzzzzzz', '3mfyouuy6222-', '3mfyouuy62221', 'notes']) {
      expect(isValidTid(bad), bad).toBe(false);
    }
  });

  it('tidFromParts takes clock ids 0..1023 and timestamps 0..2^53-1, and refuses one past either end', () => {
    expect(tidFromParts(0, 1023)).toBe('22222222222zz');
    expect(tidClockId(tidFromParts(MARCH_1_2026_NOON_US, 1023))).toBe(1023);
    expect(() => tidFromParts(MARCH_1_2026_NOON_US, 1024)).toThrow(/clock id/);
    expect(() => tidFromParts(MARCH_1_2026_NOON_US, -1)).toThrow(/clock id/);
    expect(tidFromParts(MAX_TID_MICROS, 1023)).toBe('bzzzzzzzzzzzz');
    expect(() => tidFromParts(MAX_TID_MICROS + 1, 0)).toThrow(/out of range/);
    expect(() => tidFromParts(-1, 0)).toThrow(/out of range/);
    // Fractions and NaN are refused as TID errors too, not left to BigInt's RangeError.
    for (const micros of [MARCH_1_2026_NOON_US + 0.5, Number.NaN]) expect(() => tidFromParts(micros, 0), String(micros)).toThrow(InvalidTidError);
    expect(() => tidFromParts(MARCH_1_2026_NOON_US, 1.5)).toThrow(InvalidTidError);
  });

  it('refuses to decode what is not a TID instead of reading garbage bits', () => {
    for (const bad of ['notes', '3mfyouuy6222', 'kzzzzzzzzzzzz']) {
      expect(() => tidMicros(bad), bad).toThrow(InvalidTidError);
      expect(() => decodeTidValue(bad), bad).toThrow(InvalidTidError);
    }
  });

  it('a generated TID starts with 2..b (bit 63 clear); c..j pass the syntax but no generator makes them', () => {
    expect(isGeneratedTid('bzzzzzzzzzzzz')).toBe(true);
    expect(isGeneratedTid('2222222222222')).toBe(true);
    for (const first of 'cdefghij') {
      const tid = `${first}222222222222`;
      expect(isValidTid(tid), tid).toBe(true);
      expect(isGeneratedTid(tid), tid).toBe(false);
    }
  });

  it('round-trips and sorts as strings in value order', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }), fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }), (a, b) => {
        const ta = encodeTidValue(a);
        const tb = encodeTidValue(b);
        expect(isValidTid(ta)).toBe(true);
        expect(decodeTidValue(ta)).toBe(a);
        expect(Math.sign(ta < tb ? -1 : ta > tb ? 1 : 0)).toBe(a < b ? -1 : a > b ? 1 : 0);
      }),
    );
  });
});

describe('TidGenerator', () => {
  it('uses the injected clock and clock id', () => {
    const gen = new TidGenerator({ nowMicros: () => MARCH_1_2026_NOON_US, clockId: 0 });
    expect(gen.next()).toBe('3mfyouuy62222');
  });

  it('stays strictly increasing when the clock stands still or steps back', () => {
    let now = MARCH_1_2026_NOON_US;
    const gen = new TidGenerator({ nowMicros: () => now, clockId: 7 });
    const seen: string[] = [];
    for (let i = 0; i < 50; i++) {
      if (i === 20) now -= 5_000_000;
      seen.push(gen.next());
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i]! > seen[i - 1]!).toBe(true);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.every((tid) => tidClockId(tid) === 7)).toBe(true);
  });

  it('goes above the floor (the greatest TID already on disk)', () => {
    const gen = new TidGenerator({ nowMicros: () => MARCH_1_2026_NOON_US, clockId: 1 });
    const floor = MARCH_1_2026_NOON_US + 10_000_000;
    const tid = gen.next(floor);
    expect(tidMicros(tid)).toBe(floor + 1);
  });

  it('past the end of the TID space follows what still fits, then the clock, instead of failing', () => {
    const gen = new TidGenerator({ nowMicros: () => MARCH_1_2026_NOON_US, clockId: 1 });
    // A floor one before the last timestamp (a stray record from year 2255) leaves room for one TID.
    expect(tidMicros(gen.next(MAX_TID_MICROS - 1))).toBe(MAX_TID_MICROS);
    // Nothing follows that one or this generator's last TID: the clock picks.
    expect(tidMicros(gen.next(MAX_TID_MICROS))).toBe(MARCH_1_2026_NOON_US);
    expect(tidMicros(gen.next())).toBe(MARCH_1_2026_NOON_US + 1);
    // A clock itself beyond the TID space still has no TID to give.
    expect(() => new TidGenerator({ nowMicros: () => MAX_TID_MICROS + 1, clockId: 1 }).next()).toThrow(/out of range/);
  });

  it('reads the system clock below the millisecond (spec 3.6 product rule 2) while it agrees with the wall clock', () => {
    // Both clocks pinned: in a long-lived test worker the monotonic clock may
    // have drifted a millisecond from the wall clock, and then the wall clock
    // rightly wins, so live readings cannot show the sub-millisecond digits.
    const wallMs = 1_780_000_000_123;
    const at = (fineMs: number): number => {
      const now = vi.spyOn(performance, 'now').mockReturnValue(fineMs - performance.timeOrigin);
      const wall = vi.spyOn(Date, 'now').mockReturnValue(wallMs);
      try {
        return systemMicros();
      } finally {
        now.mockRestore();
        wall.mockRestore();
      }
    };
    const agreeing = at(wallMs + 0.5);
    // A millisecond clock x 1000 would end in 000.
    expect(Math.floor(agreeing / 1000)).toBe(wallMs);
    expect(Math.abs((agreeing % 1000) - 500)).toBeLessThan(5);
    expect(at(wallMs + 5)).toBe(wallMs * 1000);
  });

  it('refuses a clock id outside the 10 bits when it is built, not at its first TID', () => {
    for (const clockId of [1024, -1, 1.5]) {
      expect(() => new TidGenerator({ nowMicros: () => MARCH_1_2026_NOON_US, clockId }), String(clockId)).toThrow(/clock id/);
    }
    expect(new TidGenerator({ nowMicros: () => MARCH_1_2026_NOON_US, clockId: 1023 }).next()).toBe(tidFromParts(MARCH_1_2026_NOON_US, 1023));
  });

  it('picks a random clock id by default', () => {
    const ids = new Set(Array.from({ length: 20 }, () => new TidGenerator().clockId));
    expect(ids.size).toBeGreaterThan(1);
    for (const id of ids) expect(id >= 0 && id < 1024).toBe(true);
  });
});
