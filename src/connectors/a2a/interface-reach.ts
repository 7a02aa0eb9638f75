import { lookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { TaskplaneError } from '../../core/errors.ts';
import { hostAddresses, isPublicAddress, type Resolver } from '../../core/public-address.ts';
import { unbracket, urlHost } from './interface-host.ts';

/** The system's DNS (the connector's own I/O; the host's push check has the same in host/ssrf.ts). */
const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Why the interface is refused, or how each connection for it must look its host up. */
export type Reach = { refused: string } | { lookup: LookupFunction | null };

/**
 * Whether the agent is on public addresses: judged by the address its card came from (`from`, what the
 * card read's connection reached), else, where that is not known (a given fetch read the card), by what
 * the base URL's host resolves to now, every address public. An agent that cannot be placed is not known
 * to be public. An IPv4-mapped address is judged as the IPv4 one.
 */
export async function agentIsPublic(
  baseUrl: string,
  from: string | null,
  resolve: Resolver = systemResolver,
): Promise<boolean> {
  if (from !== null) return isPublicAddress(from);
  const base = urlHost(baseUrl);
  if (base === null) return false;
  const addresses = await addressesOf(base, resolve);
  return addresses.length > 0 && addresses.every(isPublicAddress);
}

/**
 * Where an agent card may send the plane. The operator names a target's base URL; the card read there
 * names the interface every call then goes to, with the job's input. A card of an agent on public
 * addresses (`agentPublic`, agentIsPublic) that names an interface on a private, loopback, link-local (the
 * cloud metadata address 169.254.169.254 among them) or otherwise non-public one would have the plane post
 * into its own network for whoever wrote the card: a server-side request forgery. Such a card is refused,
 * and so is one whose interface does not show where it connects (`host`, read by interface-host.ts, is
 * null: a gRPC target in a form of grpc-js's own, such as `dns://resolver/name`, `ipv4:` or `unix:`). An
 * agent the operator placed on a private address may name private interfaces (internal agents talk to
 * internal agents), and an interface on the base URL's own host is not judged.
 *
 * The names are judged by what they resolve to now; a name can answer public now and private later (DNS
 * rebinding), or the agent can redirect a call. So a public agent gets `lookup` for every connection made
 * for its interface (publicOnlyLookup): each connection resolves the host again and goes only to public
 * addresses. An agent not found public gets `lookup: null` (connections resolve as usual).
 */
export async function interfaceReach(
  agentPublic: boolean,
  baseUrl: string,
  interfaceUrl: string,
  host: string | null,
  resolve: Resolver = systemResolver,
): Promise<Reach> {
  if (!agentPublic) return { lookup: null };
  const base = urlHost(baseUrl);
  const guarded = { lookup: publicOnlyLookup(resolve) };
  if (host !== null && host === base) return guarded;
  if (host === null)
    return {
      refused: `the agent at ${base} (public) names the interface ${JSON.stringify(interfaceUrl).slice(0, 200)}, which does not show the host it connects to (give an http(s) URL, or host:port for gRPC)`,
    };
  const inside = (await addressesOf(host, resolve)).find((a) => !isPublicAddress(a));
  return inside === undefined
    ? guarded
    : {
        refused: `the agent at ${base} (public) names an interface on ${host}, which is ${
          host === inside ? 'not a public address' : `${inside}, not a public address`
        }`,
      };
}

/**
 * A node:net lookup that resolves through `resolve` at the moment of connecting and refuses a host any of
 * whose addresses is not public (one private answer refuses it, so a name with a public and a loopback
 * record cannot be used to rebind), as the host's push URLs are judged (host/ssrf.ts). Given an address
 * rather than a name it judges that address (node:net does not look addresses up, so the caller asks).
 * The refusal is `permission_denied`, retryable, with nothing sent: the job is tried again, and a card
 * read again later judges the agent afresh.
 */
export function publicOnlyLookup(resolve: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    const host = unbracket(hostname);
    hostAddresses(host, resolve).then(
      (addresses) => {
        const inside = addresses.find((a) => !isPublicAddress(a.address));
        const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = addresses.filter((a) => wanted === 0 || a.family === wanted);
        if (inside !== undefined) {
          const err = new TaskplaneError(
            'permission_denied',
            `remote ${host} is ${host === inside.address ? 'not a public address' : `at ${inside.address}, not a public address`}, and its agent is on public ones (the target's allowPrivateInterfaces permits it)`,
            { retryable: true, details: { notSent: true } },
          );
          callback(err as unknown as NodeJS.ErrnoException, '', 0);
          return;
        }
        if (usable.length === 0) {
          callback(notFound(host), '', 0);
          return;
        }
        if (options.all) (callback as unknown as (e: null, a: typeof usable) => void)(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: unknown) => callback(notFound(host, err), '', 0),
    );
  };
}

function notFound(host: string, cause?: unknown): NodeJS.ErrnoException {
  return Object.assign(new Error(`remote ${host} does not resolve`, { cause }), { code: 'ENOTFOUND' });
}

async function addressesOf(host: string, resolve: Resolver): Promise<string[]> {
  try {
    return (await hostAddresses(host, resolve)).map((a) => a.address);
  } catch {
    return [];
  }
}
