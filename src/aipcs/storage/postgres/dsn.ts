// The DSN shape rules of operations spec §3.3.1, in a module free of the
// driver: composition checks them before it decides to load the adapter.

/** Longest accepted DSN, in characters. */
export const MAXIMUM_DSN_LENGTH = 4096;

/** Whether a DSN passes the shape rules (non-blank, no NUL, at most 4096 characters). */
export function isAcceptableDsn(dsn: string): boolean {
  return dsn.trim().length > 0 && !dsn.includes('\u0000') && dsn.length <= MAXIMUM_DSN_LENGTH;
}
