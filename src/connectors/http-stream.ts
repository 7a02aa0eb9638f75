import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { ResponseBody } from './body-reader.ts';

/**
 * An HTTP answer as the connectors read it: a fetch Response fits, and so does openStream's.
 */
export interface HttpAnswer {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  /** The body as it arrives (read as SSE by sse-reader.ts); null when there is none. */
  readonly body: ResponseBody | null;
  /** The address the answer came from (node:http's socket); absent where it is not known (fetch). */
  readonly peerAddress?: string | null;
}

export interface StreamRequest {
  method: string;
  headers: Record<string, string>;
  body?: string | undefined;
  /**
   * How each connection looks its host up, asked of an address too (node:net looks up names only), and
   * again at every redirect hop; a lookup that fails refuses the request before anything is sent. Its
   * connections are pooled apart from the others. @default the system's, addresses not asked
   */
  lookup?: LookupFunction | undefined;
}

/**
 * Hops a request follows, as fetch would: on 307/308 (the redirects that keep method and body), and for
 * a GET on 301/302/303 too (a POST would become a GET there: left to the caller).
 */
const MAX_REDIRECTS = 5;

/**
 * Opens a long-lived HTTP response (an event stream) with node:http rather than fetch. A stream is held
 * open for the whole life of a remote task, so a plane following 1,000 tasks holds 1,000 of them: a
 * fetch Response keeps WHATWG stream machinery per request (its ReadableStream, controllers, promise
 * queues) that stays live as long as the stream does, several times what a node:http response keeps,
 * and copying that live state is what the collector's young-generation pauses spend their time on
 * while streams are being opened. Calls that answer at once keep using fetch.
 *
 * Resolves with the response head; aborting `signal` destroys the request, or the body while it is
 * still arriving (its reader then throws). The body is an IncomingMessage, read as an async iterable of Buffers.
 */
export async function openStream(url: string, req: StreamRequest, signal: AbortSignal): Promise<HttpAnswer> {
  let target = new URL(url);
  for (let hop = 0; ; hop++) {
    const res = await requestOnce(target, req, signal);
    const location = res.headers.location;
    if (location && hop < MAX_REDIRECTS && follows(res.statusCode ?? 0, req.method)) {
      res.resume();
      target = new URL(location, target);
      continue;
    }
    return new NodeAnswer(res);
  }
}

function follows(status: number, method: string): boolean {
  return status === 307 || status === 308 || (method === 'GET' && status >= 301 && status <= 303);
}

async function requestOnce(url: URL, req: StreamRequest, signal: AbortSignal): Promise<IncomingMessage> {
  const send = url.protocol === 'https:' ? httpsRequest : url.protocol === 'http:' ? httpRequest : null;
  if (!send) throw new TypeError(`unsupported URL scheme ${url.protocol}`);
  if (signal.aborted) throw abortError(signal);
  const { lookup } = req;
  if (lookup && isIP(url.hostname.replace(/^\[|\]$/g, '')) !== 0) {
    await lookupAll(lookup, url.hostname);
    if (signal.aborted) throw abortError(signal);
  }
  return new Promise<IncomingMessage>((resolve, reject) => {
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
    // The signal is not handed to node:http: aborted after the response ended, it destroys a socket
    // already let go of (back in the keep-alive pool, or closing) that has no 'error' listener any more,
    // and the AbortError is thrown as uncaught. An abort here stops only what is still running.
    let response: IncomingMessage | undefined;
    const onAbort = () => {
      const err = abortError(signal);
      if (!response) r.destroy(err);
      else if (!response.complete) response.destroy(err);
    };
    const options: RequestOptions = lookup
      ? { method: req.method, headers, lookup, agent: url.protocol === 'https:' ? guardedHttps : guardedHttp }
      : { method: req.method, headers };
    const r = send(url, options, (res) => {
      response = res;
      // Errors of a response nobody is reading at the moment reach its reader at its next read; without
      // a listener here they would be thrown as uncaught.
      res.on('error', ignore);
      res.once('close', () => signal.removeEventListener('abort', onAbort));
      resolve(res);
    });
    signal.addEventListener('abort', onAbort, { once: true });
    // Not once: a request can fail more than once, and an 'error' without a listener is thrown as
    // uncaught. Only the first one settles the promise.
    r.on('error', (err) => {
      if (!response) signal.removeEventListener('abort', onAbort);
      reject(err);
    });
    r.end(req.body);
  });
}

/** Every address a node:net lookup gives `host` (it rejects with the lookup's own error). */
export function lookupAll(lookup: LookupFunction, host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    lookup(host, { all: true }, (err, found, family) =>
      err ? reject(err) : resolve(Array.isArray(found) ? found : [{ address: found, family: family ?? 4 }]),
    ),
  );
}

/**
 * Keep-alive pools for requests with a lookup of their own: a socket in the shared pool may have been
 * connected by a lookup other than theirs, to an address theirs would refuse.
 */
const guardedHttp = new HttpAgent({ keepAlive: true });
const guardedHttps = new HttpsAgent({ keepAlive: true });

function abortError(signal: AbortSignal): Error {
  return new Error('aborted', { cause: signal.reason });
}

const ignore = (): void => undefined;

class NodeAnswer implements HttpAnswer {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  readonly peerAddress: string | null;

  constructor(readonly body: IncomingMessage) {
    this.status = body.statusCode ?? 0;
    this.peerAddress = body.socket?.remoteAddress ?? null;
    this.ok = this.status >= 200 && this.status < 300;
    const raw: IncomingHttpHeaders = body.headers;
    this.headers = {
      get: (name) => {
        const v = raw[name.toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
      },
    };
  }
}
