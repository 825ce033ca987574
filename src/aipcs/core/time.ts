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
 * The last instant a server timestamp can name, 9999-12-31T23:59:59.999999Z
 * (the artefact's Timestamp27 bound; an import may carry it).
 */
const LAST_INSTANT = 253_402_300_799_999_999n;

/** The first instant a server timestamp can name, 0001-01-01T00:00:00Z. */
const FIRST_INSTANT = -62_135_596_800_000_000n;

/**
 * `clock`'s readings kept to the instants a timestamp can name. A system
 * clock set past 9999-12-31 (or before year 1) would otherwise stamp a record
 * with a time that renders as no timestamp, and it could not be read back.
 */
export function representableClock(clock: () => bigint): () => bigint {
  return () => {
    const now = clock();
    if (now > LAST_INSTANT) return LAST_INSTANT;
    return now < FIRST_INSTANT ? FIRST_INSTANT : now;
  };
}

/**
 * The time to stamp on a change of an object whose times so far are
 * `previous` (its creation, last update, last activity): `now`, or one
 * microsecond after the latest of them when `now` is not later. Processes
 * sharing a store each read their own wall clock, and a clock may be stepped
 * back, so without this a record or service could read as updated before it
 * was created, or a later change as older than the one before it; an
 * imported object may already hold an update time before its creation time.
 * At the last instant the change shares that time: a microsecond more would
 * be year 10000, which no timestamp renders or parses.
 */
export function timeAfter(now: bigint, ...previous: bigint[]): bigint {
  const latest = previous.reduce((a, b) => (b > a ? b : a), now - 1n);
  if (now > latest) return now;
  return latest < LAST_INSTANT ? latest + 1n : latest;
}
