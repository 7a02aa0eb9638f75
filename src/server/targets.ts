import type { Clock } from '../core/clock.ts';
import { configError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { CardSignatureOptions } from '../connectors/a2a/card-trust.ts';
import type { Random } from '../core/random.ts';
import type { Connector } from '../connectors/connector.ts';
import { A2AConnector } from '../connectors/a2a/a2a-connector.ts';
import { checkInputSchema } from '../plane/acceptance.ts';
import { openaiTarget } from './target-kinds/openai.ts';
import { claudeTarget } from './target-kinds/claude.ts';
import { mcpTarget } from './target-kinds/mcp.ts';

/**
 * Targets: the remotes a plane tracks jobs on, each of one kind (`a2a`, and each further connector's
 * kind). An operator names them on the command line (`--target name=url`, the URL's scheme picks the
 * kind) or in a targets file (JSON: `{ "<name>": { "kind": "…", …settings } }`). Secrets are never
 * written in the file: a setting whose value is `{ "env": "VAR" }` is read from that environment
 * variable, which the caller passes in (`ConnectorDeps.env`; the CLI passes its environment, library
 * code never reads it).
 */

/** One target as the operator wrote it: its kind and that kind's settings. */
export interface TargetConfig {
  kind: string;
  [setting: string]: unknown;
}

/** What building a connector may use, besides its settings. */
export interface ConnectorDeps {
  clock: Clock;
  random: Random;
  logger: Logger;
  /** Values for settings written as `{ "env": "VAR" }`. @default {} */
  env: Readonly<Record<string, string | undefined>>;
}

export interface TargetKind {
  /** URL schemes that pick this kind in `--target name=<scheme>://…`. */
  readonly schemes: readonly string[];
  /** The settings `--target name=<url>` stands for. */
  fromUrl(url: string): TargetConfig;
  /** Checks the settings (a `config` error names `targets.<name>.<setting>`) and builds the connector. */
  connect(name: string, config: TargetConfig, deps: ConnectorDeps): Connector;
}

const NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/i;

/** Reads settings of one target, naming `targets.<name>.<setting>` in every error. */
export class TargetSettings {
  constructor(
    readonly name: string,
    private readonly config: TargetConfig,
    private readonly env: ConnectorDeps['env'],
    /** Where these settings sit inside the target's, for nested ones (`headers.`). */
    private readonly prefix = '',
  ) {}

  field(setting: string): string {
    return `targets.${this.name}.${this.prefix}${setting}`;
  }

  /** A string setting, or a `{ "env": "VAR" }` reference to one (which must then be set). */
  string(setting: string, opts: { required: true }): string;
  string(setting: string, opts?: { required?: boolean }): string | undefined;
  string(setting: string, opts: { required?: boolean } = {}): string | undefined {
    const value = this.config[setting];
    if (value === undefined) {
      if (opts.required) throw configError(this.field(setting), 'is required');
      return undefined;
    }
    if (typeof value === 'string') return value;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const ref = (value as { env?: unknown }).env;
      if (typeof ref === 'string' && Object.keys(value).length === 1) {
        const v = this.env[ref];
        // Name the variable, never its value.
        if (v === undefined || v === '')
          throw configError(this.field(setting), `environment variable ${ref} is not set`);
        return v;
      }
    }
    throw configError(this.field(setting), 'must be a string or {"env": "VARIABLE"}');
  }

  url(setting: string, schemes: readonly string[] = ['http:', 'https:']): string {
    const text = this.string(setting, { required: true });
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      throw configError(this.field(setting), 'must be an absolute URL');
    }
    if (!schemes.includes(parsed.protocol))
      throw configError(
        this.field(setting),
        `must be a ${schemes.map((s) => s.slice(0, -1)).join(' or ')} URL`,
      );
    return text;
  }

  int(setting: string, min: number): number | undefined {
    const value = this.config[setting];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
      throw configError(this.field(setting), `must be an integer >= ${min}`);
    return value;
  }

  boolean(setting: string): boolean | undefined {
    const value = this.config[setting];
    if (value === undefined) return undefined;
    if (typeof value !== 'boolean') throw configError(this.field(setting), 'must be true or false');
    return value;
  }

  oneOf<T extends string>(setting: string, allowed: readonly T[]): T | undefined {
    const value = this.config[setting];
    if (value === undefined) return undefined;
    if (!allowed.includes(value as T))
      throw configError(this.field(setting), `must be one of ${allowed.join(', ')}`);
    return value as T;
  }

  /** An object of string settings (headers), each a string or an env reference. */
  strings(setting: string): Record<string, string> | undefined {
    const value = this.config[setting];
    if (value === undefined) return undefined;
    if (!value || typeof value !== 'object' || Array.isArray(value))
      throw configError(this.field(setting), 'must be an object');
    const inner = new TargetSettings(
      this.name,
      { kind: this.config.kind, ...value },
      this.env,
      `${this.prefix}${setting}.`,
    );
    const out: Record<string, string> = {};
    for (const key of Object.keys(value)) out[key] = inner.string(key, { required: true });
    return out;
  }

  /** A JSON Schema setting (a target's input schema): an object that compiles. */
  schema(setting: string): Record<string, unknown> | undefined {
    const value = this.config[setting];
    return value === undefined ? undefined : checkInputSchema(this.field(setting), value);
  }

  /** Refuses settings this kind does not know (a typo would otherwise be silently ignored). */
  only(known: readonly string[]): void {
    for (const key of Object.keys(this.config))
      if (key !== 'kind' && !known.includes(key))
        throw configError(
          this.field(key),
          `unknown setting for kind ${this.config.kind} (known: ${known.join(', ')})`,
        );
  }
}

const a2aTarget: TargetKind = {
  schemes: ['http:', 'https:'],
  fromUrl: (url) => ({ kind: 'a2a', baseUrl: url }),
  connect(name, config, deps) {
    const s = new TargetSettings(name, config, deps.env);
    s.only([
      'baseUrl',
      'headers',
      'timeoutMs',
      'preferBinding',
      'cardTtlMs',
      'idempotentStart',
      'webhookSigningSecret',
      'inputSchema',
      'cardSignatures',
      'allowPrivateInterfaces',
    ]);
    const headers = s.strings('headers');
    const timeoutMs = s.int('timeoutMs', 1);
    const preferBinding = s.oneOf('preferBinding', ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const);
    const cardTtlMs = s.int('cardTtlMs', 0);
    const idempotentStart = s.boolean('idempotentStart');
    const allowPrivateInterfaces = s.boolean('allowPrivateInterfaces');
    const webhookSigningSecret = s.string('webhookSigningSecret');
    const inputSchema = s.schema('inputSchema');
    // Checked (keys imported, a `config` error naming the field) when the connector is built.
    const cardSignatures = config.cardSignatures as CardSignatureOptions | undefined;
    return new A2AConnector({
      target: name,
      clock: deps.clock,
      baseUrl: s.url('baseUrl'),
      ...(headers ? { headers } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(preferBinding ? { preferBinding } : {}),
      ...(cardTtlMs !== undefined ? { cardTtlMs } : {}),
      ...(idempotentStart !== undefined ? { idempotentStart } : {}),
      ...(webhookSigningSecret ? { webhookSigningSecret } : {}),
      ...(inputSchema ? { inputSchema } : {}),
      ...(cardSignatures !== undefined ? { cardSignatures } : {}),
      ...(allowPrivateInterfaces !== undefined ? { allowPrivateInterfaces } : {}),
      logger: deps.logger,
    });
  },
};

/** Every kind of target this build knows, by kind. */
export const TARGET_KINDS: Readonly<Record<string, TargetKind>> = {
  a2a: a2aTarget,
  openai: openaiTarget,
  claude: claudeTarget,
  mcp: mcpTarget,
};

function kindOfUrl(url: string): TargetConfig | null {
  const scheme = /^([a-z][a-z0-9+.-]*:)\/\//i.exec(url)?.[1]?.toLowerCase();
  if (!scheme) return null;
  for (const kind of Object.values(TARGET_KINDS)) if (kind.schemes.includes(scheme)) return kind.fromUrl(url);
  return null;
}

function checkName(name: string, where: string): void {
  if (!NAME.test(name))
    throw configError(
      where,
      `target name '${name.slice(0, 64)}': letters, digits, '_', '.', '-' (at most 63)`,
    );
}

/** Parses `name=url,name=url` (TASKPLANE_TARGETS, --target); the URL's scheme picks the kind. */
export function parseTargets(text: string | undefined): Record<string, TargetConfig> {
  const out: Record<string, TargetConfig> = {};
  const schemes = Object.values(TARGET_KINDS).flatMap((k) => k.schemes.map((s) => `${s}//`));
  for (const entry of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = entry.indexOf('=');
    const name = entry.slice(0, i).trim();
    const config = i > 0 ? kindOfUrl(entry.slice(i + 1).trim()) : null;
    if (!config)
      throw configError('target', `'${entry}': expected name=URL with a URL starting ${schemes.join(' | ')}`);
    checkName(name, 'target');
    out[name] = config;
  }
  return out;
}

/** Parses a targets file: `{ "<name>": { "kind": "a2a" | …, …settings } }`. Settings are checked when connected. */
export function parseTargetsFile(text: string, path: string): Record<string, TargetConfig> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw configError(
      'targets-file',
      `${path} is not JSON (${err instanceof Error ? err.message : 'parse error'})`,
    );
  }
  if (!json || typeof json !== 'object' || Array.isArray(json))
    throw configError('targets-file', `${path} must hold an object of targets by name`);
  const out: Record<string, TargetConfig> = {};
  for (const [name, config] of Object.entries(json)) {
    checkName(name, `targets.${name}`);
    if (!config || typeof config !== 'object' || Array.isArray(config))
      throw configError(`targets.${name}`, 'must be an object with a kind');
    const kind = (config as { kind?: unknown }).kind;
    if (typeof kind !== 'string' || !(kind in TARGET_KINDS))
      throw configError(`targets.${name}.kind`, `must be one of ${Object.keys(TARGET_KINDS).join(', ')}`);
    out[name] = config as TargetConfig;
  }
  return out;
}

/**
 * Parses `name=whsec_…,name=whsec_…` (TASKPLANE_TARGET_SIGNING_SECRETS): each A2A target's Standard
 * Webhooks secret, for agents that sign their pushes. Every name must be a configured target.
 */
export function parseTargetSigningSecrets(
  text: string | undefined,
  targets: ReadonlySet<string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const i = entry.indexOf('=');
    const name = entry.slice(0, i).trim();
    // Never echo the entry, nor its name part: a malformed entry may be all secret.
    if (i <= 0 || !targets.has(name))
      throw configError(
        'TASKPLANE_TARGET_SIGNING_SECRETS',
        `expected target=whsec_… with target one of: ${[...targets].join(', ') || '(none configured)'}`,
      );
    out[name] = entry.slice(i + 1).trim();
  }
  return out;
}

/** Builds the connector of one configured target. */
export function connectTarget(name: string, config: TargetConfig, deps: ConnectorDeps): Connector {
  const kind = TARGET_KINDS[config.kind];
  if (!kind)
    throw configError(`targets.${name}.kind`, `must be one of ${Object.keys(TARGET_KINDS).join(', ')}`);
  return kind.connect(name, config, deps);
}
