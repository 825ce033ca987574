// Whether a resolved profile can run on this host (operations spec §2.8):
// SQLite needs Linux or macOS and a SQLite library ≥ 3.51.3. The platform and
// the detected version are inputs, so this stays pure; the caller asks the
// driver for its version. There is no override.

export type SqliteVersion = readonly [major: number, minor: number, patch: number];

const MINIMUM: SqliteVersion = [3, 51, 3];

/**
 * Reads `x.y.z` (an optional fourth component is ignored) from the driver's
 * version text. Anything else is "unreadable" and gives null, so no odd text
 * ever reaches a report or message.
 */
export function parseSqliteVersion(text: string | null): SqliteVersion | null {
  if (text === null) return null;
  const match = /^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})(?:\.[0-9]{1,3})?$/.exec(text);
  if (match === null) return null;
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

export function formatSqliteVersion(version: SqliteVersion): string {
  return version.join('.');
}

export function isSupportedSqliteVersion(version: SqliteVersion | null): boolean {
  if (version === null) return false;
  for (let i = 0; i < 3; i++) {
    const have = version[i] ?? 0;
    const need = MINIMUM[i] ?? 0;
    if (have !== need) return have > need;
  }
  return true;
}

/** Only the POSIX platforms the SQLite location policy is certified for. */
export function isSupportedSqlitePlatform(platform: NodeJS.Platform): boolean {
  return platform === 'linux' || platform === 'darwin';
}
