import {
  EXAMPLE_ROWS,
  MISSIONS,
  exampleSettings,
  missionSettings,
  type Mission,
} from '../../src/lab/missions.ts';
import { runLab, type RunResult } from '../../src/lab/run.ts';
import {
  DEFAULT_SETTINGS,
  FAULT_NAMES,
  validateSettings,
  withSettings,
  type LabSettings,
} from '../../src/lab/settings.ts';
import { starText } from '../../src/lab/suite.ts';
import { drawTimeline } from './lab-canvas.ts';

/**
 * The lab page: the same simulation code as `taskplane lab`, bundled for the browser (the real engine
 * included). Missions load their broken setup; stars are kept in localStorage under STARS_KEY.
 */
const STARS_KEY = 'taskplane.lab.stars';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $('controls') as HTMLFormElement;
const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;

let current: Mission | null = null;

function loadStars(): Record<string, number> {
  try {
    return JSON.parse(localStorage.getItem(STARS_KEY) ?? '{}') as Record<string, number>;
  } catch {
    return {};
  }
}

function saveStars(id: number, stars: number): void {
  const all = loadStars();
  all[String(id)] = Math.max(all[String(id)] ?? 0, stars);
  localStorage.setItem(STARS_KEY, JSON.stringify(all));
}

function renderMissions(): void {
  const box = $('missions');
  const best = loadStars();
  box.innerHTML = '';
  const free = document.createElement('button');
  free.type = 'button';
  free.className = 'secondary' + (current === null ? ' active' : '');
  free.textContent = 'Free play';
  free.onclick = () => selectMission(null);
  box.append(free);
  for (const m of MISSIONS) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'secondary' + (current?.id === m.id ? ' active' : '');
    b.dataset.mission = String(m.id);
    b.textContent = `${m.id}. ${m.title} ${starText(best[String(m.id)] ?? 0)}`;
    b.onclick = () => selectMission(m);
    box.append(b);
  }
}

function setForm(s: LabSettings): void {
  field('delivery').value = s.delivery;
  field('onDrop').value = s.onDrop;
  field('pushRetries').value = String(s.pushRetries);
  field('reconcileMin').value = String(s.reconcileMin);
  field('pollS').value = String(s.pollS);
  field('seed').value = String(s.seed);
  (field('idempotent') as HTMLInputElement).checked = s.idempotent;
  for (const f of FAULT_NAMES) (field(f) as HTMLInputElement).checked = s.faults[f];
}

function readForm(): LabSettings {
  const n = (name: string) => Number(field(name).value);
  const faults = { ...DEFAULT_SETTINGS.faults };
  for (const f of FAULT_NAMES) faults[f] = (field(f) as HTMLInputElement).checked;
  return validateSettings(
    withSettings(DEFAULT_SETTINGS, {
      delivery: field('delivery').value as LabSettings['delivery'],
      onDrop: field('onDrop').value as LabSettings['onDrop'],
      pushRetries: n('pushRetries'),
      reconcileMin: n('reconcileMin'),
      pollS: n('pollS'),
      seed: n('seed'),
      idempotent: (field('idempotent') as HTMLInputElement).checked,
      faults,
    }),
  );
}

function selectMission(m: Mission | null): void {
  current = m;
  setForm(m ? missionSettings(m, 'broken') : DEFAULT_SETTINGS);
  // Mission 3: the agent is untouchable, and its push retries are the agent's.
  field('pushRetries').disabled = m?.id === 3;
  ($('example-select') as HTMLSelectElement).value = '';
  $('mission-brief').textContent = m
    ? `Mission ${m.id}: ${m.brief}`
    : 'Free play. Pick a mission to load its broken setup.';
  $('thresholds').textContent = m ? m.thresholds.join(' · ') : '';
  $('stars').textContent = '';
  renderMissions();
}

function showFigures(r: RunResult): void {
  const m = r.metrics;
  const set = (id: string, text: string) => ($(id).textContent = text);
  set('fig-client', r.engine ? 'engine (plane/)' : 'naive baseline');
  set('fig-tasks', String(m.tasks));
  set('fig-duplicates', String(m.duplicates));
  set('fig-unknown', `${m.unknownOutcomes} (${m.unknownPct} %)`);
  set('fig-lost', String(m.lostOutcomes));
  set('fig-missed', String(m.missedInputs));
  set('fig-rpt', m.requestsPerTask.toFixed(2));
  set('fig-rpt-list', m.requestsPerTaskListBased.toFixed(2));
  set('fig-absorbed', String(m.duplicatesAbsorbed));
  set('fig-resubmitted', String(m.resubmitted));
  set('fig-delay', `${m.meanNotifyDelayS} s`);
}

async function run(): Promise<void> {
  const status = $('status');
  let settings: LabSettings;
  try {
    settings = readForm();
  } catch (err) {
    status.textContent = err instanceof Error ? err.message : String(err);
    return;
  }
  ($('run') as HTMLButtonElement).disabled = true;
  status.textContent = 'running…';
  const mission = current;
  try {
    const result = await runLab(settings, { name: mission ? `mission:${mission.id}` : 'custom' });
    drawTimeline($('lab-canvas') as HTMLCanvasElement, result);
    showFigures(result);
    if (mission) {
      const stars = mission.stars(result.metrics, settings);
      saveStars(mission.id, stars);
      $('stars').textContent = stars > 0 ? starText(stars) : 'goal not met';
      $('stars').dataset.stars = String(stars);
      renderMissions();
    }
    status.textContent = `done: ${result.name}, seed ${settings.seed}, ended at minute ${Math.round(result.endedMs / 60000)}`;
  } catch (err) {
    status.textContent = `failed: ${err instanceof Error ? err.message : String(err)}`;
  } finally {
    ($('run') as HTMLButtonElement).disabled = false;
  }
}

const exampleSelect = $('example-select') as HTMLSelectElement;
for (const row of EXAMPLE_ROWS) exampleSelect.add(new Option(`${row.label} (band: ${row.band})`, row.name));
exampleSelect.addEventListener('change', () => {
  const row = EXAMPLE_ROWS.find((r) => r.name === exampleSelect.value);
  if (!row) return;
  selectMission(null);
  exampleSelect.value = row.name;
  setForm(exampleSettings(row));
  $('mission-brief').textContent =
    `Worked example: ${row.label}. Seed 004 says ${row.seedFigure}; band ${row.band}.`;
  void run();
});

form.addEventListener('submit', (e) => {
  e.preventDefault();
  void run();
});
selectMission(null);
void run();
