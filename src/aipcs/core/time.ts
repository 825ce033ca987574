// Server timestamps as the contract renders them: UTC, microsecond precision,
// `YYYY-MM-DDTHH:MM:SS.ffffffZ`, or without the fraction when it is zero.

export function formatTimestamp(micros: bigint): string {
  const seconds = micros / 1_000_000n;
  const fraction = micros % 1_000_000n;
  const base = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  return fraction === 0n ? `${base}Z` : `${base}.${fraction.toString().padStart(6, '0')}Z`;
}

/** Timestamp27: always six fractional digits (export artefacts, CLI receipts). */
export function formatTimestamp27(micros: bigint): string {
  const seconds = micros / 1_000_000n;
  const fraction = micros % 1_000_000n;
  return `${new Date(Number(seconds) * 1000).toISOString().slice(0, 19)}.${fraction.toString().padStart(6, '0')}Z`;
}
