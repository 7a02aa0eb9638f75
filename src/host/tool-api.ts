import type { Logger } from '../core/logger.ts';
import type { StepAttempt, StepOptions } from './agent-api.ts';
import type {
  ElicitResult,
  InputRequest,
  InputRequests,
  InputResponse,
  InputResponses,
  JsonObject,
  JsonValue,
} from '../protocols/mcp/types.ts';

/**
 * The public API for an MCP tool the host serves at `/mcp` (docs/host.md, "MCP"). A tool runs on the
 * same durable machinery as an A2A task: every ctx call that changes the task is on disk before it
 * resolves, input survives a restart, and a `resumable` tool's run is called again after one.
 *
 * ```ts
 * import { defineAgent, defineTool } from 'taskplane/host';
 * export default defineAgent({
 *   card: { name: 'Files', description: 'File chores', version: '1.0.0' },
 *   tools: [
 *     defineTool({
 *       name: 'confirm_delete',
 *       inputSchema: { type: 'object', properties: { filename: { type: 'string' } } },
 *       async run(ctx) {
 *         const answer = await ctx.elicit(`Delete ${String(ctx.arguments.filename)}?`, {
 *           type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'],
 *         });
 *         return answer.action === 'accept' ? 'deleted' : 'kept';
 *       },
 *     }),
 *   ],
 * });
 * ```
 */
export interface ToolDefinition {
  name: string;
  title?: string;
  description?: string;
  /** JSON Schema of `arguments`. @default { type: 'object' } */
  inputSchema?: JsonObject;
  outputSchema?: JsonObject;
  /**
   * How the tool runs: `optional` runs it as a task when the request declared the tasks extension and
   * synchronously otherwise; `required` refuses a request without the extension (-32021 on 2026-07-28,
   * -32601 on 2025-11-25); `forbidden` always answers synchronously. @default 'optional'
   */
  task?: 'optional' | 'required' | 'forbidden';
  /**
   * Client capabilities the tool cannot run without (`{ sampling: {} }`). On 2026-07-28 a request that
   * did not declare each of them is refused with -32021 naming the missing ones. @default none
   */
  requiredCapabilities?: JsonObject;
  /** May run be called again for a task that was running when the host stopped? @default false */
  resumable?: boolean;
  /**
   * Synchronous input rounds before any task exists (MRTR, 2026-07-28). Called with the arguments and
   * every answer collected so far; return the requests still needed, keyed, or undefined when ready.
   * What was collected reaches run as `ctx.gathered`. Legacy clients cannot answer these rounds: a
   * tool with `gather` is refused to them when it asks for anything.
   */
  gather?(args: JsonObject, answers: InputResponses): InputRequests | undefined;
  /**
   * Runs the call. A string becomes one text content item; a ToolOutput is the CallToolResult. A tool
   * that ran and failed returns `{ isError: true, … }` (the task ends `completed`); throw
   * ToolProtocolError for a protocol error (`failed` with that error); anything else thrown ends the
   * task `failed` with a generic internal error (details go to the host log).
   */
  run(ctx: ToolContext): Promise<string | ToolOutput>;
}

export interface ToolOutput {
  content: JsonValue[];
  structuredContent?: JsonObject;
  isError?: boolean;
}

export interface ToolContext {
  readonly taskId: string;
  readonly tool: string;
  readonly arguments: JsonObject;
  /** The answers the gather rounds collected, by key. */
  readonly gathered: InputResponses;
  /** True when run is called again after a host restart. */
  readonly resumed: boolean;
  readonly checkpoint: Record<string, unknown> | undefined;
  /** Fires on tasks/cancel, on input timeout and on host shutdown. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Sets the task's statusMessage (stays `working`). */
  status(text: string): Promise<void>;
  /**
   * Moves the task to `input_required` with these requests (keys name them; each key is used once per
   * call) and resolves when every one is answered, with the answers by the same keys. Answers already
   * given are replayed on a resumed run, so ask in the same order every time.
   */
  ask(requests: Record<string, InputRequest>): Promise<InputResponses>;
  /** One `elicitation/create` request: `ask` with a single key. */
  elicit(message: string, requestedSchema: JsonObject): Promise<ElicitResult>;
  save(checkpoint: Record<string, unknown>): Promise<void>;
  sleep(ms: number): Promise<void>;
  /** A journaled side effect, as an A2A execute's `ctx.step` (agent-api.ts; docs/host.md "Side effects"). */
  step<T>(name: string, fn: (attempt: StepAttempt) => T | Promise<T>, options?: StepOptions): Promise<T>;
  /** The step's idempotency key, as `ctx.stepKey`. */
  stepKey(name: string): string;
}

/** A JSON-RPC error the task ends `failed` with (protocol errors only; tool errors are `isError`). */
export class ToolProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: JsonValue,
  ) {
    super(message);
    this.name = 'ToolProtocolError';
  }
}

/** Identity function that gives a tool its types. */
export function defineTool(definition: ToolDefinition): ToolDefinition {
  return definition;
}

export type {
  ElicitResult,
  InputRequest,
  InputRequests,
  InputResponse,
  InputResponses,
  JsonObject,
  JsonValue,
};
