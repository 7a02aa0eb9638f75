/**
 * The test contract: what a conformance job asks the agent to do, sent as the data part of the job's
 * first message. It is the demo agent's script (src/host/demo-agent.ts reads exactly these fields), so
 * `taskplane host` implements it as it stands; docs/conformance.md shows an @a2a-js/sdk executor that
 * does. Every field is optional; an agent ignores fields it does not know (`label` is ours, for people
 * reading the agent's logs).
 */
export interface TestContract {
  /** How long the task works before it ends, spread over `steps` progress updates. */
  durationMs?: number;
  /** Progress updates (status WORKING with a message) while it works. */
  steps?: number;
  /** Ask for input half way with this prompt (the task waits in INPUT_REQUIRED). */
  askInput?: string;
  /** End in FAILED instead of COMPLETED. */
  fail?: boolean;
  /**
   * After the steps, perform one side effect that takes this long and that a cancel cannot stop once
   * begun: announce it with the status `side effect started`, record its receipt (artifact `receipt`)
   * when done.
   */
  sideEffectMs?: number;
  /** Artifact chunks produced before completing. */
  artifactChunks?: number;
  /** Which row and job this is. */
  label?: string;
}

/** The job input for a contract (the A2A connector sends an object as one data part). */
export function contractInput(contract: TestContract): Record<string, unknown> {
  return { ...contract };
}
