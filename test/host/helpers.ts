import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { STEP_METADATA_KEY } from '../../src/host/steps.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';

export type Binding = 'JSONRPC' | 'HTTP+JSON' | 'GRPC';

export function tempDb(label = 'host'): { dir: string; db: string } {
  const dir = mkdtempSync(join(tmpdir(), `taskplane-${label}-`));
  return { dir, db: `sqlite:${join(dir, 'host.db')}` };
}

/** An official @a2a-js/sdk client on the chosen binding (spec/a2a-1.0.md §2.5/2.6 wiring). */
export async function sdkClient(
  baseUrl: string,
  binding: Binding,
  polling = false,
  bearer?: string,
): Promise<Client> {
  const fetchImpl: typeof fetch | undefined = bearer
    ? (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${bearer}`);
        return fetch(input, { ...init, headers });
      }
    : undefined;
  const transportOptions = fetchImpl ? { fetchImpl } : undefined;
  // gRPC has no fetch to wrap: the key goes into the call metadata as an `authorization` service
  // parameter (plaintext channels refuse gRPC call credentials).
  const interceptors = bearer
    ? [
        {
          before: async (args: { options?: { serviceParameters?: Record<string, string> } }) => {
            args.options = {
              ...args.options,
              serviceParameters: { ...args.options?.serviceParameters, authorization: `Bearer ${bearer}` },
            };
          },
          after: async () => {},
        },
      ]
    : [];
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [
      new JsonRpcTransportFactory(transportOptions),
      new RestTransportFactory(transportOptions),
      new GrpcTransportFactory(),
    ],
    preferredTransports: [binding],
    clientConfig: { polling, ...(binding === 'GRPC' ? { interceptors } : {}) },
  });
  return new ClientFactory(options).createFromUrl(baseUrl);
}

export interface ReceivedPush {
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
  /** The body exactly as received (what a signature covers). */
  raw: string;
}

/**
 * A local webhook receiver. `status` decides the reply (e.g. 503 while "down"); every request is kept
 * and waiters are woken by events, never by sleeping.
 */
export class PushReceiver {
  readonly received: ReceivedPush[] = [];
  status = 200;
  private server: Server | undefined;
  private waiters: Array<{ check: () => boolean; resolve: () => void }> = [];

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const status = this.status;
        if (status >= 200 && status < 300) {
          const raw = Buffer.concat(chunks).toString('utf8');
          this.received.push({
            headers: req.headers,
            body: JSON.parse(raw) as Record<string, unknown>,
            raw,
          });
        }
        res
          .writeHead(status, status >= 300 && status < 400 ? { location: 'http://169.254.169.254/' } : {})
          .end();
        this.waiters = this.waiters.filter((w) => (w.check() ? (w.resolve(), false) : true));
      });
    });
    await new Promise<void>((r) => this.server!.listen(port, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  waitFor(check: () => boolean, timeoutMs = 30_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `push receiver: condition not met within ${timeoutMs} ms (${this.received.length} received)`,
            ),
          ),
        timeoutMs,
      );
      this.waiters.push({
        check,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
    this.server = undefined;
  }
}

/** Raw A2A JSON-RPC call (for wire-level checks the SDK hides). */
export async function rpc(
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as Record<string, unknown>;
}

export function userMessage(
  messageId: string,
  part: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return { messageId, role: 'ROLE_USER', parts: [part], ...extra };
}

/** The step entries (`metadata["taskplane/step"]`) of a wire task's history, in order. */
export function stepHistory(task: { history?: Array<{ metadata?: Record<string, unknown> }> } | undefined) {
  return (task?.history ?? []).flatMap((m) => {
    const entry = m.metadata?.[STEP_METADATA_KEY] as
      { name: string; outcome: string; attempts: number; startedAt: string; endedAt?: string } | undefined;
    return entry ? [entry] : [];
  });
}
