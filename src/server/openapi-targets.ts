import { NORMALIZED_STATES } from '../core/states.ts';

/**
 * The targets part of /v1/openapi.json (server/target-routes.ts): its two routes and the schemas of
 * their answers, closed like the others (openapi-schemas.ts) so an undescribed field fails the contract
 * test.
 */
const nullable = (type: string) => ({ type: [type, 'null'] });
const str = { type: 'string' };
const int = { type: 'integer' };
const bool = { type: 'boolean' };

function closed(properties: Record<string, unknown>) {
  return { type: 'object', additionalProperties: false, required: Object.keys(properties), properties };
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const sources = ['create', 'stream', 'push', 'poll', 'reconcile', 'api', 'local'];

export const targetPaths: Record<string, unknown> = {
  '/v1/targets': {
    get: {
      summary:
        "The targets this plane tracks jobs on: kind, capabilities, the agent card (A2A), and the tenant's own open jobs, last reconciliation, notification delays and recent failures there",
      responses: {
        '200': {
          description: 'Targets by name',
          content: { 'application/json': { schema: ref('TargetList') } },
        },
        '401': { $ref: '#/components/responses/Unauthenticated' },
      },
    },
  },
  '/v1/targets/{name}': {
    get: {
      summary: 'One target (as in the list)',
      parameters: [{ name: 'name', in: 'path', required: true, schema: str }],
      responses: {
        '200': { description: 'The target', content: { 'application/json': { schema: ref('Target') } } },
        '401': { $ref: '#/components/responses/Unauthenticated' },
        '404': { $ref: '#/components/responses/NotFound' },
      },
    },
  },
};

const delay = closed({
  count: int,
  p50Ms: nullable('number'),
  maxMs: nullable('number'),
  lastMs: { ...nullable('number'), description: 'the latest delay measured' },
});

export const targetSchemas: Record<string, unknown> = {
  TargetList: closed({ targets: { type: 'array', items: ref('Target') } }),
  Target: {
    description:
      "A target: what it is is the same for every tenant; `tasks`, `lastReconciledAt`, `lastError`, `notificationDelay` and `recentFailures` are about the asking tenant's jobs only (in memory since the process started, but the task counts and failures, read from the store)",
    ...closed({
      name: str,
      kind: { ...str, description: "`a2a`, `mcp`, `openai`, `claude` (or an embedder's own)" },
      capabilities: closed({
        idempotentStart: bool,
        list: bool,
        stream: bool,
        streamResume: bool,
        push: bool,
        input: bool,
        cancel: bool,
        pollIntervalMs: { ...nullable('integer'), description: "the server's polling guidance (MCP)" },
        notFound: {
          description: "what the remote's not_found means for a job we created",
          oneOf: [{ enum: ['lost', 'expired', 'unknown'] }, closed({ expiresAfterMs: int })],
        },
      }),
      revision: {
        ...nullable('string'),
        description: 'the interface in use (A2A: binding and URL from the agent card)',
      },
      inputSchema: { type: ['object', 'null'], description: 'JSON Schema of the input the target takes' },
      card: {
        description:
          'the A2A agent card as read (texts cut at 500 characters, at most 50 skills); null for other kinds or before it is read',
        oneOf: [
          { type: 'null' },
          closed({
            name: nullable('string'),
            description: nullable('string'),
            version: nullable('string'),
            provider: nullable('string'),
            capabilities: closed({ streaming: bool, pushNotifications: bool }),
            skills: {
              type: 'array',
              items: closed({ id: str, name: nullable('string'), description: nullable('string') }),
            },
          }),
        ],
      },
      tasks: closed({
        capped: {
          ...bool,
          description: 'over 2000 open jobs: the counts and failures are of the oldest 2000',
        },
        active: int,
        byState: {
          type: 'object',
          additionalProperties: false,
          properties: Object.fromEntries(NORMALIZED_STATES.map((s) => [s, int])),
        },
      }),
      lastReconciledAt: {
        ...nullable('integer'),
        description: "end of the latest reconciliation round over the tenant's open jobs here (epoch ms)",
      },
      lastError: {
        description: 'the latest failed reconciliation list call that covered those jobs',
        oneOf: [{ type: 'null' }, closed({ at: int, during: str, code: str, message: str })],
      },
      notificationDelay: {
        type: 'object',
        description: "remote status time → the plane's processing it, per mechanism",
        additionalProperties: false,
        properties: Object.fromEntries(sources.map((s) => [s, delay])),
      },
      recentFailures: {
        type: 'array',
        description:
          'at most 5, newest first: jobs that ended failed, unknown or lost, and open jobs whose start or cancel cannot reach the remote',
        items: closed({
          taskId: str,
          state: { enum: [...NORMALIZED_STATES] },
          terminal: bool,
          at: int,
          code: str,
          message: str,
        }),
      },
    }),
  },
};
