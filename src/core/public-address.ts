import ipaddr from 'ipaddr.js';

/**
 * Which addresses are public, for every place the server side sends a request to a URL someone else
 * chose: the host's push URLs (host/ssrf.ts), the plane's verifiers, and the interfaces an agent card
 * names (connectors/a2a/interface-reach.ts).
 */

/**
 * Resolves a host name to every address it has: the port through which each of those places asks DNS
 * (host/ssrf.ts systemResolver is the system's; tests pass a fake, no real DNS).
 */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

/**
 * Every address of `host`: an address stands for itself (nothing asked), a name is asked of `resolve`
 * (which throws when it does not resolve).
 */
export async function hostAddresses(
  host: string,
  resolve: Resolver,
): Promise<Array<{ address: string; family: number }>> {
  return ipaddr.isValid(host) ? [{ address: host, family: host.includes(':') ? 6 : 4 }] : resolve(host);
}

/**
 * Is `address` a public unicast address? ipaddr.js classifies every special-purpose block (RFC 6890
 * registries): only `unicast` passes, which refuses loopback 127/8 and ::1, private 10/8, 172.16/12,
 * 192.168/16, link-local 169.254/16 (the cloud metadata address 169.254.169.254) and fe80::/10, unique
 * local fc00::/7, CGNAT 100.64/10, unspecified 0.0.0.0 and ::, multicast, broadcast, reserved, and the
 * IPv6 forms that embed an IPv4 address (6to4, NAT64, Teredo). IPv4-mapped (::ffff:a.b.c.d) and
 * IPv4-compatible (::a.b.c.d, the deprecated ::/96) IPv6 addresses are judged as the IPv4 address they
 * embed: ipaddr.js calls ::7f00:1 plain `unicast`, yet a stack that still routes ::/96 reaches
 * 127.0.0.1 through it. ::1 and :: fall inside ::/96 too and stay refused as 0.0.0.1 and 0.0.0.0.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    else if (v6.parts.slice(0, 6).every((p) => p === 0))
      ip = ipaddr.fromByteArray(v6.toByteArray().slice(12));
  }
  return ip.range() === 'unicast';
}
