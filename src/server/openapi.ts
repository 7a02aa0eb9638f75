import { NORMALIZED_STATES } from '../core/states.ts';
/**
 * OpenAPI 3.1 description of the control plane API, served at /v1/openapi.json. Kept by hand next to
 * the routes (task-routes.ts, server-app.ts); test/server checks every documented path answers.
 */
const error = { $ref: '#/components/responses/Error' };
const taskId = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const task = {
  description: 'The task envelope',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Task' } } },
};
const sse = {
  description:
    'Server-sent events; `id:` is the event sequence number (resume with Last-Event-ID or ?after=; ?from=now skips the past)',
  content: { 'text/event-stream': {} },
};
const streamFrom = [
  {
    name: 'ticket',
    in: 'query',
    schema: { type: 'string' },
    description:
      'a stream ticket from POST /v1/stream-tickets, for clients that cannot send a header (EventSource); ?key= is also taken here, and only on the stream routes',
  },
  {
    name: 'after',
    in: 'query',
    schema: { type: 'integer' },
    description: 'start after this event seq (Last-Event-ID wins)',
  },
  {
    name: 'from',
    in: 'query',
    schema: { type: 'string', enum: ['now'] },
    description: 'only events from now on',
  },
];

export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'taskplane control plane',
      version: '0.1.0',
      description:
        "One durable handle per long-running agent job. Every /v1 call needs `Authorization: Bearer <api key>`; the key names the tenant, and another tenant's task is a 404. A read-only key gets 403 on every write; a revoked key gets 401.",
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/tasks': {
        post: {
          summary:
            'Create a task (idempotent with Idempotency-Key or body idempotencyKey: same key + same input → same task; different input → 409)',
          parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string' } }],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/CreateTask' } } },
          },
          responses: { '201': task, '200': task, '400': error, '403': error, '409': error },
        },
        get: {
          summary: 'List tasks, newest update first',
          parameters: [
            {
              name: 'state',
              in: 'query',
              schema: { type: 'string' },
              description: 'comma-separated normalized states',
            },
            { name: 'target', in: 'query', schema: { type: 'string' } },
            {
              name: 'updatedAfter',
              in: 'query',
              schema: { type: 'string' },
              description: 'epoch ms or ISO 8601',
            },
            { name: 'cursor', in: 'query', schema: { type: 'string' } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500 } },
          ],
          responses: {
            '200': {
              description:
                '{tasks, nextCursor, eventSeq}: eventSeq is the latest event seq read before the list; tail /v1/events?after=eventSeq to follow on without a replay',
            },
            '400': error,
          },
        },
      },
      '/v1/tasks/{id}': {
        get: { summary: 'Get a task', parameters: [taskId], responses: { '200': task, '404': error } },
      },
      '/v1/tasks/{id}/cancel': {
        post: {
          summary:
            'Request cancellation (records intent, calls the remote, keeps observing the true outcome)',
          parameters: [taskId],
          responses: { '200': task, '404': error, '409': error },
        },
      },
      '/v1/tasks/{id}/input': {
        post: {
          summary:
            'Answer the pending input request (wrong requestId or a second answer → 409, nothing changes)',
          parameters: [taskId],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['requestId'],
                  properties: { requestId: { type: 'string' }, value: {} },
                },
              },
            },
          },
          responses: { '200': task, '404': error, '409': error },
        },
      },
      '/v1/tasks/{id}/history': {
        get: {
          summary: "A task's event timeline as JSON",
          parameters: [taskId],
          responses: { '200': { description: '{events}' }, '404': error },
        },
      },
      '/v1/tasks/{id}/events': {
        get: {
          summary: "A task's events as SSE",
          parameters: [taskId, ...streamFrom],
          responses: { '200': sse, '404': error },
        },
      },
      '/v1/events': {
        get: {
          summary: "All of the tenant's task events as SSE",
          parameters: streamFrom,
          responses: { '200': sse },
        },
      },
      '/v1/stream-tickets': {
        post: {
          summary:
            'A short-lived ticket (60 s) that opens the stream routes in place of the key (?ticket=); it names the key, which is checked again on use',
          responses: {
            '201': { description: '{ticket, expiresAt}' },
            '401': error,
          },
        },
      },
      '/v1/signals': {
        get: {
          summary:
            'Lifecycle signals: orphans, delays per mechanism, input by age, duplicates absorbed, requests per task',
          responses: { '200': { description: 'signals' } },
        },
      },
      '/v1/webhooks/{kind}/{target}': {
        post: {
          summary:
            'Push ingress (A2A StreamResponse). Authenticated by the per-task bearer token the plane registered, not by an API key. 2xx only after the delivery is recorded.',
          security: [],
          parameters: [
            { name: 'kind', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'target', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'envelope', in: 'query', schema: { type: 'string' } },
          ],
          responses: { '200': { description: '{status: observed|duplicate|ignored}' }, '401': error },
        },
      },
      '/healthz': { get: { security: [], summary: 'Liveness', responses: { '200': { description: 'ok' } } } },
      '/metrics': {
        get: {
          security: [],
          summary:
            'Prometheus metrics. With a metrics token configured, `Authorization: Bearer <metrics token>`; without one, open on a loopback-only plane and refused beyond loopback',
          responses: { '200': { description: 'text format' }, '401': error },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      responses: {
        Error: {
          description: 'Error',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  error: {
                    type: 'object',
                    properties: {
                      code: { type: 'string' },
                      message: { type: 'string' },
                      field: { type: ['string', 'null'] },
                    },
                  },
                },
              },
            },
          },
        },
      },
      schemas: {
        CreateTask: {
          type: 'object',
          required: ['target', 'input'],
          properties: {
            target: { type: 'string' },
            input: {
              description: 'string → text part; {parts:[…]} → A2A parts; anything else → one data part',
            },
            idempotencyKey: { type: 'string' },
            contextId: { type: 'string' },
            expectedDurationMs: { type: 'number' },
            timeoutMs: {
              type: 'number',
              description:
                'at createdAt + timeoutMs the plane asks the remote to cancel (its own timer) and records the true outcome',
            },
            acceptance: { type: 'object', properties: { schema: { type: 'object' } } },
            budget: {
              type: 'object',
              required: ['limit', 'unit'],
              properties: { limit: { type: 'number' }, unit: { type: 'string' } },
              description:
                "spend cap in the remote's usage unit; once usage reaches it, answers and resubmissions are refused (409 failed_precondition, recorded as a budget_refused event)",
            },
          },
        },
        Task: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            state: { enum: [...NORMALIZED_STATES] },
            nativeState: { type: ['string', 'null'] },
            target: { type: 'string' },
            remoteId: { type: ['string', 'null'] },
            messageId: { type: 'string' },
            contextId: { type: 'string' },
            keyId: {
              type: ['string', 'null'],
              description: 'id of the API key that created the task (never the key itself)',
            },
            pendingInput: { type: ['object', 'null'] },
            artifacts: { type: 'array' },
            cancel: { type: ['object', 'null'] },
            reconciliation: { type: ['object', 'null'] },
            acceptance: { type: ['object', 'null'] },
            createdAt: { type: 'number' },
            updatedAt: { type: 'number' },
          },
        },
      },
    },
  };
}
