/**
 * The conformance report: `taskplane conformance --json` prints it, `--html` renders it. Field names are
 * a public interface; `version` changes when a field changes meaning or goes away (docs/conformance.md,
 * "The JSON report").
 */
export const REPORT_VERSION = 2;

/**
 * `not_run`: the row could run against this agent but did not (a hook or capability missing, the time
 * bound); `not_applicable`: the target's protocol has nothing the row could exercise. Neither passes.
 */
export type RowStatus = 'passed' | 'failed' | 'not_run' | 'not_applicable';

export interface Check {
  name: string;
  ok: boolean;
  /** What was seen, in words, with the ids that prove it. */
  detail: string;
}

export type TimelineKind = 'fault' | 'request' | 'plane' | 'agent' | 'push' | 'hook' | 'check' | 'note';

export interface TimelineEntry {
  /** Milliseconds since the row started. */
  atMs: number;
  kind: TimelineKind;
  text: string;
}

export interface JobEvidence {
  label: string;
  envelopeId: string;
  messageId: string | null;
  contextId: string | null;
  /** Distinct task ids the agent created for this job (from its answers on the wire). */
  remoteTaskIds: string[];
  /** The engine's final normalized state. */
  finalState: string;
  /** The agent's own final answer for the task, read directly (not through the proxy); null when it did not know the task. */
  agentState: string | null;
  /** Requests to the agent attributed to this job (naming its context or one of its tasks). */
  requests: number;
  /**
   * What the agent reported the job's tasks cost (`metadata.usage`, its latest report per task, summed
   * by unit over the job's tasks); null when it reported none.
   */
  usage: Record<string, number> | null;
}

export interface RowReport {
  id: string;
  /** Row number in the failure matrix (1–12). */
  number: number;
  title: string;
  status: RowStatus;
  /** Why a row was not run, or the first failed check. */
  reason: string | null;
  checks: Check[];
  jobs: JobEvidence[];
  timeline: TimelineEntry[];
  durationMs: number;
}

export interface Measure {
  /** null: not measured in this run (`note` says why). */
  value: number | null;
  unit: string;
  note: string;
}

export interface ChecklistAnswer {
  question: string;
  /** The answer from this run's evidence, or "not measured". */
  answer: string;
  /** Row ids whose evidence the answer rests on. */
  rows: string[];
}

export interface AgentFacts {
  /** The target's protocol: an A2A 1.0 agent or an MCP tasks server. */
  protocol: 'a2a' | 'mcp';
  name: string | null;
  version: string | null;
  bindings: string[];
  streaming: boolean;
  push: boolean;
}

export interface ConformanceReport {
  version: typeof REPORT_VERSION;
  target: string;
  startedAt: string;
  durationMs: number;
  seed: number;
  agent: AgentFacts;
  /** True when at least one row ran and every row that ran passed (the exit code is 0 exactly then). */
  passed: boolean;
  rows: RowReport[];
  measures: Record<string, Measure>;
  checklist: ChecklistAnswer[];
  /** Requests the proxy forwarded to the agent, by A2A operation. */
  requests: Record<string, number>;
  notes: string[];
}

export function summarize(rows: RowReport[]): {
  passed: number;
  failed: number;
  notRun: number;
  notApplicable: number;
} {
  return {
    passed: rows.filter((r) => r.status === 'passed').length,
    failed: rows.filter((r) => r.status === 'failed').length,
    notRun: rows.filter((r) => r.status === 'not_run').length,
    notApplicable: rows.filter((r) => r.status === 'not_applicable').length,
  };
}
