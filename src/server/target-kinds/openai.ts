import { configError } from '../../core/errors.ts';
import { OpenAIConnector } from '../../connectors/openai/openai-connector.ts';
import type { PriceTable } from '../../connectors/openai/response-snapshot.ts';
import { TargetSettings, type TargetConfig, type TargetKind } from '../targets.ts';

/**
 * Target kind `openai`: background responses of OpenAI's Responses API (docs/plane.md, "OpenAI
 * background responses"). In a targets file:
 *
 * ```json
 * { "gpt": { "kind": "openai", "model": "gpt-5", "apiKey": { "env": "OPENAI_API_KEY" },
 *            "webhookSecret": { "env": "OPENAI_WEBHOOK_SECRET" },
 *            "request": { "instructions": "…", "max_output_tokens": 4000 },
 *            "prices": { "unit": "usd_micros", "inputPerMillionTokens": 1250000, "outputPerMillionTokens": 10000000 },
 *            "incomplete": "failed" } }
 * ```
 *
 * On the command line: `--target gpt=openai+https://api.openai.com/v1?model=gpt-5` (the key from
 * OPENAI_API_KEY).
 */

const KNOWN = [
  'baseUrl',
  'apiKey',
  'webhookSecret',
  'model',
  'request',
  'prices',
  'incomplete',
  'retentionMs',
  'queuedStaleMs',
  'timeoutMs',
  'maxRetries',
] as const;

function prices(
  s: TargetSettings,
  config: TargetConfig,
  name: string,
  env: Record<string, string | undefined>,
): PriceTable | undefined {
  const value = config.prices;
  if (value === undefined) return undefined;
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw configError(
      s.field('prices'),
      'must be an object {unit, inputPerMillionTokens, outputPerMillionTokens}',
    );
  const inner = new TargetSettings(name, { kind: 'openai', ...(value as object) }, env, 'prices.');
  inner.only(['unit', 'inputPerMillionTokens', 'outputPerMillionTokens', 'cachedInputPerMillionTokens']);
  const unit = inner.string('unit', { required: true });
  if (!/^[a-z][a-z0-9_]{0,31}$/.test(unit))
    throw configError(inner.field('unit'), 'must be a lower-case unit name such as usd_micros or cents');
  const rate = (key: string, required: boolean): number | undefined => {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw configError(inner.field(key), 'must be a number >= 0 (price per million tokens in the unit)');
    return v;
  };
  const cached = rate('cachedInputPerMillionTokens', false);
  return {
    unit,
    inputPerMillionTokens: rate('inputPerMillionTokens', true)!,
    outputPerMillionTokens: rate('outputPerMillionTokens', true)!,
    ...(cached !== undefined ? { cachedInputPerMillionTokens: cached } : {}),
  };
}

export const openaiTarget: TargetKind = {
  schemes: ['openai+https:', 'openai+http:'],
  fromUrl(url) {
    const parsed = new URL(url.replace(/^openai\+/i, ''));
    const model = parsed.searchParams.get('model');
    parsed.search = '';
    return {
      kind: 'openai',
      baseUrl: parsed.toString().replace(/\/$/, ''),
      apiKey: { env: 'OPENAI_API_KEY' },
      ...(model ? { model } : {}),
    };
  },
  connect(name, config, deps) {
    const s = new TargetSettings(name, config, deps.env);
    s.only(KNOWN);
    const baseUrl = config.baseUrl === undefined ? undefined : s.url('baseUrl');
    const apiKey = s.string('apiKey', { required: true });
    const webhookSecret = s.string('webhookSecret');
    const model = s.string('model', { required: true });
    const request = config.request;
    if (request !== undefined && (!request || typeof request !== 'object' || Array.isArray(request)))
      throw configError(s.field('request'), 'must be an object of create parameters');
    for (const key of ['background', 'stream', 'store', 'model', 'stream_options'])
      if (request && key in request)
        throw configError(
          s.field(`request.${key}`),
          'is set by the connector (background, stream and store are always on)',
        );
    const incomplete = s.oneOf('incomplete', ['failed', 'succeeded'] as const);
    const retentionMs = s.int('retentionMs', 1);
    const queuedStaleMs = s.int('queuedStaleMs', 1);
    const timeoutMs = s.int('timeoutMs', 1);
    const maxRetries = s.int('maxRetries', 0);
    const table = prices(s, config, name, deps.env);
    return new OpenAIConnector({
      target: name,
      clock: deps.clock,
      apiKey,
      model,
      ...(baseUrl ? { baseUrl } : {}),
      ...(webhookSecret ? { webhookSecret } : {}),
      ...(request ? { request: request as Record<string, unknown> } : {}),
      ...(incomplete ? { incomplete } : {}),
      ...(retentionMs !== undefined ? { retentionMs } : {}),
      ...(queuedStaleMs !== undefined ? { queuedStaleMs } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(maxRetries !== undefined ? { maxRetries } : {}),
      ...(table ? { prices: table } : {}),
    });
  },
};
