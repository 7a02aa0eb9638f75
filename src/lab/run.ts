import { VirtualClock } from '../core/clock.ts';
import { SeededRandom } from '../core/random.ts';
import { Ledger, type LabMetrics, type TimelineJob } from './ledger.ts';
import { NaiveClient } from './naive-client.ts';
import { usesEngine, validateSettings, type LabSettings } from './settings.ts';
import { SimAgent } from './sim-agent.ts';
import { SimNetwork } from './sim-network.ts';
import { WORLD, generateJobs, pickShownJobs, type JobSpec } from './world-model.ts';

export interface RunResult {
  name: string;
  settings: LabSettings;
  metrics: LabMetrics;
  /** True when the real plane/ engine was the client. */
  engine: boolean;
  /** The sixteen shown jobs, for the page. */
  timeline: TimelineJob[];
  /** Virtual time the run ended at (ms). */
  endedMs: number;
  /** Requests on the wire by kind (not part of the --json metrics; for docs and the page). */
  requestsByKind: Record<string, number>;
}

export interface RunOptions {
  name?: string;
  /** Called now and then with the fraction of the horizon simulated. */
  onProgress?: (fraction: number) => void;
}

/** Everything one run is made of; the engine adapter gets it too. */
export interface World {
  settings: LabSettings;
  clock: VirtualClock;
  jobs: JobSpec[];
  ledger: Ledger;
  net: SimNetwork;
  agent: SimAgent;
  /** Random stream reserved for the client side (the engine's Random port). */
  clientRandom: SeededRandom;
}

export function buildWorld(settings: LabSettings): World {
  validateSettings(settings);
  const root = new SeededRandom(settings.seed);
  // Independent streams: the work, the network and the client never shift each other's draws.
  const jobs = generateJobs(settings.tasks, root.fork());
  const netRandom = root.fork();
  const clientRandom = root.fork();
  const clock = new VirtualClock(0);
  const ledger = new Ledger(jobs, pickShownJobs(jobs));
  const net = new SimNetwork(clock, netRandom, ledger, settings.faults);
  const agent = new SimAgent(clock, net, ledger, jobs, settings.pushRetries);
  if (settings.faults.restart) clock.setTimer(WORLD.restartAtMs, () => agent.restart());
  return { settings, clock, jobs, ledger, net, agent, clientRandom };
}

/** A run is a pure function of its settings (seed included). */
export async function runLab(settings: LabSettings, options: RunOptions = {}): Promise<RunResult> {
  const world = buildWorld(settings);
  const engine = usesEngine(settings);
  if (engine) {
    const { runEngineClient } = await import('./engine-client.ts');
    await runEngineClient(world, options.onProgress);
  } else {
    runNaiveClient(world, options.onProgress);
  }
  return {
    name: options.name ?? 'run',
    settings,
    metrics: world.ledger.metrics(),
    engine,
    timeline: world.ledger.shown(),
    endedMs: world.clock.now(),
    requestsByKind: { ...world.ledger.byKind },
  };
}

/** The baseline clients run synchronously on the virtual clock: no promises, so 10,000 jobs stay fast. */
export function runNaiveClient(world: World, onProgress?: (fraction: number) => void): void {
  const { clock, agent } = world;
  const client = new NaiveClient(clock, agent, world.net, world.ledger, world.jobs, world.settings);
  client.start();
  let steps = 0;
  for (;;) {
    if (client.allLearned() && agent.idle) break;
    const due = clock.nextDue();
    if (due === undefined || due > WORLD.horizonMs) break;
    clock.step();
    if (onProgress && ++steps % 5000 === 0) onProgress(clock.now() / WORLD.horizonMs);
  }
  onProgress?.(1);
}
