import {
  decodeCancelTaskRequest,
  decodeCreatePushConfigRequest,
  decodeDeletePushConfigRequest,
  decodeGetPushConfigRequest,
  decodeGetTaskRequest,
  decodeListPushConfigsRequest,
  decodeSendMessageRequest,
  decodeSubscribeToTaskRequest,
} from '../decode.ts';
import { A2AError, invalidParams, toA2AError } from '../errors.ts';
import type { StreamItem } from '../handler.ts';
import {
  callContext,
  jsonReplies,
  streamReply,
  type BindingOptions,
  type HttpReply,
  type HttpRequest,
} from '../http-common.ts';
import type { SseEvent } from '../sse.ts';
import type { SendMessageResponse, TaskPushNotificationConfig } from '../types.ts';
import {
  pushConfigFromProto,
  pushConfigToProto,
  sendRequestFromProto,
  streamResponseToProto,
  taskToProto,
} from './rest-wire.ts';
import { A2A_V03_VERSION } from './wire.ts';
import { readBody, splitVerb, type BodyLimits } from '../rest-body.ts';
import { type Obj } from '../../../core/json-object.ts';

/**
 * A2A 0.3 over HTTP+JSON, answered by the same 1.0 handler: the 0.3 routes live under `/v1` of the
 * interface URL (`POST /v1/message:send`, `/v1/message:stream`, `GET /v1/tasks/{id}`,
 * `POST /v1/tasks/{id}:cancel`, `GET|POST /v1/tasks/{id}:subscribe`,
 * `/v1/tasks/{id}/pushNotificationConfigs[/{configId}]`), bodies in the 0.3 ProtoJSON (rest-wire.ts),
 * `application/json` both ways, errors as the bare 0.3 `{code, message, data}` with the HTTP status.
 * 0.3 HTTP+JSON had no ListTasks.
 */

export type V03RestLimits = BodyLimits;

const sendAnswer = (r: SendMessageResponse): Obj => streamResponseToProto(r);

function errorBody(e: A2AError): Obj {
  return { code: e.spec.code, message: e.message };
}

/** One 0.3 HTTP+JSON request; `segments` are the path segments after `/v1`. Never rejects. */
export async function v03Rest(
  options: BindingOptions,
  req: HttpRequest,
  segments: string[],
  limits: V03RestLimits,
): Promise<HttpReply> {
  const replies = jsonReplies(options, 'application/json');
  try {
    const ctx = callContext(req, await options.authenticate(req.headers));
    ctx.protocolVersion = A2A_V03_VERSION;
    const h = options.handler;
    const m = req.method;
    const s = segments;
    const ok = (result: unknown) => replies.ok(200, result);
    const stream = (items: AsyncIterable<StreamItem[]>) => streamReply(options, frames(items), errorEvent);
    if (s.length === 1 && s[0] === 'message:send' && m === 'POST')
      return ok(
        sendAnswer(
          await h.sendMessage(
            decodeSendMessageRequest(sendRequestFromProto(await readBody(req, limits))),
            ctx,
          ),
        ),
      );
    if (s.length === 1 && s[0] === 'message:stream' && m === 'POST')
      return stream(
        await h.sendStreamingMessage(
          decodeSendMessageRequest(sendRequestFromProto(await readBody(req, limits))),
          ctx,
        ),
      );
    if (s[0] !== 'tasks' || s.length < 2) throw notFound(m, s);
    if (s.length === 2) {
      const [id, verb] = splitVerb(s[1]!);
      if (verb === undefined && m === 'GET') {
        const q: Obj = { id };
        const history = req.searchParams.get('historyLength');
        if (history !== null) q.historyLength = history;
        return ok(taskToProto(await h.getTask(decodeGetTaskRequest(q), ctx)));
      }
      if (verb === 'cancel' && m === 'POST') {
        await readBody(req, limits);
        return ok(taskToProto(await h.cancelTask(decodeCancelTaskRequest({ id }), ctx)));
      }
      if (verb === 'subscribe' && (m === 'GET' || m === 'POST'))
        return stream(await h.subscribeToTask(decodeSubscribeToTaskRequest({ id }), ctx));
      throw notFound(m, s);
    }
    if (s[2] !== 'pushNotificationConfigs') throw notFound(m, s);
    const taskId = s[1]!;
    const toProto = (c: TaskPushNotificationConfig) => pushConfigToProto(taskId, c);
    if (s.length === 3 && m === 'POST') {
      const b = await readBody(req, limits);
      // The 0.3 proto body is the config itself, or a create request wrapping it as `config`.
      const cfg = pushConfigFromProto(b.config ?? b);
      if (typeof cfg.taskId === 'string' && cfg.taskId !== '' && cfg.taskId !== taskId)
        throw invalidParams('name', 'names another task than the path');
      if (typeof b.configId === 'string' && b.configId) cfg.id = b.configId;
      const created = await h.createTaskPushNotificationConfig(
        decodeCreatePushConfigRequest({ ...cfg, taskId }),
        ctx,
      );
      return ok(toProto(created));
    }
    if (s.length === 3 && m === 'GET') {
      const list = await h.listTaskPushNotificationConfigs(decodeListPushConfigsRequest({ taskId }), ctx);
      return ok({ configs: list.configs.map(toProto) });
    }
    if (s.length === 4 && m === 'GET')
      return ok(
        toProto(await h.getTaskPushNotificationConfig(decodeGetPushConfigRequest({ taskId, id: s[3] }), ctx)),
      );
    if (s.length === 4 && m === 'DELETE') {
      await h.deleteTaskPushNotificationConfig(decodeDeletePushConfigRequest({ taskId, id: s[3] }), ctx);
      return replies.ok(200, {});
    }
    throw notFound(m, s);
  } catch (err) {
    return replies.error(err, (e) => ({ status: e.spec.http, body: errorBody(e) }));
  }
}

function notFound(method: string, s: string[]): A2AError {
  return new A2AError(
    'MethodNotFoundError',
    `No A2A 0.3 route for ${method} /v1/${s.join('/')}`.slice(0, 200),
  );
}

async function* frames(batches: AsyncIterable<StreamItem[]>): AsyncGenerator<SseEvent[]> {
  for await (const batch of batches)
    yield batch.map((item) => ({ id: item.id, data: JSON.stringify(streamResponseToProto(item.payload)) }));
}

function errorEvent(err: unknown): SseEvent {
  return { event: 'error', data: JSON.stringify(errorBody(toA2AError(err))) };
}
