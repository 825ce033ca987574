// Literal IP addresses for the HTTP bind host (operations spec §2.5.4): strict
// parsing with the reference's rules (Python's ipaddress), RFC 5952 text and
// the loopback test. Pure; host names are never resolved.

export interface IpLiteral {
  readonly version: 4 | 6;
  /** Normalised text: dotted quad, or compressed lowercase IPv6 (plus `%zone` if given). */
  readonly text: string;
  readonly isLoopback: boolean;
}

/** Parses an IPv4 or IPv6 literal; null if the text is anything else (including a host name). */
export function parseIpLiteral(text: string): IpLiteral | null {
  const v4 = parseIpv4(text);
  if (v4 !== null) return { version: 4, text: v4.join('.'), isLoopback: v4[0] === 127 };
  const v6 = parseIpv6(text);
  if (v6 === null) return null;
  return { version: 6, text: formatIpv6(v6.hextets) + (v6.zone === null ? '' : `%${v6.zone}`), isLoopback: isIpv6Loopback(v6.hextets) };
}

/** Four decimal octets, no leading zeros (Python ≥ 3.9.5 refuses them as ambiguous). */
export function parseIpv4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const octets: number[] = [];
  for (const part of parts) {
    if (!/^[0-9]{1,3}$/.test(part)) return null;
    if (part.length > 1 && part.startsWith('0')) return null;
    const value = Number(part);
    if (value > 255) return null;
    octets.push(value);
  }
  return octets;
}

interface Ipv6Parts {
  readonly hextets: number[];
  readonly zone: string | null;
}

/** Eight 16-bit groups with at most one `::`, an optional trailing dotted quad and an optional `%zone`. */
export function parseIpv6(text: string): Ipv6Parts | null {
  if (text.includes('/')) return null;
  let address = text;
  let zone: string | null = null;
  const percent = text.indexOf('%');
  if (percent !== -1) {
    zone = text.slice(percent + 1);
    address = text.slice(0, percent);
    if (zone.length === 0 || zone.includes('%')) return null;
  }
  const parts = address.split(':');
  if (parts.length < 3) return null;
  const tail: number[] = [];
  const last = parts[parts.length - 1] ?? '';
  if (last.includes('.')) {
    const v4 = parseIpv4(last);
    if (v4 === null) return null;
    parts.pop();
    tail.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
  }
  const groups = [...parts.map((part) => part), ...tail.map((value) => value.toString(16))];
  if (groups.length > 9) return null;

  let skipIndex: number | null = null;
  for (let i = 1; i < groups.length - 1; i++) {
    if (groups[i] === '') {
      if (skipIndex !== null) return null;
      skipIndex = i;
    }
  }
  let head: string[];
  let rest: string[];
  if (skipIndex !== null) {
    head = groups.slice(0, skipIndex);
    rest = groups.slice(skipIndex + 1);
    if (head[0] === '') {
      if (head.length !== 1) return null;
      head = [];
    }
    if (rest[rest.length - 1] === '') {
      if (rest.length !== 1) return null;
      rest = [];
    }
    if (head.length + rest.length > 7) return null;
  } else {
    if (groups.length !== 8 || groups[0] === '' || groups[groups.length - 1] === '') return null;
    head = groups;
    rest = [];
  }
  const parseGroup = (group: string): number | null => (/^[0-9a-fA-F]{1,4}$/.test(group) ? parseInt(group, 16) : null);
  const hextets: number[] = [];
  for (const group of head) {
    const value = parseGroup(group);
    if (value === null) return null;
    hextets.push(value);
  }
  const lowValues: number[] = [];
  for (const group of rest) {
    const value = parseGroup(group);
    if (value === null) return null;
    lowValues.push(value);
  }
  while (hextets.length + lowValues.length < 8) hextets.push(0);
  hextets.push(...lowValues);
  return { hextets, zone };
}

function isIpv4Mapped(hextets: readonly number[]): boolean {
  return hextets.slice(0, 5).every((value) => value === 0) && hextets[5] === 0xffff;
}

function isIpv6Loopback(hextets: readonly number[]): boolean {
  if (isIpv4Mapped(hextets)) return (hextets[6] ?? 0) >> 8 === 127;
  return hextets.slice(0, 7).every((value) => value === 0) && hextets[7] === 1;
}

/** RFC 5952: lowercase, no leading zeros, the longest (first) run of ≥ 2 zero groups as `::`; IPv4-mapped in dotted form. */
export function formatIpv6(hextets: readonly number[]): string {
  if (isIpv4Mapped(hextets)) {
    const high = hextets[6] ?? 0;
    const low = hextets[7] ?? 0;
    return `::ffff:${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  let bestStart = -1;
  let bestLength = 0;
  let runStart = -1;
  let runLength = 0;
  hextets.forEach((value, index) => {
    if (value === 0) {
      if (runStart === -1) runStart = index;
      runLength++;
      if (runLength > bestLength) {
        bestStart = runStart;
        bestLength = runLength;
      }
    } else {
      runStart = -1;
      runLength = 0;
    }
  });
  const groups = hextets.map((value) => value.toString(16));
  if (bestLength < 2) return groups.join(':');
  const before = groups.slice(0, bestStart).join(':');
  const after = groups.slice(bestStart + bestLength).join(':');
  return `${before}::${after}`;
}
