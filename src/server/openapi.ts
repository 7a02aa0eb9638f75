import { schemas } from './openapi-schemas.ts';
import { targetPaths, targetSchemas } from './openapi-targets.ts';

/**
 * OpenAPI 3.1 description of the control plane API, served at /v1/openapi.json. Kept by hand next to
 * the routes (task-routes.ts, artifact-routes.ts, server-app.ts); test/server/openapi.test.ts checks
 * the document against the OpenAPI 3.1 schema and real responses of a running plane against it.
 */
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (description: string, schema: string) => ({
  description,
  content: { 'application/json': { schema: ref(schema) } },
});
const err = (name: string) => ({ $ref: `#/components/responses/${name}` });
/** Every /v1 route behind an API key answers these. */
const keyed = { '401': err('Unauthenticated') };
/** Routes that read a request body also refuse a body that is too large, not JSON, or invalid. */
const withBody = {
  '400': err('BadRequest'),
  '413': err('TooLarge'),
  '415': err('UnsupportedMediaType'),
};
/** Routes a per-tenant limit applies to (server/tenant-limits.ts): writes and streams. */
const limited = { '429': err('TooManyRequests') };
/** Routes that may call the remote agent. */
const upstream = { '502': err('RemoteError'), '503': err('Unavailable'), '504': err('Timeout') };
const taskId = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const workflowId = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'the workflowId',
};
const task = json('The task envelope', 'Task');
const sse = {
  description:
    'Server-sent events: `event:` is the event type, `data:` one Event as JSON, `id:` its seq (resume with Last-Event-ID or ?after=; ?from=now skips the past)',
  content: { 'text/event-stream': { schema: { type: 'string' } } },
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
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') } },
});

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
            'Create a task (idempotent with Idempotency-Key or body idempotencyKey, one key: both given and different → 400; same key + same input → same task; different input → 409)',
          parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string' } }],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref('CreateTask') } },
          },
          responses: {
            '201': json('Created', 'Task'),
            '200': json('The task this idempotency key created before', 'Task'),
            '202': json('Accepted: the envelope is durable, the remote start runs behind it', 'Task'),
            ...keyed,
            ...withBody,
            ...limited,
            '403': err('Forbidden'),
            '409': err('Conflict'),
            '422': err('Unprocessable'),
            ...upstream,
          },
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
            { name: 'workflowId', in: 'query', schema: { type: 'string' } },
            {
              name: 'updatedAfter',
              in: 'query',
              schema: { type: 'string' },
              description: 'epoch ms or ISO 8601',
            },
            { name: 'cursor', in: 'query', schema: { type: 'string' } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500 } },
          ],
          responses: { '200': json('A page of tasks', 'TaskList'), ...keyed, '400': err('BadRequest') },
        },
      },
      '/v1/tasks/{id}': {
        get: {
          summary: 'Get a task',
          parameters: [taskId],
          responses: { '200': task, ...keyed, '404': err('NotFound') },
        },
      },
      '/v1/tasks/{id}/cancel': {
        post: {
          summary:
            'Request cancellation (records intent, calls the remote, keeps observing the true outcome)',
          parameters: [taskId],
          responses: {
            '200': task,
            ...keyed,
            ...withBody,
            ...limited,
            '403': err('Forbidden'),
            '404': err('NotFound'),
            '409': err('Conflict'),
            ...upstream,
          },
        },
      },
      '/v1/tasks/{id}/acceptance': {
        post: {
          summary:
            "A person accepts or rejects a finished task's output with a reason (the acceptance event records the API key and actor); the task's state does not change",
          parameters: [taskId],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['decision', 'reason'],
                  properties: {
                    decision: { enum: ['accepted', 'rejected'] },
                    reason: { type: 'string' },
                    actor: { type: 'string' },
                  },
                },
              },
            },
          },
          responses: {
            '200': task,
            ...keyed,
            ...withBody,
            ...limited,
            '400': err('BadRequest'),
            '404': err('NotFound'),
            '409': err('Conflict'),
          },
        },
      },
      '/v1/workflows/{id}': {
        get: {
          summary:
            "A workflow's tasks summed per target, cost per accepted completion (per usage unit), and its budget",
          parameters: [workflowId],
          responses: {
            '200': json('The workflow', 'Workflow'),
            ...keyed,
            '400': err('BadRequest'),
            '404': err('NotFound'),
          },
        },
      },
      '/v1/workflows/{id}/budget': {
        get: {
          summary: "A workflow's budget with what its tasks used, the overshoot and the limits reached",
          parameters: [workflowId],
          responses: {
            '200': json('The budget', 'WorkflowBudget'),
            ...keyed,
            '400': err('BadRequest'),
            '404': err('NotFound'),
          },
        },
        put: {
          summary:
            'Set the budget over every task of the workflow (children included); a create past it is refused with 409 naming the budget (error.field budget.tasks, budget.usage.<unit>, budget.wallTimeMs)',
          parameters: [workflowId],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    usage: { type: 'object', additionalProperties: { type: 'number', exclusiveMinimum: 0 } },
                    tasks: { type: 'integer', minimum: 1 },
                    wallTimeMs: { type: 'integer', minimum: 1, description: 'from the first task' },
                    cancelRunning: {
                      type: 'boolean',
                      description: 'cancel the open tasks once a usage or wall-time limit is passed',
                    },
                  },
                },
              },
            },
          },
          responses: {
            '200': json('The budget as stored', 'WorkflowBudget'),
            ...keyed,
            ...withBody,
            ...limited,
            '403': err('Forbidden'),
            '409': err('Conflict'),
          },
        },
      },
      '/v1/costs': {
        get: {
          summary:
            "The tenant's tasks summed per target: usage, accepted and rejected, and the cost per accepted completion",
          responses: { '200': json('Per target', 'CostList'), ...keyed },
        },
      },
      '/v1/verifier-secret': {
        get: {
          summary:
            "The Standard Webhooks secret (whsec_…) this tenant's acceptance verifiers check our requests with",
          responses: { '200': json('The secret', 'VerifierSecret'), ...keyed },
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
                  properties: { requestId: { type: 'string' }, value: {}, actor: { type: 'string' } },
                },
              },
            },
          },
          responses: {
            '200': task,
            ...keyed,
            ...withBody,
            ...limited,
            '403': err('Forbidden'),
            '404': err('NotFound'),
            '409': err('Conflict'),
            ...upstream,
          },
        },
      },
      '/v1/tasks/{id}/artifacts': {
        get: {
          summary:
            "The task's artifacts with their content; content over the result caps is read through from the remote while it still has the task",
          parameters: [taskId],
          responses: {
            '200': json('Every artifact with its parts', 'ArtifactList'),
            ...keyed,
            '404': err('NotFound'),
            ...upstream,
          },
        },
      },
      '/v1/tasks/{id}/artifacts/{artifactId}': {
        get: {
          summary:
            'One artifact. One text, data or inline file part is answered as itself with its media type (ETag: its hash); more parts, a file by URL, or ?format=json answer the ArtifactContent JSON',
          parameters: [
            taskId,
            { name: 'artifactId', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'format', in: 'query', schema: { type: 'string', enum: ['json'] } },
          ],
          responses: {
            '200': {
              description: 'The content; `X-Artifact-From: kept|remote` says where it came from',
              headers: {
                ETag: { schema: { type: 'string' }, description: 'the content hash, quoted' },
                'X-Artifact-From': { schema: { type: 'string', enum: ['kept', 'remote'] } },
              },
              content: {
                'application/json': {
                  schema: {
                    description:
                      "ArtifactContent with ?format=json or when the content is not one part; else one data part's value",
                  },
                },
                '*/*': { schema: { description: 'one text or file part as itself, with its media type' } },
              },
            },
            ...keyed,
            '404': err('NotFound'),
            ...upstream,
          },
        },
      },
      '/v1/tasks/{id}/history': {
        get: {
          summary:
            "A task's event timeline as JSON, or with ?format=jsonl its whole log as JSON Lines (the export format, streamed)",
          parameters: [
            taskId,
            { name: 'after', in: 'query', schema: { type: 'integer' } },
            { name: 'format', in: 'query', schema: { enum: ['json', 'jsonl'] } },
          ],
          responses: {
            '200': {
              description: 'Events in seq order',
              content: {
                'application/json': { schema: ref('History') },
                'application/jsonl': {
                  schema: { description: 'one ExportLine per line', items: ref('ExportLine') },
                },
              },
            },
            ...keyed,
            '400': err('BadRequest'),
            '404': err('NotFound'),
          },
        },
      },
      '/v1/tasks/{id}/events': {
        get: {
          summary: "A task's events as SSE",
          parameters: [taskId, ...streamFrom],
          responses: { '200': sse, ...keyed, '404': err('NotFound'), ...limited },
        },
      },
      '/v1/events': {
        get: {
          summary: "All of the tenant's task events as SSE",
          parameters: streamFrom,
          responses: { '200': sse, ...keyed, ...limited },
        },
      },
      '/v1/stream-tickets': {
        post: {
          summary:
            'A short-lived ticket (60 s) that opens the stream routes in place of the key (?ticket=); it names the key, which is checked again on use',
          responses: { '201': json('A stream ticket', 'StreamTicket'), ...keyed, ...limited },
        },
      },
      '/v1/signals': {
        get: {
          summary:
            'Lifecycle signals: orphans, delays per mechanism, input by age, duplicates absorbed, requests per task',
          responses: { '200': json('Signals', 'Signals'), ...keyed },
        },
      },
      ...targetPaths,
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
          responses: {
            '200': json('What became of the delivery', 'WebhookResult'),
            '401': err('Unauthenticated'),
            ...withBody,
            '404': err('NotFound'),
            ...upstream,
          },
        },
      },
      '/v1/openapi.json': {
        get: {
          security: [],
          summary: 'This document',
          responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': {} } } },
        },
      },
      '/healthz': { get: { security: [], summary: 'Liveness', responses: { '200': json('ok', 'Health') } } },
      '/metrics': {
        get: {
          security: [],
          summary:
            'Prometheus metrics. With a metrics token configured, `Authorization: Bearer <metrics token>`; without one, open on a loopback-only plane and refused beyond loopback',
          responses: {
            '200': { description: 'text format', content: { 'text/plain': { schema: { type: 'string' } } } },
            '401': err('Unauthenticated'),
          },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      responses: {
        BadRequest: errorResponse(
          '400 invalid_argument: malformed request (not JSON, too deep, a query parameter or field wrong, an acceptance schema that is not a valid JSON Schema); `error.field` names the field',
        ),
        Unauthenticated: errorResponse(
          '401: no valid API key (or, on the webhook route, no valid push token)',
        ),
        Forbidden: errorResponse('403: the key is read-only and the request writes'),
        NotFound: errorResponse(
          "404: no such task for this tenant (another tenant's task included), no such artifact, or no such target",
        ),
        Conflict: errorResponse(
          '409: the request conflicts with the task (idempotency key reused with other input, wrong input request, task not in a state that allows it)',
        ),
        TooLarge: errorResponse('413: request body over the limit'),
        UnsupportedMediaType: errorResponse('415: request body is not application/json'),
        TooManyRequests: {
          ...errorResponse(
            "429 resource_exhausted: over one of the tenant's limits (writes per second, creates held, schema compile time, open streams, or more than 64 requests waiting at the door after many refusals; the message names it); retry after Retry-After seconds",
          ),
          headers: {
            'Retry-After': {
              description: 'seconds to wait before retrying',
              schema: { type: 'integer', minimum: 1 },
            },
          },
        },
        Unprocessable: errorResponse(
          "422 unprocessable: the body is well-formed and every field valid, but the target's input schema refuses `input`; `error.violations` names each failing place (instancePath in the input, the schema keyword and its schemaPath), and so does the message",
        ),
        RemoteError: errorResponse('502: the remote agent answered something unusable'),
        Unavailable: errorResponse('503: the remote agent cannot be reached now; retry'),
        Timeout: errorResponse('504: the remote agent did not answer in time; retry'),
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
            workflowId: {
              type: 'string',
              description: 'the workflow the task belongs to; its budget is checked (409 naming the budget)',
            },
            parentId: {
              type: 'string',
              description:
                "the task that started this one (same tenant); the child joins the parent's workflow",
            },
            actor: { type: 'string' },
            expectedDurationMs: { type: 'number' },
            timeoutMs: {
              type: 'number',
              description:
                'at createdAt + timeoutMs the plane asks the remote to cancel (its own timer) and records the true outcome',
            },
            acceptance: {
              type: 'object',
              description: 'checks run in order once the remote reports success (docs/plane.md "Acceptance")',
              properties: {
                schema: { type: 'object' },
                artifactHashes: {
                  type: 'object',
                  additionalProperties: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
                  description: 'artifact id or name → the hash it must have (as its `hash` shows)',
                },
                receipt: {
                  type: 'object',
                  required: ['pointer'],
                  properties: { pointer: { type: 'string' } },
                  description: 'JSON Pointer to the receipt id the output must carry',
                },
                verifier: {
                  type: 'object',
                  required: ['url'],
                  properties: {
                    url: {
                      type: 'string',
                      description: 'http(s), public unless the plane allows private verifiers',
                    },
                    timeoutMs: { type: 'integer', minimum: 1, maximum: 60000 },
                    maxAttempts: { type: 'integer', minimum: 1, maximum: 20 },
                  },
                  description:
                    'called last with the output and receipt, signed (GET /v1/verifier-secret); its 2xx {accepted, reasons} decides; no answer leaves acceptance pending',
                },
              },
            },
            budget: {
              type: 'object',
              required: ['limit', 'unit'],
              properties: { limit: { type: 'number' }, unit: { type: 'string' } },
              description:
                "spend cap in the remote's usage unit; once usage reaches it, answers and resubmissions are refused (409 failed_precondition, recorded as a budget_refused event)",
            },
          },
        },
        ...schemas,
        ...targetSchemas,
      },
    },
  };
}
