import type { Clock } from '../core/clock.ts';
import { newId } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { AgentScope, AgentTaskStore, PushConfigRecord } from '../store/store.ts';
import { inScope } from '../store/store-query.ts';
import { checkPushHeaderFields } from '../protocols/a2a/decode.ts';
import { A2AError, invalidParams } from '../protocols/a2a/errors.ts';
import type {
  ListTaskPushNotificationConfigsResponse,
  TaskPushNotificationConfig,
} from '../protocols/a2a/types.ts';

/**
 * Push-config CRUD. Credentials are stored so the outbox can send them and are never returned: Get and
 * List answer `authentication: {scheme}` only (A2A#1681, the redaction the v1.1 epic proposes).
 */
export class PushConfigs {
  constructor(
    private readonly store: AgentTaskStore,
    private readonly clock: Clock,
    private readonly random: Random,
  ) {}

  /** `beforeStore` runs once the request is valid, just before the config is stored. */
  async create(
    taskId: string,
    scope: AgentScope,
    cfg: TaskPushNotificationConfig,
    beforeStore?: () => Promise<void>,
    /** The A2A version the request spoke, when not 1.0: its pushes get that version's bodies. */
    protocolVersion?: string,
  ): Promise<TaskPushNotificationConfig> {
    // Only the scheme is checked here; the SSRF check runs at dispatch time, after DNS resolution,
    // so it covers every registration path and DNS changes after registration (a2a-python#1164).
    let url: URL;
    try {
      url = new URL(cfg.url);
    } catch {
      throw invalidParams('url', 'must be an absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw invalidParams('url', 'must be http or https');
    // The wire decoders already refuse these; a config built in code must not slip past either.
    checkPushHeaderFields(cfg);
    const record: PushConfigRecord = {
      id: cfg.id || newId(this.clock, this.random, 'pcfg_'),
      taskId,
      owner: scope.owner,
      tenant: scope.tenant,
      url: cfg.url,
      token: cfg.token ?? null,
      authentication: cfg.authentication
        ? {
            scheme: cfg.authentication.scheme,
            ...(cfg.authentication.credentials !== undefined
              ? { credentials: cfg.authentication.credentials }
              : {}),
          }
        : null,
      createdAt: this.clock.now(),
      ...(protocolVersion ? { protocolVersion } : {}),
    };
    const existing = await this.store.getPushConfig(taskId, record.id);
    if (existing && !inScope(existing, scope)) throw invalidParams('id', 'is already in use');
    await beforeStore?.();
    return toWire(await this.store.putPushConfig(record));
  }

  async get(taskId: string, id: string, scope: AgentScope): Promise<TaskPushNotificationConfig> {
    const record = await this.store.getPushConfig(taskId, id);
    if (!record || !inScope(record, scope))
      throw new A2AError('TaskNotFoundError', 'Push notification config not found', {
        metadata: { taskId, configId: id },
      });
    return toWire(record);
  }

  async list(
    taskId: string,
    scope: AgentScope,
    pageSize?: number,
    pageToken?: string,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const all = (await this.store.listPushConfigs(taskId)).filter((c) => inScope(c, scope));
    const start = pageToken ? Number(pageToken) : 0;
    if (!Number.isInteger(start) || start < 0)
      throw invalidParams('pageToken', 'is not a token this server issued');
    const size = pageSize && pageSize > 0 ? pageSize : 100;
    const page = all.slice(start, start + size);
    const next = start + size < all.length ? String(start + size) : '';
    return { configs: page.map(toWire), nextPageToken: next };
  }

  /** Idempotent (A2A 1.0, execution mode: Delete MUST be idempotent). */
  async delete(taskId: string, id: string, scope: AgentScope): Promise<void> {
    const record = await this.store.getPushConfig(taskId, id);
    if (record && inScope(record, scope)) await this.store.deletePushConfig(taskId, id);
  }
}

export function toWire(record: PushConfigRecord): TaskPushNotificationConfig {
  return {
    id: record.id,
    taskId: record.taskId,
    url: record.url,
    ...(record.token ? { token: record.token } : {}),
    ...(record.authentication ? { authentication: { scheme: record.authentication.scheme } } : {}),
  };
}
