/**
 * What `taskplane/host` exports: the API for writing an agent the host runs, and `startHost` for
 * running the host inside your own process.
 */
export {
  defineAgent,
  type AgentDefinition,
  type AgentCardInfo,
  type ArtifactChunk,
  type ExecutionContext,
  type InputAnswer,
  type ReplyContext,
  type StepAttempt,
  type StepOptions,
  type Artifact,
} from './agent-api.ts';
export { StepFailedError } from './steps.ts';
export {
  defineTool,
  ToolProtocolError,
  type ToolDefinition,
  type ToolContext,
  type ToolOutput,
  type ElicitResult,
  type InputRequest,
  type InputResponses,
} from './tool-api.ts';
export { startHost, type HostOptions, type RunningHost } from './start-host.ts';
export type { AgentSkill, JsonObject, Message, Part, Task } from '../protocols/a2a/types.ts';
export type { Logger, LogFn } from '../core/logger.ts';
