import { ApiError, badRequest, notFound, order, page, requireString } from './http.ts';
import type { Json } from './sessions.ts';

/**
 * Agents and environments: the configuration resources a session names. They only need to exist,
 * carry an id (and, for agents, a version that every update bumps) and list, archive and delete as
 * the SDK expects (README.md, "The SDK surface it serves").
 */
export class Resources {
  readonly agents = new Map<string, Json>();
  readonly environments = new Map<string, Json>();

  constructor(
    private readonly newId: (prefix: string) => string,
    private readonly iso: () => string,
  ) {}

  /** Answers `/v1/agents…` and `/v1/environments…`; undefined when the route is not one of them. */
  route(
    kind: string | undefined,
    id: string | undefined,
    sub: string | undefined,
    method: string,
    body: Json,
    query: URLSearchParams,
  ): Json | undefined {
    if (kind === 'agents') return this.agent(id, sub, method, body, query);
    if (kind === 'environments') return this.environment(id, sub, method, body, query);
    return undefined;
  }

  private agent(
    id: string | undefined,
    sub: string | undefined,
    method: string,
    body: Json,
    query: URLSearchParams,
  ): Json | undefined {
    const iso = this.iso;
    if (!id && method === 'POST') {
      const agent: Json = {
        type: 'agent',
        id: this.newId('agent_'),
        version: 1,
        name: requireString(body, 'name'),
        model: body['model'] ?? 'claude-sonnet-4-6',
        system: body['system'] ?? null,
        tools: body['tools'] ?? [],
        mcp_servers: body['mcp_servers'] ?? [],
        skills: body['skills'] ?? [],
        metadata: body['metadata'] ?? {},
        created_at: iso(),
        updated_at: iso(),
        archived_at: null,
      };
      if (typeof body['model'] !== 'string' && typeof body['model'] !== 'object')
        throw badRequest('model: required');
      this.agents.set(agent['id'] as string, agent);
      return agent;
    }
    if (!id && method === 'GET') return listOf(this.agents, query);
    const agent = this.agents.get(id!);
    if (!agent) throw notFound('agent', id!);
    if (!sub && method === 'GET') return agent;
    if (!sub && method === 'POST') {
      if (agent['archived_at'] !== null)
        throw new ApiError(409, 'invalid_request_error', `agent ${id} is archived`);
      Object.assign(agent, body, { version: (agent['version'] as number) + 1, updated_at: iso() });
      return agent;
    }
    if (sub === 'archive' && method === 'POST') return Object.assign(agent, { archived_at: iso() });
    return undefined;
  }

  private environment(
    id: string | undefined,
    sub: string | undefined,
    method: string,
    body: Json,
    query: URLSearchParams,
  ): Json | undefined {
    const iso = this.iso;
    if (!id && method === 'POST') {
      const env: Json = {
        type: 'environment',
        id: this.newId('env_'),
        name: requireString(body, 'name'),
        description: body['description'] ?? '',
        config: body['config'] ?? { type: 'cloud' },
        metadata: body['metadata'] ?? {},
        created_at: iso(),
        updated_at: iso(),
        archived_at: null,
      };
      this.environments.set(env['id'] as string, env);
      return env;
    }
    if (!id && method === 'GET') return listOf(this.environments, query);
    const env = this.environments.get(id!);
    if (!env) throw notFound('environment', id!);
    if (!sub && method === 'GET') return env;
    if (!sub && method === 'POST') return Object.assign(env, body, { updated_at: iso() });
    if (!sub && method === 'DELETE') {
      this.environments.delete(id!);
      return { id, type: 'environment_deleted' };
    }
    if (sub === 'archive' && method === 'POST') return Object.assign(env, { archived_at: iso() });
    return undefined;
  }
}

function listOf(map: Map<string, Json>, query: URLSearchParams): Json {
  const list = [...map.values()].filter(
    (x) => query.get('include_archived') === 'true' || x['archived_at'] === null,
  );
  const { data, next_page } = page(order(query) === 'desc' ? list.reverse() : list, query, 20);
  return { data, next_page };
}
