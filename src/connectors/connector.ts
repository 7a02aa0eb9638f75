import type { ContentPart } from '../core/envelope.ts';
import type { NormalizedState } from '../core/states.ts';

/**
 * The Connector port: the client side of one remote system (A2A agent, MCP server, OpenAI background
 * responses, Claude Managed Agents). The plane engine talks to remotes only through this, and branches
 * only on `capabilities`, never on `kind`. Every method takes an AbortSignal; implementations apply
 * their own per-call timeout as well.
 *
 * Errors: throw TaskplaneError. `not_found` ONLY for the protocol's own answer that the remote does not
 * know the object (A2A TaskNotFoundError: JSON-RPC -32001, or a REST 404 whose google.rpc.Status says
 * TASK_NOT_FOUND); what it means on a job we created is `capabilities.notFound` ("lost" by default).
 * A bare HTTP 404, an HTML page or a gateway's JSON is not the remote's word about the job:
 * `unavailable` with `details.route = 'not_protocol'`.
 * `unavailable`/`timeout` for transport trouble (retryable); `details.notSent = true` when the
 * connection was refused before anything was sent (the remote certainly never got the request).
 * An answer that cannot be read as the protocol's (an event that is not JSON, a result that is not a
 * task, a success without the stream asked for) is `remote_error` marked retryable (core/errors.ts
 * unreadableAnswer): the request may have been taken, so it is never a refusal. A refusal is the
 * protocol's own error answer (a JSON-RPC error, a 4xx).
 * `failed_precondition` for "not in a state that allows this" (A2A UnsupportedOperationError /
 * TaskNotCancelableError). `unsupported` with `details.assumption` when the call relied on a capability
 * the remote turned out not to have: the engine retries the other way, never records it as an outcome.
 *
 * The engine puts `?envelope=<envelope id>` on the push URL it registers, so a delivery that beats the
 * start response still finds its envelope.
 */
export interface Connector {
  /** `a2a`, `mcp`, `openai`, `claude`. For display and metrics labels only. */
  readonly kind: string;
  /** The configured target name this instance talks to. */
  readonly target: string;
  readonly capabilities: ConnectorCapabilities;
  /**
   * Which interface of the remote this connector talks to now (A2A: binding and URL from the agent
   * card). Optional. When it changes (the remote was redeployed and its description lists another
   * interface) the engine records a `card_changed` event on the target's open jobs.
   */
  readonly revision?: string | null;

  /**
   * JSON Schema of the input the remote takes (the target's input schema: operator configuration, or
   * the remote's own description where its protocol has one). Optional. The engine checks a job's
   * `input` against it before anything is recorded or sent, and refuses a mismatch as `unprocessable`
   * (HTTP 422) naming each failing instance path and schema keyword (plane/acceptance.ts).
   */
  readonly inputSchema?: Record<string, unknown> | null;

  /**
   * Learns what the engine must know about the remote before it chooses how to start a job (A2A: reads
   * the agent card, honouring its HTTP caching headers). After it resolves, `capabilities` are the
   * remote's own, not defaults. `fresh` reads it again even when a cached copy is still valid (after a
   * refusal that may come from a stale copy). Optional; throws like any call when the remote cannot be
   * reached.
   */
  prepare?(signal: AbortSignal, opts?: { fresh?: boolean }): Promise<void>;

  /**
   * True when `prepare()` (without `fresh`) would return at once without calling the remote: what it
   * learns is held and still valid. Lets the engine skip the call's bookkeeping (timer, linked signal,
   * trace span) on every start once the remote is known. Optional; absent means "call prepare".
   */
  prepared?(): boolean;

  /**
   * Starts the remote job. `request.messageId` is the idempotency key on the wire: calling start again
   * with the same messageId after a lost response must not create a second job where the remote
   * deduplicates (`capabilities.idempotentStart`). Returns the first snapshot.
   */
  start(request: StartRequest, signal: AbortSignal): Promise<RemoteSnapshot>;

  /**
   * True when every stream this connector returns (`startStream`, `observe`) settles a pending read
   * once its signal aborts, a signal already aborted when the stream opens included, bounded at worst by
   * the connector's own request timeout. The engine then reads such streams directly; any other
   * connector's reads are each raced against the signal (plane/abortable-stream.ts), so that one which
   * misses an abort cannot hold the plane's stop() for ever. Optional; absent means false.
   */
  readonly abortEndsStreams?: boolean;

  /**
   * Starts the remote job and streams its snapshots in one call (A2A SendStreamingMessage). Optional;
   * only when `capabilities.stream`. Same idempotency contract as `start`; the first snapshot carries
   * the remote id; ends like `observe`. A failure before the first snapshot leaves the start outcome
   * unknown (the engine then recovers with the same messageId, as after a lost `start` response).
   */
  startStream?(request: StartRequest, signal: AbortSignal): AsyncIterable<RemoteSnapshot>;

  /** Authoritative current state. Throws `not_found` when the remote does not know the job. */
  get(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot>;

  /**
   * Jobs changed at or after `since` (epoch ms), one page. Only when `capabilities.list`.
   * A2A ListTasks with statusTimestampAfter.
   */
  listChanged?(query: ListChangedQuery, signal: AbortSignal): Promise<ListChangedPage>;

  /**
   * Streams snapshots of one job from `cursor` (or from now with a current snapshot first) until it is
   * terminal or the stream ends. Only when `capabilities.stream`. The iterator ends normally when the
   * remote closes the stream; a drop throws `unavailable`.
   */
  observe?(remoteId: string, cursor: string | null, signal: AbortSignal): AsyncIterable<RemoteSnapshot>;

  /** Answers a pending input request. Only when `capabilities.input`. Returns the next snapshot. */
  answer?(remoteId: string, answer: InputAnswer, signal: AbortSignal): Promise<RemoteSnapshot>;

  /** Asks the remote to cancel. Returns what it says now (may still be running). */
  cancel?(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot>;

  /**
   * Registers a webhook for one job. Only when `capabilities.push`. `token` is a fresh single-purpose
   * secret the remote presents back (A2A `authentication` credentials), so the ingress can verify deliveries.
   */
  registerPush?(remoteId: string, push: PushRegistration, signal: AbortSignal): Promise<{ configId: string }>;

  /**
   * Verifies and parses an inbound webhook for this target. Throws `unauthenticated` when the
   * credentials are wrong. Returns the wake-up signal: which job, a delivery id to dedup on, and the
   * payload's snapshot (informational only: the engine fetches authoritative state).
   */
  parseWebhook?(request: InboundWebhook): Promise<WebhookSignal>;

  /**
   * The credential a delivery presents, read from its headers alone. Optional; with it the ingress
   * refuses a delivery whose credential does not match the job named in its URL before anything parses
   * the body, so a stranger's body never reaches a parser.
   */
  webhookToken?(headers: Record<string, string>): string | null;
}

export interface ConnectorCapabilities {
  /**
   * start() with the same messageId returns the same remote job. Without it, and without `list` to find
   * a job by contextId, a start whose answer was lost cannot be recovered by asking: the engine never
   * resends it blindly, it records `unknown` (reason `start_response_lost`) and the lost policy decides
   * (plane/lost-policy.ts handleStartResponseLost).
   */
  idempotentStart: boolean;
  /** listChanged() exists: reconciliation is one paged call per target, not one per job. */
  list: boolean;
  /** observe() exists: streams with reattach. */
  stream: boolean;
  /** observe() can resume from a cursor without losing events (OpenAI starting_after). */
  streamResume: boolean;
  /** registerPush()/parseWebhook() exist. */
  push: boolean;
  input: boolean;
  cancel: boolean;
  /** Server guidance for polling, when the protocol has it (MCP pollIntervalMs). */
  pollIntervalMs?: number;
  /**
   * What the remote's own `not_found` means for a job we created and saw alive: the remote's lifetime
   * rule for its jobs. @default 'lost'
   * - `'lost'`: the remote forgot it (an agent restarted without its store): the lost policy resubmits
   *   or escalates.
   * - `'expired'`: the remote drops a job at the end of its lifetime and its answer cannot tell that from
   *   forgetting (MCP: -32602 for an unknown task id, and a server may drop a task once its ttlMs has
   *   passed): `expired`, never resubmitted.
   * - `{expiresAfterMs}`: the remote keeps a job this long after it was created (an OpenAI background
   *   response, about 10 minutes): past it `expired`; within it the answer is out of place (deleted by
   *   someone, a replica behind) and the job is `unknown`, reconciled. Never resubmitted: that would run
   *   the work again.
   * - `'unknown'`: the remote keeps its jobs until someone deletes them (Claude sessions): the outcome
   *   can no longer be read; `unknown` with the reason, never resubmitted, reconciliation keeps asking.
   */
  notFound?: NotFoundMeaning;
}

/** What `not_found` on a job we created means (ConnectorCapabilities.notFound). */
export type NotFoundMeaning = 'lost' | 'expired' | 'unknown' | { expiresAfterMs: number };

export interface StartRequest {
  /** Our envelope id, for correlation only. */
  envelopeId: string;
  /** Idempotency key on the wire (A2A messageId). */
  messageId: string;
  /** A2A contextId we chose, so a lost create can be found by context. */
  contextId: string | null;
  input: unknown;
  /** When set, the remote is asked to push to this registration from the start. */
  push?: PushRegistration;
  /** The job's own spend cap, for remotes that enforce one themselves (Claude session budgets). */
  budget?: { limit: number; unit: string } | null;
}

export interface PushRegistration {
  url: string;
  /**
   * The verification secret: the remote presents it on every delivery (A2A: `authentication`
   * credentials, sent as `Authorization: Bearer …`) and the engine checks it against the hash it
   * stored. A2A never returns credentials, so no API call reveals it.
   */
  token: string;
  /**
   * A2A's `token` field, a different value: an agent may list it back (the spec allows it), so it
   * proves nothing and is never checked. Derived one-way from `token`, so it reveals nothing of it.
   */
  notificationToken: string;
}

/** One authoritative look at a remote job, normalized, with the native state kept. */
export interface RemoteSnapshot {
  remoteId: string;
  contextId: string | null;
  state: NormalizedState;
  nativeState: string;
  /** Ordering key: sequence number or remote status timestamp (ms). Null when the remote has none. */
  remoteVersion: number | null;
  /** Remote status timestamp (ms), when given. */
  stateTimestamp: number | null;
  /**
   * Why the connector normalized `nativeState` to `state` when the native state alone does not say it
   * (OpenAI: `queued_stale`, a response queued past the staleness limit, is `unknown`). Only with it may
   * an `unknown` replace a known state; the `state_changed` event carries it.
   */
  reason?: string;
  /** Stream resume cursor after this snapshot, when the protocol has one. */
  cursor?: string | null;
  /** Id of the stream event this snapshot came from (SSE `id:`), when the stream gives one. */
  eventId?: string | null;
  inputRequest?: InputRequest | null;
  /**
   * Every request the job waits on at once, each answered on its own key (Claude: one per blocking
   * tool event). Optional; when present `inputRequest` is its first entry. Answering only some leaves
   * the rest pending.
   */
  inputRequests?: InputRequest[] | null;
  /**
   * The remote id this snapshot's job was known by until now (an MCP exchange held by the connector
   * that the server turned into a task): the engine rebinds the job to `remoteId`.
   */
  replacesRemoteId?: string;
  artifacts?: RemoteArtifact[];
  result?: unknown;
  /** Text of the remote's current status message, when it gives one. */
  statusMessage?: string | null;
  error?: { code: string; message: string } | null;
  usage?: Record<string, number> | null;
  /**
   * Our envelope id as the remote echoes it back (OpenAI: `metadata.taskplane`), when the protocol
   * carries one. Lets a delivery about a job whose start answer was lost find its envelope.
   */
  correlationId?: string;
}

/** One keyed question the remote asks. */
export interface InputRequest {
  requestId: string;
  prompt: string;
  schema?: Record<string, unknown>;
  /** What answering it does on the remote, when the protocol has several kinds (`tool_confirmation`, `budget`). */
  method?: string;
}

/** The same shape, by the name the MCP connector uses. */
export type RemoteInputRequest = InputRequest;

export interface RemoteArtifact {
  artifactId: string;
  name?: string;
  mediaType?: string;
  /** The artifact content in the protocol's own shape; the engine hashes it canonically. */
  content: unknown;
  /** The same content as protocol-neutral parts, which the plane keeps; without them it keeps `content` as one data part. */
  parts?: ContentPart[];
}

export interface ListChangedQuery {
  since: number;
  cursor?: string;
  pageSize?: number;
  /**
   * Only this conversation's jobs, where the remote can filter by it (A2A ListTasks `contextId`): one
   * page whatever else the remote holds. A connector that cannot filter lists everything; callers match
   * the items' contextId themselves either way.
   */
  contextId?: string;
}

export interface ListChangedPage {
  items: RemoteSnapshot[];
  nextCursor?: string;
}

export interface InputAnswer {
  requestId: string;
  /** A fresh messageId for the answer, fixed before the call so a retry is idempotent. */
  messageId: string;
  value: unknown;
  /**
   * The stream cursor the envelope holds for the job (`RemoteSnapshot.cursor`), for a connector that
   * keeps an exchange's state there (an MCP input round's `requestState`), so an answer survives a
   * restart of the plane.
   */
  cursor?: string | null;
}

export interface InboundWebhook {
  headers: Record<string, string>;
  rawBody: string;
}

export interface WebhookSignal {
  remoteId: string;
  deliveryId: string;
  /** The verification secret presented (`PushRegistration.token`), checked against the stored hash. */
  token: string | null;
  snapshot: RemoteSnapshot | null;
  /**
   * The connector verified the delivery's signature with the target's own secret (webhooks configured
   * per project or account, not per job: OpenAI, Claude). No per-job token exists; the ingress records the delivery,
   * answers, then fetches the truth, and finds the job by remote id or by the `correlationId` the
   * remote echoes back.
   */
  signedByTarget?: boolean;
}
