/** Public surface of the control plane engine. */
export { Plane, type PlanePorts, type CreateTaskRequest } from './plane.ts';
export { planeConfig, type PlaneOptions, type PlaneConfig } from './options.ts';
export type { PlaneLogger, ConnectorResolver } from './context.ts';
export type { PlaneSignals, AgeBuckets } from './signal-report.ts';
export type { CounterSignals, DelayStats, RequestKind } from './signals.ts';
export type { ReconcileReport } from './reconciler.ts';
export type { WebhookResult } from './webhook-ingress.ts';
export type { ObserveResult } from './observe.ts';
export type { ArtifactContent } from './artifact-content.ts';
export type { WatcherState, Mechanism } from './job-watcher.ts';
export type { AnswerRequest } from './answer-and-cancel.ts';
