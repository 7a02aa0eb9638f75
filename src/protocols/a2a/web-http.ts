import { readLimitedBody } from '../http-body.ts';
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
    return readLimitedBody(this.req, limit, () => payloadTooLarge(limit));
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
