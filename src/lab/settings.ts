/**
 * One lab run's settings. A run is a pure function of these (seed included): same settings, same
 * figures, in Node and in the browser.
 */
import { configError } from '../core/errors.ts';

export type Delivery = 'stream' | 'push' | 'poll';
export type OnDrop = 'resend' | 'reattach';
export type FaultName = 'flaps' | 'outage' | 'lostacks' | 'restart';
export const FAULT_NAMES: readonly FaultName[] = ['flaps', 'outage', 'lostacks', 'restart'];

/**
 * Which client runs: `engine` is the real plane/ engine through a simulated connector; `naive` is the
 * baseline client that lives in lab/ only. `auto` picks the engine whenever the settings describe
 * something the engine does (reattach, an idempotent handler, no fixed-interval polling), else naive.
 */
export type ClientChoice = 'auto' | 'engine' | 'naive';

export interface LabSettings {
  /** Number of delegated jobs. @default 240 */
  tasks: number;
  /** @default 4 (the worked example) */
  seed: number;
  /** How the client receives updates. @default 'push' */
  delivery: Delivery;
  /** What the client does when a stream drops. @default 'reattach' */
  onDrop: OnDrop;
  /** The agent's push retries K (base 5 s, doubling). @default 3 */
  pushRetries: number;
  /** Reconciliation interval in minutes; 0 = none. @default 10 */
  reconcileMin: number;
  /** Polling interval in seconds (delivery poll). @default 15 */
  pollS: number;
  /** The client's completion handler records (task, state) and absorbs repeats. @default true */
  idempotent: boolean;
  faults: Record<FaultName, boolean>;
  /**
   * Engine only: whether a verified push is followed by a GetTask (`always`, the engine's default,
   * a push is a wake-up signal, docs/a2a-notes.md) or its versioned payload is used (`when-incomplete`). The lab's agent
   * pushes the whole versioned Task, so the lab uses the payload: with `always` every push costs one
   * more request (seed 4, push-reconcile row: 1.5 → 2.9 requests per task). @default 'when-incomplete'
   */
  webhookFetch: 'always' | 'when-incomplete';
  /** @default 'auto' */
  client: ClientChoice;
}

export const DEFAULT_SETTINGS: LabSettings = {
  tasks: 240,
  seed: 4,
  delivery: 'push',
  onDrop: 'reattach',
  pushRetries: 3,
  reconcileMin: 10,
  pollS: 15,
  idempotent: true,
  faults: { flaps: true, outage: true, lostacks: true, restart: true },
  webhookFetch: 'when-incomplete',
  client: 'auto',
};

export type SettingsPatch = Partial<Omit<LabSettings, 'faults'>> & {
  faults?: Partial<Record<FaultName, boolean>>;
};

export function withSettings(base: LabSettings, patch: SettingsPatch): LabSettings {
  return { ...base, ...patch, faults: { ...base.faults, ...patch.faults } };
}

export function faultsOnly(...names: FaultName[]): Record<FaultName, boolean> {
  return {
    flaps: names.includes('flaps'),
    outage: names.includes('outage'),
    lostacks: names.includes('lostacks'),
    restart: names.includes('restart'),
  };
}

/** Validates a full settings object; a `config` error names the field (as the CLI flag name). */
export function validateSettings(s: LabSettings): LabSettings {
  const int = (field: string, v: number, min: number, max: number) => {
    if (!Number.isInteger(v) || v < min || v > max)
      throw configError(field, `must be an integer in ${min}..${max}`);
  };
  int('tasks', s.tasks, 1, 100_000);
  int('seed', s.seed, 0, 0xffffffff);
  int('push-retries', s.pushRetries, 0, 12);
  if (!(Number.isFinite(s.reconcileMin) && s.reconcileMin >= 0 && s.reconcileMin <= 240)) {
    throw configError('reconcile-min', 'must be a number of minutes in 0..240 (0 = off)');
  }
  if (!(Number.isFinite(s.pollS) && s.pollS >= 1 && s.pollS <= 3600))
    throw configError('poll-s', 'must be a number of seconds in 1..3600');
  if (!['stream', 'push', 'poll'].includes(s.delivery))
    throw configError('delivery', 'must be stream, push or poll');
  if (!['resend', 'reattach'].includes(s.onDrop)) throw configError('on-drop', 'must be resend or reattach');
  if (!['always', 'when-incomplete'].includes(s.webhookFetch))
    throw configError('webhook-fetch', 'must be always or when-incomplete');
  if (!['auto', 'engine', 'naive'].includes(s.client))
    throw configError('client', 'must be auto, engine or naive');
  return s;
}

/** Parses `flaps,outage,lostacks,restart` (also `none` and `all`). */
export function parseFaults(text: string): Record<FaultName, boolean> {
  const faults = faultsOnly();
  const words = text
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter(Boolean);
  for (const w of words) {
    if (w === 'none') continue;
    if (w === 'all') return faultsOnly(...FAULT_NAMES);
    if (!(FAULT_NAMES as readonly string[]).includes(w)) {
      throw configError('faults', `unknown fault "${w}" (use ${FAULT_NAMES.join(', ')}, all or none)`);
    }
    faults[w as FaultName] = true;
  }
  return faults;
}

export function describeFaults(f: Record<FaultName, boolean>): string {
  const on = FAULT_NAMES.filter((n) => f[n]);
  return on.length ? on.join(',') : 'none';
}

/** Whether these settings run the real engine. */
export function usesEngine(s: LabSettings): boolean {
  if (s.client !== 'auto') return s.client === 'engine';
  // onDrop only matters for streams; push and the engine's reconciliation have nothing to resend.
  return s.delivery !== 'poll' && (s.delivery !== 'stream' || s.onDrop === 'reattach') && s.idempotent;
}
