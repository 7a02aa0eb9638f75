import { JsonTooDeepError, parseBoundedJson } from '../../core/bounded-json.ts';
import type { Logger } from '../../core/logger.ts';
import { readLimitedBody } from '../../protocols/http-body.ts';
import type { Authenticate } from '../../protocols/a2a/handler.ts';
import { decodeMessage, peekId } from '../../protocols/mcp/decode.ts';
import { resultResponse } from '../../protocols/mcp/encode.ts';
import {
  McpError,
  errorResponse,
  internalError,
  invalidRequest,
  parseError,
} from '../../protocols/mcp/errors.ts';
import { checkHeaders } from '../../protocols/mcp/headers.ts';
import type { JsonRpcId } from '../../protocols/mcp/types.ts';
import { RpcFailure, type McpService } from '../mcp-service.ts';

export interface McpHttpOptions {
  service: McpService;
  authenticate: Authenticate;
  logger: Logger;
  maxBodyBytes: number;
  maxJsonDepth: number;
  /** SSE comment interval on a subscriptions/listen stream. */
  keepAliveMs: number;
}

/** The MCP endpoint path; `/mcp/{tenant}` serves the same caller's separate tenant space. */
export const MCP_PATH = '/mcp';

class BodyTooLarge extends Error {}

/**
 * Streamable HTTP for MCP, stateless in both eras (no `Mcp-Session-Id`: a 2026-07-28 server has
 * none, and a 2025 client that gets none simply sends none). Order: method, authentication, body,
 * JSON, the header rules (protocols/mcp/headers.ts: -32020, -32022), the JSON-RPC envelope, then the
 * service. Each error is answered with the HTTP status of the MCP error table
 * (protocols/mcp/errors.ts) and the request's id when it could be read.
 */
export function mcpHttp(o: McpHttpOptions): (req: Request, tenant: string) => Promise<Response> {
  return async (req, tenant) => {
    if (req.method !== 'POST') {
      // Neither the old GET stream nor DELETE of a session exists on a stateless server.
      return new Response(null, { status: 405, headers: { allow: 'POST' } });
    }
    let owner: string;
    try {
      owner = await o.authenticate(req.headers);
    } catch {
      return json(
        401,
        { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Unauthorized' } },
        { 'www-authenticate': 'Bearer' },
      );
    }
    let id: JsonRpcId | null = null;
    let legacy = false;
    try {
      let text: string;
      try {
        text = await readLimitedBody(req, o.maxBodyBytes, () => new BodyTooLarge());
      } catch (err) {
        if (err instanceof BodyTooLarge)
          return json(
            413,
            errorResponse(null, invalidRequest('body', `larger than ${o.maxBodyBytes} bytes`)),
          );
        throw err;
      }
      let body: unknown;
      try {
        body = parseBoundedJson(text, o.maxJsonDepth);
      } catch (err) {
        if (err instanceof JsonTooDeepError) throw invalidRequest('body', err.message);
        throw parseError('body is not valid JSON');
      }
      id = peekId(body);
      const headers = checkHeaders(req.headers, body);
      if (!headers.ok) throw headers.error;
      legacy = headers.era === 'legacy';
      const message = decodeMessage(body);
      if (message.kind === 'notification') return new Response(null, { status: 202 });
      id = message.id;
      // Aborted when the client goes away or a stream it reads is cancelled.
      const gone = new AbortController();
      const onAbort = () => gone.abort();
      if (req.signal.aborted) gone.abort();
      else req.signal.addEventListener('abort', onAbort, { once: true });
      const signal = gone.signal;
      const answer = await o.service.handle(message.method, message.params, {
        owner,
        tenant,
        era: headers.era,
        protocolVersion: headers.protocolVersion,
        signal,
        id: message.id,
        acceptsStream: (req.headers.get('accept') ?? '').includes('text/event-stream'),
      });
      if ('result' in answer) {
        req.signal.removeEventListener('abort', onAbort);
        return json(200, resultResponse(message.id, answer.result));
      }
      return sse(answer.stream, o.keepAliveMs, () => gone.abort());
    } catch (err) {
      if (err instanceof McpError) {
        // 2025-11-25 Streamable HTTP answers a JSON-RPC error to a well-formed request with 200 (a client
        // such as the v1 SDK reads any other status as a transport failure); the error table's statuses
        // are 2026-07-28's.
        const status =
          legacy && err.code !== 'ParseError' && err.code !== 'InvalidRequest' ? 200 : err.httpStatus;
        return json(status, errorResponse(id, err));
      }
      if (err instanceof RpcFailure) return json(200, { jsonrpc: '2.0', id, error: err.error });
      o.logger.error({ err }, 'MCP request failed');
      return json(500, errorResponse(id, internalError()));
    }
  };
}

function json(status: number, body: object, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** One `message` event per JSON-RPC message, a comment every keepAliveMs; the end stops the source. */
function sse(source: AsyncIterable<object>, keepAliveMs: number, stop: () => void): Response {
  const encoder = new TextEncoder();
  const iterator = source[Symbol.asyncIterator]();
  let timer: ReturnType<typeof setInterval> | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(': keep-alive\n\n'));
        } catch {
          clearInterval(timer);
        }
      }, keepAliveMs);
    },
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.done) {
          clearInterval(timer);
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify(next.value)}\n\n`));
      } catch (err) {
        clearInterval(timer);
        controller.error(err);
      }
    },
    async cancel() {
      clearInterval(timer);
      stop();
      await iterator.return?.(undefined);
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  });
}
