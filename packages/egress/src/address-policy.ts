import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** One parsed CIDR block, kept with its source text for logs. */
export interface Cidr {
  readonly text: string;
  readonly network: IpAddress;
  readonly prefix: number;
}

/** CIDR blocks exempted from the non-public-address rule (EGRESS_ALLOW_CIDRS). */
export type CidrList = readonly Cidr[];

/** Resolves a host name to every address it has, as IP strings. */
export type HostLookup = (host: string) => Promise<string[]>;

export type AddressVerdict = { allowed: true } | { allowed: false; range: string };

export type DestinationCheck =
  | { ok: true; host: string; addresses: string[] }
  | { ok: false; reason: 'invalid_url' | 'not_https' | 'blocked_address' | 'dns_error'; message: string };

interface BlockedRange {
  network: IpAddress;
  prefix: number;
  name: string;
}

// IANA IPv4 and IPv6 special-purpose address registries, plus multicast, the deprecated IPv6 blocks
// and the link-local/ULA addresses clouds serve instance metadata on. The most specific block wins,
// so a sub-block gives the name even when a wider block also lists it. Blocks that IANA marks globally
// reachable (AS112, AMT, the anycast services) are refused too: no webhook receiver lives there, and a
// short list of exceptions is easier to audit than a long one.
const BLOCKED: readonly BlockedRange[] = (
  [
    ['0.0.0.0/8', 'this network'],
    ['10.0.0.0/8', 'private'],
    ['100.64.0.0/10', 'carrier-grade NAT'],
    ['100.100.100.200/32', 'cloud metadata'], // Alibaba Cloud
    ['127.0.0.0/8', 'loopback'],
    ['168.63.129.16/32', 'cloud metadata'], // Azure WireServer, reachable from every Azure VM
    ['169.254.0.0/16', 'link-local'],
    ['169.254.169.254/32', 'cloud metadata'], // AWS, GCP, Azure, OCI, DigitalOcean, ...
    ['169.254.170.2/32', 'cloud metadata'], // AWS ECS task credentials
    ['172.16.0.0/12', 'private'],
    ['192.0.0.0/24', 'IETF protocol assignments'],
    ['192.0.0.192/32', 'cloud metadata'], // Oracle Cloud (legacy)
    ['192.0.2.0/24', 'documentation'],
    ['192.31.196.0/24', 'AS112'],
    ['192.52.193.0/24', 'AMT'],
    ['192.88.99.0/24', '6to4 relay anycast'],
    ['192.168.0.0/16', 'private'],
    ['192.175.48.0/24', 'AS112'],
    ['198.18.0.0/15', 'benchmarking'],
    ['198.51.100.0/24', 'documentation'],
    ['203.0.113.0/24', 'documentation'],
    ['224.0.0.0/4', 'multicast'],
    ['240.0.0.0/4', 'reserved'],
    ['255.255.255.255/32', 'broadcast'],

    ['::/128', 'unspecified'],
    ['::1/128', 'loopback'],
    ['::/96', 'IPv4-compatible IPv6'],
    ['::ffff:0:0/96', 'IPv4-mapped IPv6'],
    ['::ffff:0:0:0/96', 'IPv4-translated IPv6'],
    ['64:ff9b::/96', 'NAT64'],
    ['64:ff9b:1::/48', 'NAT64'],
    ['100::/64', 'discard-only'],
    ['100:0:0:1::/64', 'dummy prefix'],
    ['2001::/23', 'IETF protocol assignments'],
    ['2001::/32', 'Teredo'],
    ['2001:2::/48', 'benchmarking'],
    ['2001:3::/32', 'AMT'],
    ['2001:4:112::/48', 'AS112'],
    ['2001:10::/28', 'ORCHID'],
    ['2001:20::/28', 'ORCHID'],
    ['2001:30::/28', 'drone remote ID'],
    ['2001:db8::/32', 'documentation'],
    ['2002::/16', '6to4'],
    ['2620:4f:8000::/48', 'AS112'],
    ['3fff::/20', 'documentation'],
    ['5f00::/16', 'SRv6 SIDs'],
    ['fc00::/7', 'unique local'],
    ['fd00:ec2::254/128', 'cloud metadata'], // AWS
    ['fd20:ce::254/128', 'cloud metadata'], // GCP
    ['fe80::/10', 'link-local'],
    ['fec0::/10', 'site-local'],
    ['ff00::/8', 'multicast'],
  ] as const
).map(([cidr, name]) => {
  const [network, prefix] = ipaddr.parseCIDR(cidr);
  return { network, prefix, name };
});

// Only 2000::/3 is allocated as global unicast; everything else in IPv6 is unassigned or special.
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

// Special-use and de facto private DNS names (RFC 6761, RFC 8375, ICANN's .internal) that only ever
// point inside a network, refused by name before any resolver sees them.
const LOCAL_NAME_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'localdomain'];

function inBlock(address: IpAddress, network: IpAddress, prefix: number): boolean {
  return address.kind() === network.kind() && address.match(network, prefix);
}

function parseStrictIp(text: string): IpAddress | null {
  // ipaddr.js also accepts the legacy inet_aton spellings (0x7f.1, 2130706433); addresses reaching
  // the policy come from WHATWG URL or the resolver, so anything not canonical is refused.
  return isIP(text) === 0 ? null : ipaddr.parse(text);
}

/** Parses a comma-separated CIDR list such as EGRESS_ALLOW_CIDRS; throws on a malformed entry. */
export function parseCidrList(list: string): CidrList {
  return list
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((text) => {
      const slash = text.indexOf('/');
      const address = slash === -1 ? '' : text.slice(0, slash);
      if (isIP(address) === 0 || !ipaddr.isValidCIDR(text)) {
        throw new Error(
          `invalid CIDR "${text}" in allow list: expected an address and a prefix length, e.g. 127.0.0.1/32`,
        );
      }
      const [network, prefix] = ipaddr.parseCIDR(text);
      return { text, network, prefix };
    });
}

/** Decides whether an IP address may be a webhook destination; names the blocked range when not. */
export function classifyAddress(ip: string, allow: CidrList = []): AddressVerdict {
  const zone = ip.indexOf('%');
  if (zone !== -1) {
    // A zone id only has meaning on a scoped (link-local or multicast) address.
    const unscoped = classifyAddress(ip.slice(0, zone));
    return { allowed: false, range: unscoped.allowed ? 'scoped address' : unscoped.range };
  }
  const address = parseStrictIp(ip);
  if (address === null) return { allowed: false, range: 'invalid address' };
  if (allow.some((cidr) => inBlock(address, cidr.network, cidr.prefix))) return { allowed: true };

  let match: BlockedRange | undefined;
  for (const block of BLOCKED) {
    if (inBlock(address, block.network, block.prefix) && (match === undefined || block.prefix > match.prefix)) {
      match = block;
    }
  }
  if (match !== undefined) return { allowed: false, range: match.name };
  if (address.kind() === 'ipv6' && !address.match(IPV6_GLOBAL_UNICAST)) {
    return { allowed: false, range: 'not global unicast' };
  }
  return { allowed: true };
}

/** Returns the first address of the list the policy refuses, with its range, or null when all pass. */
export function findBlockedAddress(
  addresses: readonly string[],
  allow: CidrList,
): { address: string; range: string } | null {
  for (const address of addresses) {
    const verdict = classifyAddress(address, allow);
    if (!verdict.allowed) return { address, range: verdict.range };
  }
  return null;
}

/** Resolves through the system resolver (getaddrinfo), the way sockets resolve, keeping its order. */
export const systemLookup: HostLookup = async (host) => {
  const results = await dns.lookup(host, { all: true, verbatim: true });
  return results.map((result) => result.address);
};

/** Strips the brackets WHATWG URL keeps around an IPv6 literal host. */
export function hostOf(url: URL): string {
  const { hostname } = url;
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function localNameSuffix(host: string): string | null {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  return LOCAL_NAME_SUFFIXES.find((suffix) => name === suffix || name.endsWith(`.${suffix}`)) ?? null;
}

/**
 * Checks a webhook URL: https only, host not a local name, and every address it resolves to public.
 * Messages never quote the URL, which may carry credentials in its path or query.
 */
export async function checkDestinationUrl(
  url: string,
  opts: { allow: CidrList; lookup?: HostLookup },
): Promise<DestinationCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'invalid_url', message: 'the URL is not valid' };
  }
  if (parsed.protocol !== 'https:') {
    return { ok: false, reason: 'not_https', message: 'the URL must use https' };
  }
  const host = hostOf(parsed);

  if (isIP(host) !== 0) {
    const verdict = classifyAddress(host, opts.allow);
    return verdict.allowed
      ? { ok: true, host, addresses: [host] }
      : { ok: false, reason: 'blocked_address', message: `the destination address is not public (${verdict.range})` };
  }

  const suffix = localNameSuffix(host);
  if (suffix !== null) {
    return { ok: false, reason: 'blocked_address', message: `host names under .${suffix} are not public` };
  }

  let addresses: string[];
  try {
    addresses = await (opts.lookup ?? systemLookup)(host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    return {
      ok: false,
      reason: 'dns_error',
      message: `the host name could not be resolved${code ? ` (${code})` : ''}`,
    };
  }
  if (addresses.length === 0) {
    return { ok: false, reason: 'dns_error', message: 'the host name resolves to no address' };
  }
  const blocked = findBlockedAddress(addresses, opts.allow);
  if (blocked !== null) {
    return {
      ok: false,
      reason: 'blocked_address',
      message: `the host name resolves to an address that is not public (${blocked.range})`,
    };
  }
  return { ok: true, host, addresses };
}
