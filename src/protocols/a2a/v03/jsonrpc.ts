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
import { A2AError, invalidParams, jsonRpcError } from '../errors.ts';
import type { A2ARequestHandler, CallContext, StreamItem } from '../handler.ts';
import type { SseEvent } from '../sse.ts';
import type { JsonRpcId, SendMessageResponse } from '../types.ts';
import { v03CardOf } from './card.ts';
import {
  messageToV03,
  pushConfigFromV03,
  pushConfigToV03,
  sendParamsFromV03,
  streamResponseToV03,
  taskToV03,
} from './wire.ts';
import { type Obj } from '../../../core/json-object.ts';

/**
 * The A2A 0.3 JSON-RPC methods, answered by the same 1.0 handler: each 0.3 request is translated to
 * its 1.0 twin (wire.ts), decoded and validated by the 1.0 decoders, handled, and its answer
 * translated back. 0.3 results are bare objects with `kind` (`message/send` answers the Task or
 * Message itself, not the 1.0 `{task}` wrapper). 0.3 has no `tasks/list` over JSON-RPC; the extended
 * card (`agent/getAuthenticatedExtendedCard`) has the 0.3 fields added, as the public one does.
 */

type Call = (h: A2ARequestHandler, p: Obj, c: CallContext) => Promise<unknown>;
type StreamCall = (h: A2ARequestHandler, p: Obj, c: CallContext) => Promise<AsyncIterable<StreamItem[]>>;

const sendResultToV03 = (r: SendMessageResponse): Obj =>
  'task' in r ? taskToV03(r.task) : messageToV03(r.message);

/** 0.3 push-config params name the task `id` and the config `pushNotificationConfigId`. */
function configIds(p: Obj): Obj {
  return { taskId: p.id, id: p.pushNotificationConfigId };
}

const UNARY = new Map<string, Call>([
  ['message/send', async (h, p, c) => sendResultToV03(await h.sendMessage(send(p), c))],
  ['tasks/get', async (h, p, c) => taskToV03(await h.getTask(decodeGetTaskRequest(p), c))],
  ['tasks/cancel', async (h, p, c) => taskToV03(await h.cancelTask(decodeCancelTaskRequest(p), c))],
  [
    'tasks/pushNotificationConfig/set',
    async (h, p, c) => {
      const cfg = pushConfigFromV03(p.pushNotificationConfig, p.taskId, 'params.pushNotificationConfig');
      return pushConfigToV03(await h.createTaskPushNotificationConfig(decodeCreatePushConfigRequest(cfg), c));
    },
  ],
  [
    'tasks/pushNotificationConfig/get',
    async (h, p, c) => {
      // 0.3 allowed a get without a config id: the task's (first) config.
      if (p.pushNotificationConfigId === undefined) {
        const list = await h.listTaskPushNotificationConfigs(
          decodeListPushConfigsRequest({ taskId: p.id }),
          c,
        );
        const first = list.configs[0];
        if (!first) throw new A2AError('TaskNotFoundError', 'No push notification config for this task');
        return pushConfigToV03(first);
      }
      return pushConfigToV03(
        await h.getTaskPushNotificationConfig(decodeGetPushConfigRequest(configIds(p)), c),
      );
    },
  ],
  [
    'tasks/pushNotificationConfig/list',
    async (h, p, c) =>
      (
        await h.listTaskPushNotificationConfigs(decodeListPushConfigsRequest({ taskId: p.id }), c)
      ).configs.map(pushConfigToV03),
  ],
  [
    'tasks/pushNotificationConfig/delete',
    async (h, p, c) => {
      await h.deleteTaskPushNotificationConfig(decodeDeletePushConfigRequest(configIds(p)), c);
      return null;
    },
  ],
  [
    'agent/getAuthenticatedExtendedCard',
    async (h, _p, c) => {
      const card = await h.getExtendedAgentCard({}, c);
      return v03CardOf(card) ?? card;
    },
  ],
]);

const STREAMING = new Map<string, StreamCall>([
  ['message/stream', (h, p, c) => h.sendStreamingMessage(send(p), c)],
  ['tasks/resubscribe', (h, p, c) => h.subscribeToTask(decodeSubscribeToTaskRequest(p), c)],
]);

function send(p: Obj) {
  return decodeSendMessageRequest(sendParamsFromV03(p));
}

/** The reply of one 0.3 call: a unary result, or the 0.3 frames of a stream. */
export type V03Answer = { result: unknown } | { frames: AsyncIterable<SseEvent[]> };

/** Handles one 0.3 call; throws A2AError for the client, as the 1.0 table does. */
export async function callV03(
  handler: A2ARequestHandler,
  method: string,
  params: unknown,
  ctx: CallContext,
  id: JsonRpcId,
): Promise<V03Answer> {
  const p = (params ?? {}) as Obj;
  if (typeof p !== 'object' || Array.isArray(p)) throw invalidParams('params', 'must be an object');
  const unary = UNARY.get(method);
  if (unary) return { result: await unary(handler, p, ctx) };
  const streaming = STREAMING.get(method);
  if (!streaming) throw new A2AError('MethodNotFoundError', `Method not found: ${method.slice(0, 100)}`);
  return { frames: v03Frames(await streaming(handler, p, ctx), id) };
}

async function* v03Frames(batches: AsyncIterable<StreamItem[]>, id: JsonRpcId): AsyncGenerator<SseEvent[]> {
  for await (const batch of batches)
    yield batch.map((item) => ({
      id: item.id,
      data: JSON.stringify({ jsonrpc: '2.0', id, result: streamResponseToV03(item.payload) }),
    }));
}

/** A 0.3 stream's closing error frame. */
export function v03ErrorEvent(err: unknown, id: JsonRpcId): SseEvent {
  return { data: JSON.stringify({ jsonrpc: '2.0', id, error: jsonRpcError(err) }) };
}
