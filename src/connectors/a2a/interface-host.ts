/**
 * Where a call to an agent card's interface connects, read from its URL the way its transport reads it.
 * No I/O here: the connector judges the host before it binds the interface (interface-reach.ts) and the
 * gRPC transport dials the target read here, so the two read one URL one way.
 */

/** `host:port`, the host a name, an IPv4 address or a bracketed IPv6 address. */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/;

/**
 * Splits a gRPC interface URL into the target grpc-js is given and whether to use TLS: an http(s) or
 * grpc(s) URL becomes `host:port` (the port defaulted by its scheme), `host:port` stays as it is (TLS on
 * port 443), and anything else is passed on as written (grpc-js's own `dns:`, `ipv4:` or `unix:` forms).
 */
export function grpcTarget(url: string): { target: string; tls: boolean } {
  const m = /^(https?|grpcs?):\/\/([^/]+)\/?$/i.exec(url.trim());
  if (m) {
    const scheme = m[1]!.toLowerCase();
    const tls = scheme === 'https' || scheme === 'grpcs';
    const hostPort = /:\d+$/.test(m[2]!) ? m[2]! : `${m[2]}:${tls ? 443 : 80}`;
    return { target: hostPort, tls };
  }
  return { target: url.trim(), tls: /:443$/.test(url.trim()) };
}

/**
 * The target grpc-js dials: a `host:port` target named as a DNS one (`dns:host:port`). Bare, grpc-js would
 * read a host that is also the name of one of its schemes (`dns:53`, `ipv4:1`) as that scheme, and
 * connect somewhere other than the host the connector judged.
 */
export function grpcDialTarget(target: string): string {
  return HOST_PORT.test(target) ? `dns:${target}` : target;
}

/**
 * The host name or address a call to the interface connects to: an http(s) URL's host for JSON-RPC and
 * HTTP+JSON; for gRPC the host of its `host:port` target (grpcTarget). null when the URL does not show it:
 * a gRPC target in a form of grpc-js's own (`dns:` with a DNS server of its choosing, `ipv4:`, `unix:`…),
 * or anything that is not a URL of its binding's kind.
 */
export function interfaceHost(url: string, binding: string): string | null {
  if (binding === 'GRPC') return splitHostPort(grpcTarget(url).target)?.host.toLowerCase() ?? null;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
    return unbracket(parsed.hostname) || null;
  } catch {
    return null;
  }
}

/** The host name of an http(s) URL (the base URL the operator gave), or null. */
export function urlHost(url: string): string | null {
  return interfaceHost(url, 'HTTP+JSON');
}

/** A `host:port` target's host (an IPv6 address without its brackets) and port; null for any other form. */
export function splitHostPort(target: string): { host: string; port: string } | null {
  const m = HOST_PORT.exec(target);
  return m ? { host: unbracket(m[1]!), port: m[2]! } : null;
}

/** A URL's host as an address or name: an IPv6 address without the brackets a URL puts round it. */
export function unbracket(host: string): string {
  return host.startsWith('[') ? host.slice(1, -1) : host;
}
