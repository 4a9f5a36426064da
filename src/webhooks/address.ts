import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { isIPv4Mapped } from '../http/client-address.js';

/**
 * Where webhooks may go (SSRF). A URL is refused unless it is `https` (or, in development,
 * `http`), and every address its host resolves to is public: not loopback, private, shared,
 * link-local (the cloud metadata service, 169.254.169.254, among them), documentation,
 * multicast or reserved. Checked when an endpoint is saved, and again at every connection
 * (`guardedLookup`), since a name can resolve elsewhere by then (DNS rebinding).
 *
 * Development allows loopback, and only loopback, besides (the README lists the same:
 * docs/decisions/0068-fail-closed-and-private-files.md): 127.0.0.0/8 in any form WHATWG's URL
 * parser reads as it (`127.1`, `2130706433`), `::1`, `::ffff:127.0.0.0/104` (BlockList matches
 * a mapped address against the IPv4 rules), and any name all of whose addresses are those. The
 * other IPv6 forms of an IPv4 address (`::127.0.0.1`, `::ffff:0:7f00:1`), `0.0.0.0`, `::` and
 * every private range stay refused.
 */
const REFUSED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // Unspecified, loopback, and IPv4-compatible (deprecated; `::127.0.0.1` is loopback).
  ['::', 96],
  // IPv4-translated (SIIT, RFC 6145 `::ffff:0:a.b.c.d`).
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv6');
}
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

export interface AddressPolicy {
  /** Development: `http` and loopback addresses (LOOPBACK, mapped ones too) allowed. */
  allowLoopback: boolean;
}

/** Why an address may not be connected to, or undefined when it may (IPv4 in IPv6: see above). */
export function refusedAddress(address: string, policy: AddressPolicy): string | undefined {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (policy.allowLoopback && LOOPBACK.check(address, type)) return undefined;
  // IPv4-mapped (`::ffff:a.b.c.d`): no public host is reached so; refused whole, whatever the
  // IPv4 address, rather than trusting every reader to map it back. (Not a BlockList subnet:
  // BlockList checks IPv4 addresses as mapped ones, so it would refuse every IPv4 address.)
  if (REFUSED.check(address, type) || (family === 6 && isIPv4Mapped(address))) {
    return `${address} is a loopback, private, link-local or reserved address`;
  }
  return undefined;
}

/** The first of `addresses` that may not be connected to, and why. */
function firstRefused(
  addresses: readonly LookupAddress[],
  policy: AddressPolicy,
): { address: string; refused: string } | undefined {
  for (const { address } of addresses) {
    const refused = refusedAddress(address, policy);
    if (refused) return { address, refused };
  }
  return undefined;
}

function lookupAll(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    );
  });
}

/** The host of a URL as a name or a bare IP address (no IPv6 brackets). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * What can be said of a webhook URL without resolving its host: the URL to send to, or why
 * it is refused (not absolute, another scheme, credentials in it, a refused IP address).
 */
export function refusedTarget(
  text: string,
  policy: AddressPolicy,
): { url: URL; refused?: undefined } | { refused: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { refused: 'it is not an absolute URL' };
  }
  if (url.protocol !== 'https:' && !(policy.allowLoopback && url.protocol === 'http:')) {
    return { refused: policy.allowLoopback ? 'it must be http or https' : 'it must be https' };
  }
  if (url.username || url.password) return { refused: 'it must not hold credentials' };
  // An address in the URL is not looked up, by us or at connection: checked here.
  const host = hostOf(url);
  const refused = isIP(host) ? refusedAddress(host, policy) : undefined;
  return refused ? { refused } : { url };
}

/**
 * Why a webhook URL is refused, or undefined when it is allowed: `refusedTarget`, then every
 * address its host resolves to now.
 */
export async function refusedUrl(text: string, policy: AddressPolicy): Promise<string | undefined> {
  const target = refusedTarget(text, policy);
  if (target.refused !== undefined) return target.refused;
  const host = hostOf(target.url);
  if (isIP(host)) return undefined;
  const addresses = await lookupAll(host).catch(() => []);
  if (addresses.length === 0) return `its host ${host} does not resolve`;
  const first = firstRefused(addresses, policy);
  return (
    first && `its host ${host} resolves to ${first.refused.replace(/^\S+ /, `${first.address} (`)})`
  );
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http(s).request that resolves as dns.lookup does, then refuses to connect to
 * any address `refusedAddress` refuses: the check at connection time.
 */
export function guardedLookup(policy: AddressPolicy) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    lookupAll(hostname).then(
      (addresses) => {
        const fail = (code: string, message: string) =>
          callback(Object.assign(new Error(message), { code }), '');
        const refused = firstRefused(addresses, policy);
        if (refused) return fail('EADDRREFUSED', `refused to connect: ${refused.refused}`);
        const first = addresses[0];
        if (!first) return fail('ENOTFOUND', `${hostname} does not resolve`);
        if (options.all) callback(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}
