// Value rules of the Streamable HTTP settings (operations spec §2.5.4): path,
// Host and Origin allow-list entries, list shape and the default Host list.
// Pure predicates; the caller maps any failure to the `streamable_http` issue.

import { parseIpv6 } from './ip-address.js';
import { containsWhitespace, hasSurroundingWhitespace, isAscii } from './text-rules.js';
import { codePointLength } from '../../common/code-points.js';

export const MAX_LIST_ENTRIES = 16;
const MAX_LIST_ENTRY_LENGTH = 255;
const MAX_PATH_LENGTH = 256;

/** `/` first, ≤ 256 ASCII characters, no whitespace, and none of `//`, `/.`, `?`, `#`. */
export function isValidHttpPath(path: string): boolean {
  return (
    path.startsWith('/') &&
    path.length <= MAX_PATH_LENGTH &&
    isAscii(path) &&
    !containsWhitespace(path) &&
    !path.includes('//') &&
    !path.includes('/.') &&
    !path.includes('?') &&
    !path.includes('#')
  );
}

// Letters, digits, dots and hyphens, starting with a letter or digit and
// ending with one or with the dot of a fully qualified name (`example.com.`);
// as long as a list entry may be (255). §2.5.4 gives the entry's length but
// no grammar for `name`, so no DNS label or 253-character rule is added.
const NAME = '[a-z0-9](?:[a-z0-9.-]{0,253}[a-z0-9.])?';
const BRACKETED = '\\[([0-9a-f:.]+)\\]';
const HOST_ENTRY = new RegExp(`^(?:${NAME}|${BRACKETED})(?::([1-9][0-9]{0,4}|\\*))?$`, 'i');
const ORIGIN_ENTRY = new RegExp(`^https?://(?:${NAME}|${BRACKETED})(?::([1-9][0-9]{0,4}))?$`, 'i');

function isValidPort(text: string | undefined): boolean {
  return text === undefined || text === '*' || Number(text) <= 65535;
}

function isValidBracketed(inner: string | undefined): boolean {
  // A bracketed host must be a real IPv6 literal (without a zone).
  return inner === undefined || parseIpv6(inner) !== null;
}

/** `name` or `[ipv6]`, then optionally `:port` (1–65535, no leading zero) or `:*`; case-insensitive. */
export function isValidHostEntry(entry: string): boolean {
  const match = HOST_ENTRY.exec(entry);
  return match !== null && isValidBracketed(match[1]) && isValidPort(match[2]);
}

/** `http://` or `https://`, a host as above, optionally `:port`; no path, slash or wildcard. */
export function isValidOriginEntry(entry: string): boolean {
  const match = ORIGIN_ENTRY.exec(entry);
  return match !== null && isValidBracketed(match[1]) && isValidPort(match[2]);
}

/**
 * 1–16 entries, each non-empty ASCII ≤ 255 characters without surrounding
 * whitespace, no duplicates. Host and Origin entries are case-insensitive
 * (and matched so), so entries differing only in letter case are duplicates.
 */
export function isValidListShape(entries: readonly string[]): boolean {
  if (entries.length < 1 || entries.length > MAX_LIST_ENTRIES) return false;
  for (const entry of entries) {
    if (entry.length === 0 || codePointLength(entry) > MAX_LIST_ENTRY_LENGTH || !isAscii(entry) || hasSurroundingWhitespace(entry)) {
      return false;
    }
  }
  return new Set(entries.map((entry) => entry.toLowerCase())).size === entries.length;
}

/** `<host>:<port>` (IPv6 bracketed), plus `localhost:<port>` when the host is 127.0.0.1 or ::1. */
export function defaultAllowedHosts(host: string, port: number): string[] {
  const shown = host.includes(':') ? `[${host}]` : host;
  const hosts = [`${shown}:${port}`];
  if (host === '127.0.0.1' || host === '::1') hosts.push(`localhost:${port}`);
  return hosts;
}
