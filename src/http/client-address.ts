import { isIPv4, isIPv6 } from 'node:net';

/** `::ffff:a.b.c.d` (or its hex form): an IPv4 client seen through an IPv6 socket. */
const MAPPED = /^::ffff:(?:0:)?/i;

/**
 * The address block a client is counted as: an IPv4 address as it is, an IPv6 address as its
 * /64 (`2001:db8:1:2::/64`). One subscriber, one host or one VM is handed a whole /64
 * (RFC 6177, RFC 7934), so counting each of its 2^64 addresses apart would give one client as
 * many budgets. An IPv4 address mapped into IPv6 is its IPv4 address.
 */
export function addressBlock(ip: string): string {
  if (isIPv4(ip)) return ip;
  if (!isIPv6(ip)) return ip;
  const unmapped = ip.replace(MAPPED, '');
  if (unmapped !== ip && isIPv4(unmapped)) return unmapped;
  const groups = expand(ip);
  if (mapped(groups)) {
    const [a, b] = [groups[6] ?? 0, groups[7] ?? 0];
    return `${a >> 8}.${a & 0xff}.${b >> 8}.${b & 0xff}`;
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/**
 * A client address as the request log shows it: an IPv4 address's /24 (`203.0.113.0/24`), an
 * IPv6 address's /64. Enough to tell a client's network, not to single out one of its hosts.
 */
export function addressPrefix(ip: string): string {
  const block = addressBlock(ip);
  return isIPv4(block) ? `${block.slice(0, block.lastIndexOf('.'))}.0/24` : block;
}

/** Whether a valid IPv6 address is IPv4-mapped (`::ffff:a.b.c.d`, in any spelling). */
export function isIPv4Mapped(ip: string): boolean {
  return mapped(expand(ip));
}

/** Whether eight IPv6 groups are `::ffff:` and then an IPv4 address's two. */
function mapped(groups: readonly number[]): boolean {
  return groups[5] === 0xffff && groups.every(zeroBeforeFfff);
}
const zeroBeforeFfff = (group: number, i: number) => i >= 5 || group === 0;

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted IPv4 part included). */
function expand(ip: string): number[] {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16));
}
