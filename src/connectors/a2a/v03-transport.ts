import { TaskplaneError, unreadableAnswer } from '../../core/errors.ts';
import type { A2AMethod, Message, TaskPushNotificationConfig } from '../../protocols/a2a/types.ts';
import {
  A2A_V03_VERSION,
  eventFromV03,
  pushConfigBodyToV03,
  pushConfigFromV03,
  sendParamsToV03,
  taskFromV03,
} from '../../protocols/a2a/v03/wire.ts';
import { jsonRpcTransport, type A2ATransport, type TransportOptions } from './transports.ts';
import { type Obj, isObj } from '../../core/json-object.ts';

/**
 * A2A 0.3 over JSON-RPC behind the same A2ATransport the connector uses for 1.0: the connector asks
 * in 1.0 terms (method names and params) and gets 1.0 answers; this module speaks 0.3 on the wire
 * (protocols/a2a/v03/wire.ts for the data model). Requests carry `A2A-Version: 0.3`, which a 0.3-only
 * agent ignores and a 1.0 agent that also serves 0.3 routes by. 0.3 has no `tasks/list` over
 * JSON-RPC: the connector does not ask (its `list` capability is off for a 0.3 interface).
 */

interface V03Call {
  method: string;
  params: Obj;
  /** The 0.3 result as the 1.0 answer the connector expects. */
  decode: (result: unknown) => unknown;
}

/** A 0.3 answer the translation cannot read is unreadable, as a malformed 1.0 answer is. */
function fromRemote<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw unreadableAnswer(`not an A2A 0.3 answer (${err instanceof Error ? err.message : 'unreadable'})`);
  }
}

const sendParams = (p: Obj) =>
  sendParamsToV03(
    p as {
      message: Message;
      configuration?: {
        returnImmediately?: boolean;
        historyLength?: number;
        taskPushNotificationConfig?: TaskPushNotificationConfig;
      };
    },
  );

/** `message/send` answers the bare Task or Message; 1.0 wraps it as `{task}` or `{message}`. */
function sendResult(result: unknown): unknown {
  return fromRemote(() => eventFromV03(result) ?? { task: taskFromV03(result) });
}

function v03Call(method: A2AMethod, p: Obj): V03Call {
  switch (method) {
    case 'SendMessage':
      return { method: 'message/send', params: sendParams(p), decode: sendResult };
    case 'GetTask':
      return {
        method: 'tasks/get',
        params: { id: p.id, ...(p.historyLength !== undefined ? { historyLength: p.historyLength } : {}) },
        decode: (r) => fromRemote(() => taskFromV03(r)),
      };
    case 'CancelTask':
      return {
        method: 'tasks/cancel',
        params: { id: p.id },
        decode: (r) => fromRemote(() => taskFromV03(r)),
      };
    case 'CreateTaskPushNotificationConfig': {
      const { taskId, ...config } = p;
      return {
        method: 'tasks/pushNotificationConfig/set',
        params: {
          taskId,
          pushNotificationConfig: pushConfigBodyToV03(config as unknown as TaskPushNotificationConfig),
        },
        decode: (r) =>
          fromRemote(() =>
            isObj(r) ? pushConfigFromV03(r.pushNotificationConfig, r.taskId, 'pushNotificationConfig') : {},
          ),
      };
    }
    default:
      throw new TaskplaneError('unsupported', `${method} has no A2A 0.3 JSON-RPC method`);
  }
}

const V03_STREAMS = { SendStreamingMessage: 'message/stream', SubscribeToTask: 'tasks/resubscribe' } as const;

export function jsonRpcV03Transport(o: TransportOptions): A2ATransport {
  const inner = jsonRpcTransport({ ...o, version: A2A_V03_VERSION });
  return {
    binding: 'JSONRPC',
    async call(method, params, signal) {
      const c = v03Call(method, params);
      // The inner transport posts whatever method name it is given: here the 0.3 one.
      return c.decode(await inner.call(c.method as A2AMethod, c.params, signal));
    },
    async *stream(method, params, signal) {
      const name = V03_STREAMS[method];
      const p = method === 'SendStreamingMessage' ? sendParams(params) : { id: params.id };
      let first = true;
      for await (const { frame, eventId } of inner.stream(name as typeof method, p, signal)) {
        const event = fromRemote(() => eventFromV03(frame));
        if (!event) throw unreadableAnswer('stream frame is not an A2A 0.3 event');
        // 0.3 did not say a resubscribe starts with the Task, and many 0.3 servers start with the next
        // update: the current Task is read first, so the stream's reader never misses the state.
        if (first && method === 'SubscribeToTask' && !('task' in event)) {
          const current = await inner.call('tasks/get' as A2AMethod, { id: params.id }, signal);
          yield { frame: { task: fromRemote(() => taskFromV03(current)) }, eventId: null };
        }
        first = false;
        yield { frame: event, eventId };
      }
    },
  };
}
