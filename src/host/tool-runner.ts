import type { Logger } from '../core/logger.ts';
import type { ElicitResult, InputRequest, InputResponses, JsonObject } from '../protocols/mcp/types.ts';
import type { AgentDefinition, StepAttempt, StepOptions } from './agent-api.ts';
import type { McpTaskState } from './task-model.ts';
import type { TaskContext } from './task-context.ts';
import type { ToolContext, ToolDefinition, ToolOutput } from './tool-api.ts';
import { ToolProtocolError } from './tool-api.ts';

/** What the trigger message of an MCP tool task carries (its one data part). */
export interface ToolCallInput {
  tool: string;
  arguments: JsonObject;
  gathered: InputResponses;
}

export function toolOf(agent: AgentDefinition, name: string): ToolDefinition | undefined {
  return agent.tools?.find((t) => t.name === name);
}

/** May a stopped run of this task be started again (A2A: the agent's flag; MCP: the tool's)? */
export function isResumable(agent: AgentDefinition, mcp: McpTaskState | undefined): boolean {
  if (mcp) return toolOf(agent, mcp.tool)?.resumable === true;
  return agent.resumable === true;
}

/** The `ctx` a tool's run gets: the TaskContext of the task, seen through the MCP tool API. */
export class ToolCallContext implements ToolContext {
  readonly taskId: string;
  readonly tool: string;
  readonly arguments: JsonObject;
  readonly gathered: InputResponses;
  private elicitations = 0;

  constructor(
    private readonly ctx: TaskContext,
    input: ToolCallInput,
  ) {
    this.taskId = ctx.taskId;
    this.tool = input.tool;
    this.arguments = input.arguments;
    this.gathered = input.gathered;
    this.status = this.status.bind(this);
    this.ask = this.ask.bind(this);
    this.elicit = this.elicit.bind(this);
    this.save = this.save.bind(this);
    this.sleep = this.sleep.bind(this);
    this.step = this.step.bind(this);
    this.stepKey = this.stepKey.bind(this);
  }

  step<T>(name: string, fn: (attempt: StepAttempt) => T | Promise<T>, options?: StepOptions): Promise<T> {
    return this.ctx.step(name, fn, options);
  }

  stepKey(name: string): string {
    return this.ctx.stepKey(name);
  }

  get resumed(): boolean {
    return this.ctx.resumed;
  }
  get checkpoint(): Record<string, unknown> | undefined {
    return this.ctx.checkpoint;
  }
  get signal(): AbortSignal {
    return this.ctx.signal;
  }
  get logger(): Logger {
    return this.ctx.logger;
  }

  status(text: string): Promise<void> {
    return this.ctx.status(text);
  }

  async ask(requests: Record<string, InputRequest>): Promise<InputResponses> {
    return (await this.ctx.askKeyed(requests as unknown as Record<string, unknown>)) as InputResponses;
  }

  async elicit(message: string, requestedSchema: JsonObject): Promise<ElicitResult> {
    // Keys follow the order of elicit calls, the same on every run, so a resumed run replays them.
    const key = `elicit-${++this.elicitations}`;
    const answers = await this.ask({
      [key]: { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } },
    });
    return answers[key] as unknown as ElicitResult;
  }

  save(checkpoint: Record<string, unknown>): Promise<void> {
    return this.ctx.save(checkpoint);
  }

  sleep(ms: number): Promise<void> {
    return this.ctx.sleep(ms);
  }
}

/** A tool's return value as the CallToolResult a completed task embeds. */
export function toolResult(out: string | ToolOutput | undefined | null): Record<string, unknown> {
  if (out === undefined || out === null) return { content: [] };
  if (typeof out === 'string') return { content: [{ type: 'text', text: out }] };
  const result: Record<string, unknown> = { content: Array.isArray(out.content) ? out.content : [] };
  if (out.structuredContent !== undefined) result.structuredContent = out.structuredContent;
  if (out.isError === true) result.isError = true;
  return JSON.parse(JSON.stringify(result)) as Record<string, unknown>;
}

/** The error a task ends `failed` with when run threw: a ToolProtocolError's own, else a generic one. */
export function toolError(err: unknown): { code: number; message: string; data?: unknown } {
  if (err instanceof ToolProtocolError) {
    return err.data === undefined
      ? { code: err.code, message: err.message }
      : { code: err.code, message: err.message, data: err.data };
  }
  return { code: -32603, message: 'Internal error' };
}
