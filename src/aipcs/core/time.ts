// Server timestamps as the contract renders them: UTC, microsecond precision,
// `YYYY-MM-DDTHH:MM:SS.ffffffZ`, or without the fraction when it is zero.

/** Whole seconds and the microseconds past them (0..999999), also before 1970. */
function split(micros: bigint): { base: string; fraction: bigint } {
  let seconds = micros / 1_000_000n;
  let fraction = micros % 1_000_000n;
  if (fraction < 0n) {
    seconds -= 1n;
    fraction += 1_000_000n;
  }
  return { base: new Date(Number(seconds) * 1000).toISOString().slice(0, 19), fraction };
}

export function formatTimestamp(micros: bigint): string {
  const { base, fraction } = split(micros);
  return fraction === 0n ? `${base}Z` : `${base}.${fraction.toString().padStart(6, '0')}Z`;
}

/** Timestamp27: always six fractional digits (export artefacts, CLI receipts). */
export function formatTimestamp27(micros: bigint): string {
  const { base, fraction } = split(micros);
  return `${base}.${fraction.toString().padStart(6, '0')}Z`;
}

/**
 * The time to stamp on a change that follows one stamped `previous`: `now`,
 * or one microsecond after `previous` when `now` is not later. Processes
 * sharing a store each read their own wall clock, and a clock may be stepped
 * back, so without this a record or service could read as updated before it
 * was created, or a later change as older than the one before it.
 */
export function timeAfter(now: bigint, previous: bigint): bigint {
  return now > previous ? now : previous + 1n;
}
