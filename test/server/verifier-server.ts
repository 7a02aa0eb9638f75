import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface VerifierAnswer {
  status: number;
  body?: unknown;
  /** Holds the answer this long (a verifier that times out). */
  delayMs?: number;
}

export interface ReceivedRequest {
  headers: Record<string, string>;
  body: string;
}

/**
 * A real acceptance verifier on a loopback port: answers from a script (the last answer repeats) and
 * keeps every request it got, headers and raw body, so a test can check the signature.
 */
export async function startVerifier(script: VerifierAnswer[]) {
  const received: ReceivedRequest[] = [];
  const waiters: Array<() => void> = [];
  const held = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      received.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      for (const w of waiters.splice(0)) w();
      const answer = script[Math.min(received.length - 1, script.length - 1)]!;
      const send = () => {
        held.delete(res);
        if (res.destroyed) return;
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      };
      held.add(res);
      if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
      else send();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/verify`,
    received,
    /** Resolves once `n` requests have arrived. */
    async requests(n: number) {
      while (received.length < n) await new Promise<void>((r) => waiters.push(r));
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
