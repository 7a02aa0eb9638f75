/** Public surface of the control plane engine. */
export { Plane, type PlanePorts, type CreateTaskRequest } from './plane.ts';
export { planeConfig, type PlaneOptions, type PlaneConfig, type RetentionConfig } from './options.ts';
export type { ConnectorResolver } from './context.ts';
export type { Logger, LogFn } from '../core/logger.ts';
export type { PlaneSignals, AgeBuckets, OpenJobSignals } from './signal-report.ts';
export type {
  CounterSignals,
  DelayStats,
  HistogramSnapshot,
  LatencyHistograms,
  RequestKind,
} from './signals.ts';
export type { ReconcileReport } from './reconciler.ts';
export type { TargetActivitySnapshot, TargetDelay, TargetError } from './target-activity.ts';
export type { WebhookResult } from './webhook-ingress.ts';
export type { ObserveResult } from './observe.ts';
export type { ArtifactContent } from './artifact-content.ts';
export type { BeforePurge, RetentionStats } from './retention-sweeper.ts';
export type { WatcherState, Mechanism } from './job-watcher.ts';
export type { AnswerRequest } from './answer-and-cancel.ts';

// What an embedding service needs beside the engine: its ports' real implementations, the
// connectors, the records it returns and the error it throws. The OpenAI and Claude connectors import
// their SDKs on first use, so importing this index (the lab's browser bundle does) does not load them.
export { SystemClock, type Clock } from '../core/clock.ts';
export { CryptoRandom, type Random } from '../core/random.ts';
export { TaskplaneError, VersionConflictError, type ErrorCode } from '../core/errors.ts';
export type { Envelope, EnvelopeEvent } from '../core/envelope.ts';
export { NORMALIZED_STATES, type NormalizedState } from '../core/states.ts';
export type { Connector } from '../connectors/connector.ts';
export { A2AConnector, type A2AConnectorOptions } from '../connectors/a2a/a2a-connector.ts';
export { McpConnector, type McpConnectorOptions } from '../connectors/mcp/mcp-connector.ts';
export { OpenAIConnector, type OpenAIConnectorOptions } from '../connectors/openai/openai-connector.ts';
export type { IncompletePolicy, PriceTable } from '../connectors/openai/response-snapshot.ts';
export { ClaudeConnector, type ClaudeConnectorOptions } from '../connectors/claude/claude-connector.ts';
