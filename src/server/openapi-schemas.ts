import { ENVELOPE_EVENT_TYPES } from '../core/envelope.ts';
import { NORMALIZED_STATES } from '../core/states.ts';

/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 has them) of everything the API answers. Objects we own are
 * closed (`additionalProperties: false`), so a field added to a response without being described here
 * fails test/server/openapi.test.ts, which checks real responses against this document. Values that
 * are the caller's or the remote's own (input, result, data, usage, schemas) stay open.
 */

const nullable = (type: string) => ({ type: [type, 'null'] });
const str = { type: 'string' };
const int = { type: 'integer' };
const num = { type: 'number' };
const ms = (description: string) => ({ type: 'integer', description });
const msOrNull = (description: string) => ({ type: ['integer', 'null'], description });
const any = {};

function closed(properties: Record<string, unknown>, required = Object.keys(properties)) {
  return { type: 'object', additionalProperties: false, required, properties };
}

/** `closed`, with every property required but the `optional` ones (fields older records lack). */
function closedExcept(properties: Record<string, unknown>, optional: string[]) {
  return closed(
    properties,
    Object.keys(properties).filter((k) => !optional.includes(k)),
  );
}

const state = { enum: [...NORMALIZED_STATES] };
const source = { enum: ['create', 'stream', 'push', 'poll', 'reconcile', 'api', 'local'] };

export const schemas: Record<string, unknown> = {
  Error: closed({
    error: closedExcept(
      {
        code: {
          type: 'string',
          description: 'stable code: invalid_argument, unprocessable, not_found, conflict, …',
        },
        message: str,
        field: { ...nullable('string'), description: 'the request field at fault, when one is' },
        violations: {
          type: 'array',
          description:
            "422 only: where `input` fails the target's input schema (the first few places; the message says how many more)",
          items: closed({
            instancePath: {
              type: 'string',
              description: 'JSON Pointer into `input` ("" is the input itself)',
            },
            keyword: {
              type: 'string',
              description: 'the JSON Schema keyword that failed (required, type, …)',
            },
            schemaPath: { type: 'string', description: 'where that keyword is in the schema' },
            message: str,
          }),
        },
      },
      ['violations'],
    ),
  }),
  PendingInput: closed(
    {
      requestId: str,
      prompt: str,
      schema: { type: 'object' },
      deadlineAt: msOrNull('epoch ms'),
      askedAt: ms('epoch ms'),
      answeredAt: msOrNull('epoch ms'),
      answer: {
        oneOf: [{ type: 'null' }, closed({ messageId: str, value: any })],
        description: 'the answer as sent, with the messageId a resend reuses',
      },
      method: {
        ...str,
        description: 'what answering does on the remote: tool_confirmation, custom_tool_result, budget',
      },
      requests: {
        type: 'array',
        description:
          'every request pending at once, each answered on its own requestId; the top-level fields follow the first unanswered one',
        items: closed(
          {
            requestId: str,
            prompt: str,
            schema: { type: 'object' },
            method: str,
            askedAt: ms('epoch ms'),
            answeredAt: msOrNull('epoch ms'),
            answer: { oneOf: [{ type: 'null' }, closed({ messageId: str, value: any })] },
          },
          ['requestId', 'prompt', 'askedAt'],
        ),
      },
    },
    ['requestId', 'prompt', 'askedAt'],
  ),
  Cancel: closedExcept(
    {
      requestedAt: ms('epoch ms'),
      requestedBy: nullable('string'),
      acknowledgedAt: msOrNull('epoch ms'),
      outcome: {
        oneOf: [{ type: 'null' }, state],
        description: 'what the remote really ended in, `succeeded` included',
      },
      pending: {
        oneOf: [{ type: 'null' }, { enum: ['remote_id', 'delivery', 'outcome'] }],
        description:
          'what the cancel waits for: the remote id (start still in flight), delivery of CancelTask, or the outcome',
      },
      attempts: { ...int, description: 'CancelTask calls made so far' },
    },
    ['pending', 'attempts'],
  ),
  Reconciliation: closed(
    {
      result: { enum: ['ok', 'lost', 'resubmitted', 'escalated'] },
      at: ms('epoch ms'),
      attempts: int,
      note: str,
    },
    ['result', 'at', 'attempts'],
  ),
  Acceptance: closed(
    {
      status: { enum: ['pending', 'accepted', 'rejected'] },
      reasons: { type: 'array', items: str },
      schema: { type: 'object' },
      artifactHashes: { type: 'object', additionalProperties: str },
      receipt: closed({ pointer: str }, ['pointer']),
      receiptId: str,
      verifier: closed({
        url: str,
        timeoutMs: int,
        maxAttempts: int,
        from: { enum: ['task', 'target'] },
      }),
      verification: {
        oneOf: [
          { type: 'null' },
          closedExcept(
            {
              dueAt: msOrNull('when the next verifier call is due; null once answered or given up'),
              attempts: int,
              lastError: nullable('string'),
              outcome: { enum: ['answered', 'gave_up', null] },
            },
            ['lastError', 'outcome'],
          ),
        ],
      },
      checks: {
        type: 'array',
        items: closed(
          {
            check: { enum: ['schema', 'artifact_hash', 'receipt', 'verifier', 'person'] },
            verdict: { enum: ['passed', 'failed'] },
            reasons: { type: 'array', items: str },
          },
          ['check', 'verdict', 'reasons'],
        ),
      },
      decidedBy: closed({ keyId: nullable('string'), actor: nullable('string') }),
      decidedAt: msOrNull('epoch ms'),
    },
    ['status', 'reasons'],
  ),
  Budget: closed({ limit: num, unit: str }),
  WorkflowLimits: closedExcept(
    {
      usage: {
        type: 'object',
        additionalProperties: num,
        description: "usage unit → cap, in the remote's unit",
      },
      tasks: int,
      wallTimeMs: int,
    },
    ['usage', 'tasks', 'wallTimeMs'],
  ),
  WorkflowBudget: {
    description: "A budget over every task of a workflow, with what they used (docs/plane.md, 'Budgets')",
    ...closed({
      limits: { $ref: '#/components/schemas/WorkflowLimits' },
      cancelRunning: { type: 'boolean' },
      used: closed({
        usage: { type: 'object', additionalProperties: num },
        tasks: int,
        wallTimeMs: msOrNull('since the first task was created; null while there is none'),
      }),
      overshoot: {
        type: 'object',
        additionalProperties: num,
        description: 'budget → how far it is passed now (work in flight finishes past a usage cap)',
      },
      exhausted: { type: 'array', items: str, description: 'the limits reached now: new tasks are refused' },
      exceeded: {
        type: 'array',
        description: "each limit's first passing, as recorded then",
        items: closed({ budget: str, limit: num, used: num, at: ms('epoch ms') }),
      },
      version: int,
      createdAt: ms('epoch ms'),
      updatedAt: ms('epoch ms'),
    }),
  },
  TargetCost: closed({
    target: str,
    tasks: int,
    finished: int,
    accepted: int,
    rejected: int,
    succeededUnchecked: {
      ...int,
      description: 'succeeded tasks that asked for no acceptance: not counted as accepted',
    },
    usage: { type: 'object', additionalProperties: num },
    firstCreatedAt: ms('epoch ms'),
    costPerAcceptedCompletion: {
      type: ['object', 'null'],
      additionalProperties: num,
      description: 'usage per unit over the accepted tasks; null while none is accepted',
    },
  }),
  CostList: {
    description:
      "The tenant's tasks summed per target, with the cost per accepted completion, as of `ageSeconds` ago (kept per tenant and refreshed in the background)",
    ...closed({
      targets: { type: 'array', items: { $ref: '#/components/schemas/TargetCost' } },
      ageSeconds: { type: 'number', minimum: 0, description: 'how old these figures are' },
    }),
  },
  Workflow: {
    description:
      'The tasks of one workflow summed per target, with the cost per accepted completion (everything spent over the tasks accepted)',
    ...closed({
      workflowId: str,
      tasks: int,
      accepted: int,
      rejected: int,
      usage: { type: 'object', additionalProperties: num },
      costPerAcceptedCompletion: { type: ['object', 'null'], additionalProperties: num },
      targets: { type: 'array', items: { $ref: '#/components/schemas/TargetCost' } },
      budget: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/WorkflowBudget' }] },
    }),
  },
  VerifierSecret: {
    description: "The Standard Webhooks secret this tenant's acceptance verifiers check our requests with",
    ...closed({ secret: str, scheme: { const: 'standard-webhooks' } }),
  },
  Artifact: {
    ...closed({
      artifactId: str,
      name: nullable('string'),
      mediaType: nullable('string'),
      hash: { type: 'string', description: '`sha256:<hex>` of the canonical content' },
      size: {
        type: ['integer', 'null'],
        description: 'content bytes (text UTF-8, data as JSON, files decoded)',
      },
      kept: {
        type: 'boolean',
        description:
          'the plane keeps the content; false above the result caps (then read through from the remote)',
      },
      provenance: closed({ source, remoteId: nullable('string'), at: ms('epoch ms') }),
    }),
    description:
      'An artifact as the task describes it; its content is at /v1/tasks/{id}/artifacts/{artifactId}',
  },
  Output: {
    ...closed({
      text: { ...nullable('string'), description: 'text parts of all artifacts, joined with newlines' },
      data: { type: 'array', items: any, description: 'data parts, as their JSON values' },
      files: {
        type: 'array',
        items: closed({
          artifactId: str,
          name: nullable('string'),
          mediaType: nullable('string'),
          size: nullable('integer'),
        }),
      },
      remoteOnly: {
        type: 'array',
        items: str,
        description: 'artifacts over the result caps: their content comes from the remote',
      },
      truncated: {
        type: 'boolean',
        description: 'text or data left out to keep the summary to 4096 characters',
      },
    }),
    description: "A summary of the task's output; the full content is at /v1/tasks/{id}/artifacts",
  },
  StreamTicket: {
    description:
      'Opens the SSE routes as ?ticket= in place of the key; it names the key, checked again on use',
    ...closed({ ticket: str, expiresAt: ms('epoch ms') }),
  },
  Task: {
    description: 'The task envelope: one durable record per job',
    ...closedExcept(
      {
        id: { type: 'string', description: 'tsk_…' },
        tenant: str,
        actor: nullable('string'),
        workflowId: nullable('string'),
        parentId: nullable('string'),
        connector: { type: 'string', description: 'a2a, mcp, openai, claude' },
        target: str,
        remoteId: nullable('string'),
        contextId: nullable('string'),
        messageId: { ...nullable('string'), description: 'the idempotent creation key sent to the remote' },
        requestKind: str,
        input: { ...any, description: 'the request as sent' },
        inputHash: str,
        idempotencyKey: nullable('string'),
        keyId: {
          ...nullable('string'),
          description: 'id of the API key that created the task (never the key)',
        },
        createdAt: ms('epoch ms'),
        updatedAt: ms('epoch ms'),
        nativeState: { ...nullable('string'), description: "the remote's own state name" },
        state,
        remoteVersion: { type: ['number', 'null'] },
        lastConfirmedAt: msOrNull('when any source last confirmed the remote state'),
        stateTimestamp: msOrNull("the remote's status timestamp"),
        streamCursor: nullable('string'),
        lastEventId: nullable('string'),
        webhookIds: { type: 'array', items: str },
        subscription: {
          oneOf: [
            { type: 'null' },
            closed({ kind: { enum: ['push', 'stream', 'poll'] }, registeredAt: msOrNull('epoch ms') }),
          ],
        },
        pendingInput: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/PendingInput' }] },
        approval: { type: ['object', 'null'] },
        artifacts: { type: 'array', items: { $ref: '#/components/schemas/Artifact' } },
        output: { $ref: '#/components/schemas/Output' },
        result: any,
        statusMessage: {
          ...nullable('string'),
          description: "text of the remote's latest status message; once terminal, its final word",
        },
        error: {
          oneOf: [
            { type: 'null' },
            closed({ code: str, message: { type: 'string', description: "the remote's message" } }),
          ],
        },
        budget: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Budget' }] },
        usage: { type: ['object', 'null'], additionalProperties: num },
        timeoutMs: nullable('number'),
        ttlMs: nullable('number'),
        retentionUntil: msOrNull('epoch ms'),
        expectedDurationMs: nullable('number'),
        cancel: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Cancel' }] },
        reconciliation: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Reconciliation' }] },
        acceptance: { oneOf: [{ type: 'null' }, { $ref: '#/components/schemas/Acceptance' }] },
        version: { type: 'integer', description: 'row version; every write bumps it' },
        lastError: {
          oneOf: [
            { type: 'null' },
            closed({ code: str, message: str, at: ms('epoch ms'), during: { enum: ['start', 'cancel'] } }),
          ],
          description: 'the last failed attempt to reach the remote (a start or a cancel delivery)',
        },
        startAttempts: { ...int, description: 'start calls made so far' },
        nextRetryAt: msOrNull('when the next start attempt is due while the start is retried'),
        startMaybeSent: {
          type: 'boolean',
          description:
            'a start request may have reached the remote (false only while every attempt was refused before sending)',
        },
      },
      // Envelopes written before these fields existed do not carry them.
      ['lastError', 'startAttempts', 'nextRetryAt', 'startMaybeSent'],
    ),
  },
  TaskList: closed({
    tasks: { type: 'array', items: { $ref: '#/components/schemas/Task' } },
    nextCursor: nullable('string'),
    eventSeq: {
      type: 'integer',
      description: 'the latest event seq read before the list; tail /v1/events?after=eventSeq to follow on',
    },
  }),
  Event: closed({
    seq: { type: 'integer', description: 'global and increasing; the SSE `id:`' },
    envelopeId: str,
    tenant: str,
    type: {
      enum: [...ENVELOPE_EVENT_TYPES],
      description: 'what happened; also the SSE `event:` name, so a client subscribes to each of these',
    },
    at: ms('epoch ms'),
    data: { type: 'object', description: 'depends on the type; `source` says which path observed it' },
  }),
  History: closed({ events: { type: 'array', items: { $ref: '#/components/schemas/Event' } } }),
  ExportLine: closed({
    v: { const: 1, description: 'the line format version (server/event-export.ts)' },
    seq: { type: 'integer', description: 'global and increasing; readers deduplicate on it' },
    taskId: str,
    tenant: str,
    type: { enum: [...ENVELOPE_EVENT_TYPES] },
    at: { type: 'string', description: 'the same time as atMs, ISO 8601 in UTC' },
    atMs: ms('epoch ms'),
    data: { type: 'object' },
  }),
  ContentPart: {
    oneOf: [
      closed({ kind: { const: 'text' }, text: str, mediaType: str }, ['kind', 'text']),
      closed({ kind: { const: 'data' }, data: any, mediaType: str }, ['kind', 'data']),
      closed(
        {
          kind: { const: 'file' },
          name: str,
          mediaType: str,
          size: int,
          bytes: { type: 'string', description: 'base64' },
          url: str,
        },
        ['kind'],
      ),
    ],
  },
  ArtifactContent: closed({
    artifactId: str,
    name: nullable('string'),
    mediaType: nullable('string'),
    hash: str,
    size: int,
    parts: { type: 'array', items: { $ref: '#/components/schemas/ContentPart' } },
    from: {
      enum: ['kept', 'remote'],
      description: '`remote`: over the result caps, read from the remote for this answer',
    },
  }),
  ArtifactList: closed({
    artifacts: { type: 'array', items: { $ref: '#/components/schemas/ArtifactContent' } },
  }),
  Signals: signalsSchema(),
  WebhookResult: closed({ status: { enum: ['observed', 'recorded', 'duplicate', 'ignored'] } }),
  Health: closed({ ok: { const: true } }),
};

function signalsSchema(): Record<string, unknown> {
  const count = int;
  const buckets = closed({ under1m: count, under5m: count, under15m: count, over15m: count });
  const delay = closed({
    count,
    meanMs: nullable('number'),
    p50Ms: nullable('number'),
    p99Ms: nullable('number'),
    maxMs: nullable('number'),
  });
  const kinds = ['start', 'get', 'subscribe', 'list', 'cancel', 'answer', 'register_push'];
  return {
    description: "Lifecycle signals of the tenant's own jobs",
    ...closed({
      scope: {
        oneOf: [closed({ kind: { const: 'tenant' }, tenant: str }), closed({ kind: { const: 'process' } })],
      },
      orphans: count,
      inputRequiredByAge: buckets,
      authRequiredByAge: buckets,
      byState: {
        type: 'object',
        additionalProperties: false,
        properties: Object.fromEntries(NORMALIZED_STATES.map((s) => [s, count])),
      },
      requests: closed({
        total: count,
        byKind: closed(Object.fromEntries(kinds.map((k) => [k, count]))),
        targetLevel: count,
        tasksTracked: count,
        perTask: nullable('number'),
      }),
      observationDelay: {
        type: 'object',
        additionalProperties: false,
        properties: Object.fromEntries(source.enum.map((s) => [s, delay])),
      },
      duplicatesAbsorbed: closed({ webhook: count, observation: count }),
      reusedMessageIds: count,
      taskNotFoundOwn: count,
      streamDrops: count,
      reattaches: count,
      resubmitted: count,
      escalated: count,
      webhooksRejected: count,
      reconcileRounds: count,
    }),
  };
}
