import { configError } from '../../core/errors.ts';
import { ClaudeConnector } from '../../connectors/claude/claude-connector.ts';
import { TargetSettings, type TargetKind } from '../targets.ts';

/**
 * `kind: "claude"`: one Claude Managed Agents agent in one environment. Only in a targets file (no URL
 * form: it needs an agent, an environment and a key):
 *
 * ```json
 * { "research": { "kind": "claude", "agentId": "agent_…", "agentVersion": 3, "environmentId": "env_…",
 *   "apiKey": {"env": "ANTHROPIC_API_KEY"}, "webhookSigningKey": {"env": "CLAUDE_WEBHOOK_SECRET"},
 *   "defaultBudgetCents": 500, "archiveAfterTerminal": true } }
 * ```
 *
 * With `archiveAfterTerminal` the connector sweeps, once at start, the sessions a crash left unarchived.
 *
 * `baseUrl` points it elsewhere than https://api.anthropic.com (the emulator in test/emulators/claude/).
 */
export const claudeTarget: TargetKind = {
  schemes: [],
  fromUrl(url) {
    throw configError('target', `${url.slice(0, 40)}: claude targets are configured in a targets file`);
  },
  connect(name, config, deps) {
    const s = new TargetSettings(name, config, deps.env);
    s.only([
      'agentId',
      'agentVersion',
      'environmentId',
      'apiKey',
      'webhookSigningKey',
      'defaultBudgetCents',
      'archiveAfterTerminal',
      'baseUrl',
      'timeoutMs',
      'maxRetries',
      'reconcileWindowMs',
      'reconcileMaxSessions',
    ]);
    const agentVersion = s.int('agentVersion', 1);
    const webhookSigningKey = s.string('webhookSigningKey');
    const defaultBudgetCents = s.int('defaultBudgetCents', 1);
    const archiveAfterTerminal = s.boolean('archiveAfterTerminal');
    const timeoutMs = s.int('timeoutMs', 1);
    const maxRetries = s.int('maxRetries', 0);
    const reconcileWindowMs = s.int('reconcileWindowMs', 1);
    const reconcileMaxSessions = s.int('reconcileMaxSessions', 1);
    const connector = new ClaudeConnector({
      target: name,
      clock: deps.clock,
      logger: deps.logger,
      agentId: s.string('agentId', { required: true }),
      environmentId: s.string('environmentId', { required: true }),
      apiKey: s.string('apiKey', { required: true }),
      ...(config.baseUrl !== undefined ? { baseUrl: s.url('baseUrl') } : {}),
      ...(agentVersion !== undefined ? { agentVersion } : {}),
      ...(webhookSigningKey !== undefined ? { webhookSigningKey } : {}),
      ...(defaultBudgetCents !== undefined ? { defaultBudgetCents } : {}),
      ...(archiveAfterTerminal !== undefined ? { archiveAfterTerminal } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(maxRetries !== undefined ? { maxRetries } : {}),
      ...(reconcileWindowMs !== undefined ? { reconcileWindowMs } : {}),
      ...(reconcileMaxSessions !== undefined ? { reconcileMaxSessions } : {}),
    });
    if (archiveAfterTerminal)
      // Sessions whose job ended while no plane was there to archive them (a crash in between).
      void connector
        .sweepUnarchived()
        .catch((err: unknown) =>
          deps.logger.warn(
            { target: name, err: err instanceof Error ? err.message : String(err) },
            'archive sweep at start failed; reconciliation retries it',
          ),
        );
    return connector;
  },
};
