import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { isPublicAddress, type Resolver } from '../../core/public-address.ts';
import { urlHost } from './interface-host.ts';

/** The system's DNS (the connector's own I/O; the host's push check has the same in host/ssrf.ts). */
const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/**
 * Where an agent card may send the plane. The operator names a target's base URL; the card read there
 * names the interface every call then goes to, with the job's input. A card of an agent on public
 * addresses that names an interface on a private, loopback, link-local (the cloud metadata address
 * 169.254.169.254 among them) or otherwise non-public one would have the plane post into its own network
 * for whoever wrote the card: a server-side request forgery. Such a card is refused, and so is one whose
 * interface does not show where it connects (`host`, read by interface-host.ts, is null: a gRPC target in
 * a form of grpc-js's own, such as `dns://resolver/name`, `ipv4:` or `unix:`). An agent the operator placed
 * on a private address may name private interfaces (internal agents talk to internal agents), and an
 * interface on the base URL's own host is never judged.
 *
 * Judged when the card is bound, by the addresses the names resolve to then (the connection that follows
 * resolves again: a name that answers public now and private later is not caught here).
 *
 * Returns why the interface is refused, or null.
 */
export async function privateInterfaceOfPublicAgent(
  baseUrl: string,
  interfaceUrl: string,
  host: string | null,
  resolve: Resolver = systemResolver,
): Promise<string | null> {
  const base = urlHost(baseUrl);
  if (base === null || base === host) return null;
  const baseAddresses = await addressesOf(base, resolve);
  // An agent we cannot place is not known to be public: nothing to hold it to.
  if (baseAddresses.length === 0 || !baseAddresses.every(isPublicAddress)) return null;
  if (host === null)
    return `the agent at ${base} (public) names the interface ${JSON.stringify(interfaceUrl).slice(0, 200)}, which does not show the host it connects to (give an http(s) URL, or host:port for gRPC)`;
  const targetAddresses = await addressesOf(host, resolve);
  const inside = targetAddresses.find((a) => !isPublicAddress(a));
  return inside === undefined
    ? null
    : `the agent at ${base} (public) names an interface on ${host}, which is ${
        host === inside ? 'not a public address' : `${inside}, not a public address`
      }`;
}

async function addressesOf(host: string, resolve: Resolver): Promise<string[]> {
  if (ipaddr.isValid(host)) return [host];
  try {
    return (await resolve(host)).map((a) => a.address);
  } catch {
    return [];
  }
}
