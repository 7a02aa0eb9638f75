import { lookup } from 'node:dns/promises';
import { hostAddresses, isPublicAddress, type Resolver } from '../core/public-address.ts';

export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

export type UrlCheck =
  { ok: true; url: URL; address: string; family: number } | { ok: false; reason: string };

/**
 * The dispatch-time webhook check (A2A 1.0 §13.2; a2a-python#1164, a2a-js#645): http(s) only, the host
 * resolved now, and EVERY resolved address public (one private answer refuses the URL, so a name with
 * a public and a loopback record cannot be used to rebind). The caller connects to the returned
 * address, not to a second lookup, closing the DNS-rebinding window. `allowPrivate` (the host's
 * `--allow-private-webhooks`) skips the address rule for tests and sidecars, never the scheme rule.
 */
export async function checkWebhookUrl(
  raw: string,
  resolve: Resolver,
  allowPrivate = false,
): Promise<UrlCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'not an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { ok: false, reason: `scheme ${url.protocol} is not allowed` };
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (host === '') return { ok: false, reason: 'no host' };
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await hostAddresses(host, resolve);
  } catch {
    return { ok: false, reason: 'host name does not resolve' };
  }
  if (addresses.length === 0) return { ok: false, reason: 'host name does not resolve' };
  if (!allowPrivate) {
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad) return { ok: false, reason: 'resolves to a private, loopback, link-local or reserved address' };
  }
  const first = addresses[0]!;
  return { ok: true, url, address: first.address, family: first.family };
}
