import http from 'node:http';

/**
 * Connections of node:http's shared agent (the one the A2A event streams use) to `url`'s server that
 * are in use now: 0 once the last response on them has ended and they are back in the keep-alive pool.
 */
export function connectionsInUse(url: string): number {
  const { hostname, port } = new URL(url);
  return (
    http.globalAgent.sockets[http.globalAgent.getName({ host: hostname, port: Number(port) })]?.length ?? 0
  );
}
