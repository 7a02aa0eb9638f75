import { TaskplaneError } from '../../core/errors.ts';
import type { A2AMethod, TaskPushNotificationConfig } from '../../protocols/a2a/types.ts';
import {
  pushConfigFromProto,
  pushConfigToProto,
  responseFromProto,
  sendRequestToProto,
  taskFromProto,
} from '../../protocols/a2a/v03/rest-wire.ts';
import { A2A_V03_VERSION } from '../../protocols/a2a/v03/wire.ts';
import { isSse, readJson, send, sseFrames, type A2ATransport, type TransportOptions } from './transports.ts';
import { a2aWireError } from './wire-errors.ts';
import { type Obj } from '../../core/json-object.ts';

/**
 * A2A 0.3 over HTTP+JSON behind the connector's A2ATransport: routes under `/v1` of the interface URL
 * (`/v1/message:send`, `GET /v1/tasks/{id}`, `POST /v1/tasks/{id}:cancel`, `GET
 * /v1/tasks/{id}:subscribe`, `/v1/tasks/{id}/pushNotificationConfigs`), bodies in the 0.3 ProtoJSON
 * (protocols/a2a/v03/rest-wire.ts), `application/json` both ways, errors as a bare
 * `{code, message, data}`. No ListTasks: 0.3 HTTP+JSON had none.
 */

const enc = encodeURIComponent;

interface V03Route {
  method: 'GET' | 'POST';
  path: string;
  body?: Obj;
  decode: (json: unknown) => unknown;
}

type SendParams = Parameters<typeof sendRequestToProto>[0];

function route(method: A2AMethod, p: Obj): V03Route {
  switch (method) {
    case 'SendMessage':
      return {
        method: 'POST',
        path: '/v1/message:send',
        body: sendRequestToProto(p as unknown as SendParams),
        decode: responseFromProto,
      };
    case 'GetTask': {
      const q = p.historyLength !== undefined ? `?historyLength=${enc(String(p.historyLength))}` : '';
      return { method: 'GET', path: `/v1/tasks/${enc(String(p.id))}${q}`, decode: taskFromProto };
    }
    case 'CancelTask':
      return {
        method: 'POST',
        path: `/v1/tasks/${enc(String(p.id))}:cancel`,
        body: {},
        decode: taskFromProto,
      };
    case 'CreateTaskPushNotificationConfig': {
      const { taskId, ...config } = p as { taskId: string } & Obj;
      return {
        method: 'POST',
        path: `/v1/tasks/${enc(taskId)}/pushNotificationConfigs`,
        body: pushConfigToProto(taskId, config as unknown as TaskPushNotificationConfig),
        decode: pushConfigFromProto,
      };
    }
    default:
      throw new TaskplaneError('unsupported', `${method} has no A2A 0.3 HTTP+JSON route`);
  }
}

/** A 0.3 error body is `{code, message, data}` at the top level (no google.rpc.Status). */
function v03RestError(json: unknown, httpStatus: number): TaskplaneError {
  const e = (json ?? {}) as { code?: number; message?: string; data?: unknown; error?: { message?: string } };
  return a2aWireError({
    httpStatus,
    ...(typeof e.code === 'number' && e.code < 0 ? { rpcCode: e.code } : {}),
    message: e.message ?? e.error?.message,
    details: e.data,
  });
}

export function restV03Transport(o: TransportOptions): A2ATransport {
  const base = o.url.replace(/\/+$/, '');
  const t: TransportOptions = { ...o, version: A2A_V03_VERSION };
  const request = (
    r: { method: 'GET' | 'POST'; path: string; body?: Obj },
    signal: AbortSignal,
    accept: string,
  ) => {
    const init: RequestInit = { method: r.method };
    if (r.body !== undefined) {
      init.body = JSON.stringify(r.body);
      init.headers = { 'content-type': 'application/json' };
    }
    return send(t, base + r.path, init, signal, accept);
  };
  return {
    binding: 'HTTP+JSON',
    async call(method, params, signal) {
      const r = route(method, params);
      const { response, done } = await request(r, signal, 'application/json');
      try {
        const json = await readJson(response);
        if (!response.ok) throw v03RestError(json, response.status);
        return r.decode(json);
      } finally {
        done();
      }
    },
    async *stream(method, params, signal) {
      const r =
        method === 'SendStreamingMessage'
          ? {
              method: 'POST' as const,
              path: '/v1/message:stream',
              body: sendRequestToProto(params as unknown as SendParams),
            }
          : { method: 'GET' as const, path: `/v1/tasks/${enc(String(params.id))}:subscribe` };
      const { response, done } = await request(r, signal, 'text/event-stream');
      try {
        if (!response.ok || !isSse(response)) throw v03RestError(await readJson(response), response.status);
        let first = true;
        for await (const { frame, event, eventId } of sseFrames(response, signal)) {
          if (event === 'error') throw v03RestError(frame, 500);
          const translated = responseFromProto(frame) as Obj;
          // As on JSON-RPC: a 0.3 resubscribe may start with the next update; read the Task first.
          if (first && method === 'SubscribeToTask' && !('task' in translated)) {
            const got = await this.call('GetTask', { id: params.id }, signal);
            yield { frame: { task: got }, eventId: null };
          }
          first = false;
          yield { frame: translated, eventId };
        }
      } finally {
        done();
      }
    },
  };
}
