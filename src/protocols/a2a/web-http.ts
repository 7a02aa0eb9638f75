import { payloadTooLarge } from './errors.ts';
import type { HttpReply, HttpRequest } from './http-common.ts';
import { sseReadableStream } from './sse.ts';

/**
 * A binding core as a web-standard request handler: a fetch `Request` in, a `Response` out. What
 * `jsonRpcBinding` and `restBinding` are; the host serves through the node:http adapter
 * (`node-http.ts`, `nodeListener`) instead, which builds neither.
 */
export function webHandler(
  core: (req: HttpRequest) => Promise<HttpReply>,
): (req: Request) => Promise<Response> {
  return async (req) => webResponse(await core(new WebHttpRequest(req)));
}

class WebHttpRequest implements HttpRequest {
  #url: URL | undefined;

  constructor(private readonly req: Request) {}

  get method(): string {
    return this.req.method;
  }

  get headers(): Headers {
    return this.req.headers;
  }

  get path(): string {
    return this.url().pathname;
  }

  get searchParams(): URLSearchParams {
    return this.url().searchParams;
  }

  text(limit: number): Promise<string> {
    return readBodyLimited(this.req, limit);
  }

  get signal(): AbortSignal {
    return this.req.signal;
  }

  private url(): URL {
    return (this.#url ??= new URL(this.req.url));
  }
}

function webResponse(reply: HttpReply): Response {
  if (reply.kind === 'json')
    return new Response(reply.body, { status: reply.status, headers: reply.headers });
  return new Response(sseReadableStream(reply.frames, reply.sse), { status: 200, headers: reply.headers });
}

/**
 * Reads a request body up to `limit` bytes, refusing early on Content-Length and while streaming, so an
 * oversized body never sits in memory whole. Throws PayloadTooLargeError.
 */
async function readBodyLimited(req: Request, limit: number): Promise<string> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw payloadTooLarge(limit);
  // A declared length within the limit can be read whole (the HTTP parser rejects a body longer than
  // its Content-Length).
  if (Number.isFinite(declared)) return req.text();
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw payloadTooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
