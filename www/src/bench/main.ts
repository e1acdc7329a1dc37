// The benchmark page: set up a run, watch it stream, read the results, keep and compare runs.

import { wireThemeSwitch } from '../boot';
import '../style.css';
import { bench, checkBenchOptions, redactUrl, type Progress, type RequestRecord } from 'tpsmeter';
import type { LocalEngine } from 'tpsmeter/engine';
import { allowOrigin, isAllowed, originOf } from '../common/csp';
import { download, importFile, levelLabel, runCsv } from '../common/files';
import { el, tableWrap } from '../common/dom';
import { date, num } from '../common/format';
import { short } from '../common/limits';
import { pinnedSha256, sameOriginModel } from '../common/models';
import { decodeFragment, encodeReport } from '../common/permalink';
import { LOCAL_PRESET, SAME_ORIGIN_PRESET, preset } from '../common/presets';
import { deleteRun, getRun, holdRunLock, listRuns, markInterrupted, newId, putRecord, putRun, records, type StoredRun } from '../common/store';
import { renderCompare } from './compare';
import { DEFAULTS, FORM_NAMES, RunForm, settingsOf, validate } from './form';
import type { Chart } from './charts';
import { headline, headlineOfRecords, headlineOfRows, renderRun, type ResultsView } from './results';

wireThemeSwitch();

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = new RunForm($('run-form') as HTMLFormElement);
const live = $('live');
const progressText = $('progress');
const progressBar = $<HTMLProgressElement>('progress-bar');
const answer = $('answer');
const results = $('results');
const resultsBody = $('results-body');
const history = $('history');
const compare = $('compare');
const compareBody = $('compare-body');
const compareButton = $<HTMLButtonElement>('compare-selected');

let view: ResultsView | undefined;
let compareView: { destroy(): void; redraw(): void } | undefined;
let abort: AbortController | undefined;
let engine: { url: string; engine: LocalEngine } | undefined;
const selected = new Set<string>();

function notice(text: string, kind: 'bad' | 'ok' | '' = '', ...extra: Node[]): HTMLElement {
  return el('div', { class: `notice ${kind}`, role: kind === 'bad' ? 'alert' : 'status' }, text, ...extra);
}

function message(e: unknown): string {
  return short(e instanceof Error ? e.message : String(e), 1000);
}

/**
 * Shows a run in the results panel. A run that cannot be drawn (stored by an older version,
 * or edited by hand) shows why, with what can still be done with it: export, delete.
 */
async function show(run: StoredRun): Promise<void> {
  view?.destroy();
  view = undefined;
  let partial: RequestRecord[] = [];
  try {
    partial = run.report || run.rows ? [] : await records(run.id);
    view = renderRun(run, partial);
    resultsBody.replaceChildren(view.root, actions(run, partial));
  } catch (e) {
    view?.destroy();
    view = undefined;
    resultsBody.replaceChildren(
      el('div', { class: 'results', 'data-run': run.id, 'data-render-error': 'true' }, notice(`This run could not be shown: ${message(e)}`, 'bad')),
      actions(run, partial, true),
    );
  }
  results.hidden = false;
  results.dataset.shown = run.id;
  drawCharts(view?.charts ?? []);
}

/** Draws each chart; one that fails says so in its place, and the others still draw. */
function drawCharts(charts: Chart[]): void {
  for (const c of charts) {
    try {
      c.draw();
    } catch (e) {
      c.destroy();
      c.figure.querySelector('.plot')?.replaceChildren(notice(`This chart could not be drawn: ${message(e)}`, 'bad'));
    }
  }
}

/** The file name stem of a run's exports. */
function stemOf(run: StoredRun): string {
  const model = typeof run.settings?.model === 'string' ? run.settings.model : 'run';
  const when = new Date(typeof run.createdAt === 'number' ? run.createdAt : NaN);
  const stamp = Number.isFinite(when.getTime()) ? when.toISOString().slice(0, 19).replace(/[:T]/g, '') : 'undated';
  return `tpsmeter-${(model || 'run').slice(0, 80).replace(/[^\w.-]+/g, '_')}-${stamp}`;
}

/** A button whose click reports a failure beside the buttons instead of throwing. */
function action(row: HTMLElement, text: string, onClick: (button: HTMLButtonElement) => Promise<void> | void): HTMLButtonElement {
  const b = el('button', { type: 'button', text });
  b.addEventListener('click', async () => {
    row.querySelector('.action-error')?.remove();
    try {
      await onClick(b);
    } catch (e) {
      row.append(el('p', { class: 'notice bad action-error', role: 'alert', text: `${text} failed: ${message(e)}` }));
    }
  });
  row.append(b);
  return b;
}

/** Export, permalink, save; `broken`: the run could not be shown, so Delete is offered here too. */
function actions(run: StoredRun, partial: RequestRecord[], broken = false): HTMLElement {
  const row = el('div', { class: 'row', id: 'result-actions' });
  const stem = stemOf(run);
  if (run.report) action(row, 'Export JSON', () => download(`${stem}.json`, JSON.stringify(run.report, null, 2), 'application/json'));
  action(row, 'Export CSV', async () => download(`${stem}.csv`, await runCsv(run.report?.requests ?? partial, run.report ? undefined : run.rows), 'text/csv'));
  if (run.report && !broken) {
    const out = el('input', { type: 'url', readonly: true, id: 'permalink', 'aria-label': 'Permalink', hidden: true });
    action(row, 'Copy permalink', async (link) => {
      const { fragment, trimmed } = await encodeReport(run.report!);
      const url = `${location.origin}${location.pathname}#${fragment}`;
      out.value = url;
      out.hidden = false;
      out.select();
      try {
        await navigator.clipboard.writeText(url);
        link.textContent = trimmed ? 'Copied (per-chunk detail left out)' : 'Copied';
      } catch {
        link.textContent = 'Select the link and copy it';
      }
    });
    row.append(out);
  }
  if (run.source === 'permalink') {
    action(row, 'Save to history', async (save) => {
      await putRun(run);
      save.disabled = true;
      await refreshHistory();
    });
  } else if (broken) {
    action(row, 'Delete this run', async () => {
      await deleteRun(run.id);
      selected.delete(run.id);
      resultsBody.replaceChildren(notice('Deleted.', 'ok'));
      await refreshHistory();
      $('history-h').focus();
    });
  }
  return row;
}

function describeProgress(p: Progress, levels: string[], search: boolean): string {
  const level = levels[p.levelIndex] ?? '';
  const of = p.target ? ` of ${p.target}` : '';
  // A search adds its levels as it goes: the count so far means nothing.
  const which = search ? `Search level ${p.levelIndex + 1}` : `Level ${p.levelIndex + 1}/${p.levels}`;
  return `${which} (${level})${p.warmup ? ', warming up' : ''}: ${p.completed}${of} done, ${p.inFlight} in flight, ${p.failed} failed · ${(p.elapsedMs / 1000).toFixed(1)} s`;
}

let lastPhase = '';
/** Tells screen readers when a level starts (the counts change too often to read out). */
function announcePhase(p: Progress, levels: string[], step: string | undefined): void {
  const phase = `${step ? `${step}, ` : ''}level ${p.levelIndex + 1} of ${p.levels} (${levels[p.levelIndex] ?? ''})${p.warmup ? ', warming up' : ''}`;
  if (phase === lastPhase) return;
  lastPhase = phase;
  $('announce').textContent = `Running ${phase}.`;
}

async function localEngine(url: string, signal: AbortSignal): Promise<LocalEngine> {
  // A lost device or a stopped Worker cannot run again: load a new engine.
  if (engine?.url === url && !engine.engine.failure) return engine.engine;
  await engine?.engine.dispose().catch(() => undefined);
  engine = undefined;
  const { createEngine } = await import('tpsmeter/engine');
  const e = await createEngine({
    model: url,
    sha256: pinnedSha256(url),
    signal,
    onProgress: (p) => {
      if (p.phase === 'start') {
        progressText.textContent = `Starting the local engine (${p.step})…`;
        return;
      }
      progressText.textContent = `Loading the model${p.fromCache ? ' from the cache' : ''}: ${p.percent !== undefined ? `${p.percent.toFixed(0)} %` : `${(p.loaded / 1e6).toFixed(0)} MB`}`;
      if (p.percent !== undefined) progressBar.value = p.percent / 100;
    },
  });
  engine = { url, engine: e };
  return e;
}

async function run(): Promise<void> {
  const s = form.state();
  form.notices.replaceChildren();
  const file = s.promptKind === 'dataset' ? form.pickedDataset() : undefined;
  const problems = validate(s, file);
  // Then the run spec's rules, on each run the form makes, in the form's words.
  for (const settings of problems.length === 0 ? settingsOf(s, file) : []) {
    const refused = await checkBenchOptions(settings, FORM_NAMES);
    if (refused !== undefined) {
      problems.push(`${refused.charAt(0).toUpperCase()}${refused.slice(1)}.`);
      break;
    }
  }
  if (problems.length > 0) {
    form.notices.append(...problems.map((p) => notice(p, 'bad')));
    return;
  }
  // The API (or model) URL, and a dataset's URL when it is fetched.
  const targets = [s.preset === LOCAL_PRESET ? s.modelUrl : s.url];
  if (s.promptKind === 'dataset' && !file) targets.push(s.datasetUrl);
  for (const target of targets) {
    if (!isAllowed(target)) {
      const origin = originOf(target);
      if (!origin) {
        form.notices.append(notice(`${target} is not an http(s) URL.`, 'bad'));
        return;
      }
      const allow = el('button', { type: 'button', text: `Allow ${origin} and reload` });
      allow.addEventListener('click', () => {
        allowOrigin(origin);
        form.save();
        location.reload();
      });
      form.notices.append(
        notice(
          `This page only connects to the API origins of its presets, to servers on this computer (localhost), and to origins you approve on this device; its Content-Security-Policy blocks everything else, so the page cannot be made to send requests, with or without your key, to a server you did not choose. ${origin} is not on the list yet. Approving it adds it to the policy, which takes a reload (your settings are kept; the key is not).`,
          'bad',
          el('div', { class: 'row' }, allow),
        ),
      );
      return;
    }
  }
  const runs = settingsOf(s, file);
  // A tokenizer file picked for this page's session: used over the URL field, never stored.
  tokenizerFile = form.tokenizerFile.files?.[0];
  const apiKey = form.apiKey();
  abort = new AbortController();
  const { signal } = abort;
  form.setRunning(true);
  // Run is disabled under the keyboard user's focus: Stop is what they may want next.
  form.stop.focus();
  live.hidden = false;
  answer.replaceChildren();
  progressBar.value = 0;
  progressText.textContent = 'Starting…';
  const done: StoredRun[] = [];
  try {
    const local = s.preset === LOCAL_PRESET ? await localEngine(s.modelUrl, signal) : undefined;
    for (const [i, settings] of runs.entries()) {
      if (signal.aborted) break;
      // A sweep of input lengths: one run per length, named by it.
      const step = runs.length > 1 ? { label: `input ${i + 1}/${runs.length} (${settings.inputTokens} tokens)`, suffix: ` · ${settings.inputTokens} input tokens` } : undefined;
      const stored = await runOne(s.preset, settings, apiKey, local, s.render, signal, step);
      if (stored) done.push(stored);
    }
    const last = done.at(-1);
    if (last) {
      if (done.length > 1) {
        selected.clear();
        for (const r of done) selected.add(r.id);
        await refreshHistory();
        await showCompare();
      }
      await show(last);
      const target = done.length > 1 ? compare : results;
      target.scrollIntoView({ block: 'start', behavior: 'smooth' });
      target.querySelector<HTMLElement>('h2')?.focus({ preventScroll: true });
    }
  } catch (e) {
    const name = e instanceof Error ? e.name : '';
    const message = e instanceof Error ? e.message : String(e);
    progressText.textContent = '';
    form.notices.append(notice(name === 'AbortError' ? 'Stopped.' : `The run could not start: ${message}`, 'bad'));
  } finally {
    form.setRunning(false);
    abort = undefined;
    if (document.activeElement === form.stop || document.activeElement === document.body) form.run.focus();
    await refreshHistory();
  }
}

/** The tokenizer file picked in the form for the run in progress (not kept anywhere). */
let tokenizerFile: File | undefined;

/**
 * One `bench()`: stored as `running` from the start, each record kept as it finishes, the
 * report when it ends. Resolves to the stored run, or undefined when nothing finished.
 */
async function runOne(
  presetId: string,
  settings: ReturnType<typeof settingsOf>[number],
  apiKey: string | undefined,
  local: LocalEngine | undefined,
  render: boolean,
  signal: AbortSignal,
  step: { label: string; suffix: string } | undefined,
): Promise<StoredRun | undefined> {
  const levelNames = [settings.concurrency ?? 1].flat().map((c) => `c=${c}`);
  const search = settings.findMax !== undefined && settings.findMax !== false;
  const model = local ? local.name : settings.model;
  const stored: StoredRun = {
    id: newId(),
    createdAt: Date.now(),
    title: `${preset(presetId)?.label ?? presetId} · ${model}${step?.suffix ?? ''}`,
    source: 'browser',
    status: 'running',
    // Stored without credentials (user:password@, key=... parameters: the core's redactor,
    // as the CLI's reports); the report's own
    // config, redacted by the package, replaces it when the run ends. Without a dataset's
    // bytes: the report names it (`config.prompt`).
    settings: { ...settings, dataset: undefined, url: await redactUrl(settings.url), model, preset: presetId },
  };
  let saving = Promise.resolve();
  let kept = 0;
  const keptText = $('kept');
  keptText.textContent = '';
  // The run's lock is held before it is stored as running, so no page (this one included)
  // can take it for an interrupted run, and released only after the run's last write has
  // committed (finally, below): a page that gets the lock the moment it is free (one opened
  // while this run went on) takes what it then reads as final.
  const release = await holdRunLock(stored.id);
  const hooks = {
    signal,
    render: render ? answer : undefined,
    onProgress: (p: Progress) => {
      progressText.textContent = (step ? `${step.label} · ` : '') + describeProgress(p, levelNames, search);
      announcePhase(p, levelNames, step?.label);
      const perLevel = p.target ? Math.min(1, p.completed / p.target) : 0;
      progressBar.value = Math.min(1, (p.levelsDone + (p.levelsDone > p.levelIndex ? 0 : perLevel)) / p.levels);
    },
    // Each record is in IndexedDB before the count of kept requests moves: what the page
    // says is kept survives a reload.
    onRecord: (r: RequestRecord) => {
      // A search's levels are known only as they run.
      if (search && typeof r.level_index === 'number' && r.level_index < 64) levelNames[r.level_index] = levelLabel(r.level);
      saving = saving
        .then(() => putRecord(stored.id, r))
        .then(() => {
          kept++;
          keptText.textContent = `${kept} finished requests kept in history`;
        })
        .catch((e: unknown) => {
          keptText.textContent = `could not keep request ${r.id} in history: ${e instanceof Error ? e.message : String(e)}`;
        });
    },
  };
  try {
    await putRun(stored);
    const tokenizer = tokenizerFile ? { tokenizer: tokenizerFile } : {};
    const pending = local
      ? bench({ ...settings, ...tokenizer, api: 'local', url: undefined, model: undefined, engine: local, ...hooks })
      : bench({ ...settings, ...tokenizer, api: settings.api as Exclude<typeof settings.api, 'local'>, apiKey, ...hooks });
    await refreshHistory();
    const report = await pending;
    await saving;
    stored.report = report;
    stored.settings = { ...stored.settings!, url: String(report.config.url ?? stored.settings!.url) };
    stored.status = signal.aborted ? 'cancelled' : 'done';
    await putRun(stored);
    progressText.textContent = `Done: ${report.requests.length} requests.`;
    $('announce').textContent = `Run finished: ${report.requests.length} requests.`;
    lastPhase = '';
    progressBar.value = 1;
    return stored;
  } catch (e) {
    await saving;
    // Nothing finished: keep no empty run.
    if ((await records(stored.id)).length === 0) await deleteRun(stored.id);
    else {
      stored.status = 'interrupted';
      await putRun(stored);
    }
    throw e;
  } finally {
    release();
  }
}

/** Counts `refreshHistory` calls (see there). */
let historyReads = 0;

/**
 * Lists the stored runs. Each row is built on its own: a run whose figures cannot be read
 * (stored by an older version, or edited by hand) is listed with the reason, and can still be
 * opened (which says the same) and deleted, while every other run lists as usual.
 */
async function refreshHistory(): Promise<void> {
  const read = ++historyReads;
  let runs: StoredRun[];
  try {
    runs = await listRuns();
  } catch (e) {
    if (read === historyReads) history.replaceChildren(notice(`History could not be read: ${message(e)}`, 'bad'));
    return;
  }
  for (const id of [...selected]) if (!runs.some((r) => r.id === id)) selected.delete(id);
  compareButton.disabled = selected.size < 2;
  if (runs.length === 0) {
    if (read === historyReads) history.replaceChildren(el('p', { class: 'hint', text: 'No runs yet.' }));
    return;
  }
  const table = el('table', { id: 'history-table' }, el('caption', { text: `${runs.length} runs` }));
  table.append(el('thead', {}, el('tr', {}, ...['compare', 'run', 'when', 'status', 'tok/s per user', 'TTFT ms', ''].map((h) => el('th', { scope: 'col', text: h })))));
  const body = el('tbody');
  for (const r of runs) body.append(await historyRow(r));
  table.append(body);
  // Calls overlap (a run ending in another tab refreshes the table while this page starts
  // up): one that read the history before a later call did must not replace that call's
  // table, or a finished run shows as still running.
  if (read !== historyReads) return;
  history.replaceChildren(tableWrap(table, 'Run history'));
}

async function historyRow(r: StoredRun): Promise<HTMLTableRowElement> {
  const title = short(r.title) || String(r.id);
  let h: ReturnType<typeof headline> | undefined;
  let problem = '';
  try {
    h = r.report ? headline(r.report) : r.rows ? headlineOfRows(r.rows) : r.status !== 'running' ? headlineOfRecords(await records(r.id)) : undefined;
  } catch (e) {
    problem = message(e);
  }
  let when = '';
  try {
    when = date(r.createdAt);
  } catch {
    when = 'unknown';
  }
  const check = el('input', { type: 'checkbox', 'aria-label': `Compare ${title}`, checked: selected.has(r.id) });
  check.addEventListener('change', () => {
    if (check.checked) selected.add(r.id);
    else selected.delete(r.id);
    compareButton.disabled = selected.size < 2;
  });
  const open = el('button', { type: 'button', class: 'link', text: title });
  open.addEventListener('click', () => void show(r));
  const del = el('button', { type: 'button', text: 'Delete', 'aria-label': `Delete ${title}` });
  del.addEventListener('click', async () => {
    try {
      await deleteRun(r.id);
    } catch (e) {
      del.after(notice(`Could not delete it: ${message(e)}`, 'bad'));
      return;
    }
    selected.delete(r.id);
    await refreshHistory();
    // The row (and the focused button) is gone: continue from the section's heading.
    $('history-h').focus();
  });
  const status = `${short(r.status, 40)}${r.source !== 'browser' ? ` (${short(r.source, 40)})` : ''}`;
  return el(
    'tr',
    { 'data-run': String(r.id), 'data-status': short(r.status, 40), 'data-problem': problem ? 'true' : undefined },
    el('td', {}, check),
    el('td', {}, open, problem ? el('p', { class: 'hint', text: `Cannot be read: ${problem}` }) : ''),
    el('td', { text: when }),
    el('td', { text: status }),
    el('td', { class: 'num', text: num(h?.outputTps) }),
    el('td', { class: 'num', text: num(h?.ttftMs) }),
    el('td', {}, del),
  );
}

async function showCompare(): Promise<void> {
  compareView?.destroy();
  compareView = undefined;
  try {
    const runs = (await Promise.all([...selected].map((id) => getRun(id)))).filter((r): r is StoredRun => !!r);
    const parts = await Promise.all(runs.map(async (r) => ({ run: r, partial: r.report || r.rows ? [] : await records(r.id) })));
    compareView = renderCompare(compareBody, parts);
  } catch (e) {
    compareBody.replaceChildren(notice(`These runs could not be compared: ${message(e)}`, 'bad'));
  }
  compare.hidden = false;
  compare.scrollIntoView({ block: 'start', behavior: 'smooth' });
}

/**
 * Imports a file: every cap (size, nesting, string lengths, counts) and the schema are
 * checked before it is stored, so a file that fails leaves nothing behind.
 */
async function importSelected(input: HTMLInputElement): Promise<void> {
  const file = input.files?.[0];
  input.value = '';
  if (!file) return;
  const status = $('import-status');
  status.replaceChildren(notice(`Reading ${short(file.name)}…`));
  let run: StoredRun;
  try {
    const imported = await importFile(file);
    run = {
      id: newId(),
      createdAt: Date.now(),
      source: 'import',
      status: 'done',
      ...(imported.kind === 'report'
        ? { report: imported.report, title: short(`${file.name} · ${String((imported.report.config as { model?: string }).model ?? '')}`) }
        : { rows: imported.rows, title: short(file.name) }),
    };
    await putRun(run);
  } catch (e) {
    status.replaceChildren(notice(`Could not import ${short(file.name)}: ${message(e)}`, 'bad'));
    return;
  }
  await refreshHistory();
  await show(run);
  status.replaceChildren(notice(`Imported ${short(file.name)}.`, 'ok'));
}

async function openPermalink(): Promise<void> {
  if (!location.hash.includes('r=')) return;
  try {
    const decoded = await decodeFragment(location.hash);
    if (!decoded) return;
    const config = decoded.report.config as { api?: string; url?: string; model?: string };
    const run: StoredRun = {
      id: newId(),
      createdAt: Date.now(),
      title: short(`permalink · ${config.model ?? ''}`),
      source: 'permalink',
      status: 'done',
      report: decoded.report,
      trimmed: decoded.trimmed,
    };
    await show(run);
  } catch (e) {
    resultsBody.replaceChildren(notice(`This permalink could not be opened: ${message(e)}`, 'bad'));
    results.hidden = false;
  }
}

form.form.addEventListener('submit', (e) => {
  e.preventDefault();
  void run();
});
form.stop.addEventListener('click', () => abort?.abort());
compareButton.addEventListener('click', () => void showCompare());
$<HTMLInputElement>('import').addEventListener('change', (e) => void importSelected(e.target as HTMLInputElement));
window.addEventListener('tpsmeter-theme', () => {
  drawCharts(view?.charts ?? []);
  try {
    compareView?.redraw();
  } catch {
    // The compare view said what it could when it was built; a theme change adds nothing.
  }
});
window.addEventListener('hashchange', () => void openPermalink());
window.addEventListener('pagehide', () => {
  // A page restored from the back/forward cache loads a new engine.
  const e = engine;
  engine = undefined;
  void e?.engine.dispose().catch(() => undefined);
});

async function start(): Promise<void> {
  const query = new URLSearchParams(location.search);
  const hadSettings = localStorage.getItem('tpsmeter.bench.settings') !== null;
  const filled = form.load(query);
  if (filled.length > 0) {
    form.notices.append(notice(`The link you opened filled in ${filled.join(', ')}. Check the settings before you run: a remembered key goes only to the server it was remembered for.`));
  }
  // Served by `tpsmeter serve --www`: measure that server unless the user chose otherwise.
  const server = await sameOriginModel();
  form.serverModel = server?.id ?? '';
  if (server && !hadSettings && !query.has('preset')) form.applyPreset(SAME_ORIGIN_PRESET, true);
  if (server && form.preset.value === SAME_ORIGIN_PRESET && !form.model.value) form.model.value = server.id;
  // The local engine loads the server's own copy of the model unless the user chose another.
  if (server && !query.has('model') && !query.has('modelUrl') && (!hadSettings || form.modelUrl.value === DEFAULTS.modelUrl)) {
    form.modelUrl.value = server.url;
    form.save();
  }
  const interrupted = await markInterrupted(() => void refreshHistory());
  await refreshHistory();
  if (location.hash.includes('r=')) await openPermalink();
  else if (interrupted[0]) await show(interrupted[0]);
  document.body.dataset.ready = 'true';
}

void start();

