// The results view of one run: summary cards with reading-speed bands, the per-level table,
// warnings, charts, the error table, and the export / permalink actions. It renders a full
// report, or (a run cut short by a reload, a CSV import) the per-request rows that exist.

import { measuredIn } from './measured';
import type { Report, RequestRecord } from 'tpsmeter';
import { el, tableWrap } from '../common/dom';
import { answerSeconds, date, duration, median, ms, NONE, num, readingBand } from '../common/format';
import { levelLabel, paintOf, rowLevel, type LevelSpec } from '../common/files';
import { count, DRAW, short } from '../common/limits';
import type { CsvRow, StoredRun } from '../common/store';
import { degradationChart, histogramChart, timelineChart, turnChart, type Chart, type LevelPoint, type Timeline } from './charts';
import { byLoad, findMaxView, passedAt } from './find-max';

type Summary = {
  succeeded?: number;
  failed?: number;
  ttft_ms?: Stat | null;
  e2e_ms?: Stat | null;
  itl_chunk_ms?: Stat | null;
  tpot_ms?: Stat | null;
  output_tps?: Stat | null;
  aggregate_output_tps?: number | null;
  request_throughput?: number | null;
  queue_ms?: Stat | null;
  connect_ms?: Stat | null;
  wait_ms?: Stat | null;
  paint?: { painted_tps?: Stat | null; ttfp_ms?: Stat | null; lag_ms?: Stat | null; tokens_per_frame?: Stat | null; empty_frames?: number } | null;
  errors?: Record<string, number>;
  goodput?: { met?: number; requests_per_s?: number | null } | null;
};
type Stat = { p50?: number; p90?: number; p99?: number; count?: number };

/** The words of the "what this means" line: a long answer, as readers meet them. */
export const ANSWER_WORDS = 3000;

/** The figures of the summary cards, also printed by the headless main job. */
export interface Headline {
  basis: string;
  ttftMs?: number;
  ttftP90Ms?: number;
  outputTps?: number;
  paintedTps?: number;
  e2eMs?: number;
  aggregateTps?: number;
  ok: number;
  failed: number;
}

/** Headline figures of a report: its first (lightest) level, as a user alone would see it. */
export function headline(report: Report): Headline {
  const level = report.levels[0];
  const s = (level?.summary ?? {}) as Summary;
  // A loop, not Math.max(...levels): a spread of more than ~125k arguments overflows the stack.
  let best = 0;
  let ok = 0;
  let failed = 0;
  for (const l of report.levels) {
    const sum = (l.summary ?? {}) as Summary;
    const agg = sum.aggregate_output_tps ?? 0;
    if (agg > best) best = agg;
    ok += sum.succeeded ?? 0;
    failed += sum.failed ?? 0;
  }
  return {
    basis: level ? `at ${levelLabel(level.level)}, p50 of ${s.succeeded ?? 0} requests` : 'no level finished',
    ttftMs: s.ttft_ms?.p50,
    ttftP90Ms: s.ttft_ms?.p90,
    outputTps: s.output_tps?.p50,
    paintedTps: s.paint?.painted_tps?.p50 ?? undefined,
    e2eMs: s.e2e_ms?.p50,
    aggregateTps: best > 0 ? best : undefined,
    ok,
    failed,
  };
}

/** Headline figures from bare records (an interrupted run): medians of per-request values. */
export function headlineOfRecords(records: RequestRecord[]): Headline {
  const ok = records.filter((r) => !r.error && !r.warmup);
  const pick = (f: (r: RequestRecord) => unknown) => median(ok.map(f).filter((x): x is number => typeof x === 'number'));
  return {
    basis: `median of ${ok.length} finished requests`,
    ttftMs: pick((r) => r.metrics?.ttft_ms),
    outputTps: pick((r) => r.metrics?.output_tps),
    paintedTps: pick((r) => paintOf(r)?.painted_tps),
    e2eMs: pick((r) => r.metrics?.e2e_ms),
    ok: ok.length,
    failed: records.filter((r) => r.error && !r.warmup).length,
  };
}

export function headlineOfRows(rows: CsvRow[]): Headline {
  const ok = rows.filter((r) => !r.error_class && r.warmup !== 'true');
  const pick = (c: string) => median(ok.map((r) => Number.parseFloat(r[c] ?? '')).filter(Number.isFinite));
  return {
    basis: `median of ${ok.length} requests (CSV)`,
    ttftMs: pick('ttft_ms'),
    outputTps: pick('output_tps'),
    paintedTps: pick('painted_tps'),
    e2eMs: pick('e2e_ms'),
    ok: ok.length,
    failed: rows.filter((r) => r.error_class).length,
  };
}

/** The summary as lines of text (the headless main job prints these). */
export function headlineText(h: Headline): string[] {
  const lines = [
    `TTFT ${ms(h.ttftMs)}${h.ttftP90Ms !== undefined ? ` (p90 ${ms(h.ttftP90Ms)})` : ''}`,
    `output ${num(h.outputTps, 'tok/s')} per user${h.outputTps ? `: ${readingBand(h.outputTps)?.label}` : ''}`,
  ];
  if (h.paintedTps !== undefined) lines.push(`painted ${num(h.paintedTps, 'tok/s')}: ${readingBand(h.paintedTps)?.label}`);
  lines.push(`end to end ${ms(h.e2eMs)}`);
  if (h.aggregateTps !== undefined) lines.push(`aggregate ${num(h.aggregateTps, 'tok/s')} at the busiest level`);
  if (h.outputTps) lines.push(`a ${ANSWER_WORDS.toLocaleString('en-US')}-word answer takes ${duration(answerSeconds(ANSWER_WORDS, h.outputTps, h.ttftMs))}`);
  lines.push(`${h.ok} ok, ${h.failed} failed (${h.basis})`);
  return lines;
}

function card(metric: string, label: string, value: string, unit: string, ...detail: (Node | string)[]): HTMLElement {
  return el(
    'div',
    { class: 'card', 'data-summary': metric },
    el('p', { class: 'label', text: label }),
    el('p', { class: 'value' }, el('span', { class: 'figure', text: value }), unit ? el('span', { class: 'unit', text: ` ${unit}` }) : ''),
    ...detail.map((d) => el('p', { class: 'detail' }, d)),
  );
}

function bandBadge(tps: number | undefined): Node | string {
  const b = readingBand(tps);
  return b ? el('span', { class: `band ${b.id}`, text: b.label }) : '';
}

export function cards(h: Headline): HTMLElement {
  const out = el('div', { class: 'cards', id: 'summary-cards' });
  out.append(card('ttft', 'Time to first token', num(h.ttftMs), 'ms', h.ttftP90Ms !== undefined ? `p90 ${ms(h.ttftP90Ms)}` : h.basis));
  out.append(
    card(
      'output-tps',
      'Output speed per user',
      num(h.outputTps),
      'tok/s',
      bandBadge(h.outputTps),
      h.outputTps ? `A ${ANSWER_WORDS.toLocaleString('en-US')}-word answer takes ${duration(answerSeconds(ANSWER_WORDS, h.outputTps, h.ttftMs))}` : '',
    ),
  );
  out.append(
    h.paintedTps !== undefined
      ? card('painted-tps', 'Painted speed (what you saw)', num(h.paintedTps), 'tok/s', bandBadge(h.paintedTps), 'Tokens per second as frames showed them')
      : card('painted-tps', 'Painted speed (what you saw)', NONE, '', 'Not measured (no render target, or an imported CLI run)'),
  );
  out.append(card('e2e', 'End to end', num(h.e2eMs), 'ms', `${h.ok} ok, ${h.failed} failed`));
  if (h.aggregateTps !== undefined) out.append(card('aggregate-tps', 'Aggregate throughput', num(h.aggregateTps), 'tok/s', 'All users together, at the busiest level'));
  return out;
}

function statCell(s: Stat | null | undefined): string {
  if (!s || s.p50 === undefined) return NONE;
  return `${num(s.p50)} / ${num(s.p90)} / ${num(s.p99)}`;
}

/** p50 / p99: where the wait before the response went (a full backlog shows in connect). */
function pairCell(s: Stat | null | undefined): string {
  if (!s || s.p50 === undefined) return NONE;
  return `${num(s.p50)} / ${num(s.p99)}`;
}

function levelTable(report: Report): HTMLElement {
  const search = report.find_max;
  const head = ['load', 'ok', 'failed', 'TTFT ms p50/p90/p99', 'ITL ms p50/p90/p99', 'TPOT ms p50', 'e2e ms p50/p90/p99', 'tok/s per user p50', 'painted tok/s p50', 'tok/s in all', 'queue ms p50', 'connect ms p50/p99', 'server wait ms p50/p99'];
  if (search) head.push('goodput req/s');
  const levels = search ? byLoad(report.levels) : report.levels;
  const shown = Math.min(levels.length, DRAW.levelRows);
  const caption = shown < levels.length ? `Per load level (the first ${count(shown)} of ${count(levels.length)}; the exported JSON has them all)` : search ? 'Per load level, in order of load (✓ met the SLO, ✗ missed it)' : 'Per load level';
  const table = el('table', {}, el('caption', { text: caption }));
  table.append(el('thead', {}, el('tr', {}, ...head.map((h, i) => el('th', { scope: 'col', class: i > 0 ? 'num' : undefined, text: h })))));
  const body = el('tbody');
  for (let i = 0; i < shown; i++) {
    const l = levels[i];
    const s = l.summary as Summary;
    const passed = passedAt(search, l.level);
    const cells = [
      levelLabel(l.level) + (passed === undefined ? '' : passed ? ' ✓' : ' ✗'),
      String(s.succeeded ?? 0),
      String(s.failed ?? 0),
      statCell(s.ttft_ms),
      statCell(s.itl_chunk_ms),
      num(s.tpot_ms?.p50),
      statCell(s.e2e_ms),
      num(s.output_tps?.p50),
      num(s.paint?.painted_tps?.p50),
      num(s.aggregate_output_tps),
      num(s.queue_ms?.p50),
      pairCell(s.connect_ms),
      pairCell(s.wait_ms),
    ];
    if (search) cells.push(num(s.goodput?.requests_per_s ?? undefined));
    body.append(el('tr', {}, el('th', { scope: 'row', text: cells[0] }), ...cells.slice(1).map((c) => el('td', { class: 'num', text: c }))));
  }
  table.append(body);
  return tableWrap(table, 'Per load level');
}

function errorTable(records: RequestRecord[]): HTMLElement | undefined {
  const failed = records.filter((r) => r.error);
  if (failed.length === 0) return undefined;
  const more = failed.length > DRAW.errorRows ? ` (the first ${count(DRAW.errorRows)}; Export CSV has them all)` : '';
  const table = el('table', { id: 'error-table' }, el('caption', { text: `Errors (${count(failed.length)})${more}` }));
  table.append(el('thead', {}, el('tr', {}, ...['request', 'load', 'class', 'HTTP', 'message'].map((h) => el('th', { scope: 'col', text: h })))));
  const body = el('tbody');
  for (const r of failed.slice(0, DRAW.errorRows)) {
    body.append(
      el(
        'tr',
        {},
        el('td', { text: `#${r.id}${r.warmup ? ' (warm-up)' : ''}` }),
        el('td', { text: levelLabel(r.level) }),
        el('td', {}, el('code', { text: r.error!.class })),
        el('td', { text: r.error!.http_status ? String(r.error!.http_status) : r.http_status ? String(r.http_status) : '' }),
        el('td', { text: short(r.error!.message, 1000) }),
      ),
    );
  }
  table.append(body);
  return tableWrap(table, 'Errors');
}

function rowsTable(rows: CsvRow[]): HTMLElement {
  const cols = ['id', 'level', 'ttft_ms', 'e2e_ms', 'output_tokens', 'output_tps', 'painted_tps', 'error_class'];
  const more = rows.length > DRAW.requestRows ? `; the first ${count(DRAW.requestRows)} shown, Export CSV has them all` : '';
  const table = el('table', {}, el('caption', { text: `Requests (${count(rows.length)}${more})` }));
  table.append(el('thead', {}, el('tr', {}, ...cols.map((c) => el('th', { scope: 'col', text: c })))));
  const body = el('tbody');
  for (const r of rows.slice(0, DRAW.requestRows)) body.append(el('tr', {}, ...cols.map((c) => el('td', { text: short(c === 'level' ? rowLevel(r) : r[c]) }))));
  table.append(body);
  return tableWrap(table, 'Requests');
}

const WARNING_HINTS: Record<string, string> = {
  tab_hidden: 'The tab was hidden during the run: browsers throttle hidden tabs, so paint times (and possibly timers) are not what a reader would see. Keep the tab visible while it runs.',
  http1_queueing: 'Requests waited inside the browser for one of HTTP/1.1\'s ~6 connections per host; that wait is in their TTFT. Use an HTTP/2 endpoint for higher concurrency.',
  timing_unrecorded: 'This browser recorded no connection phases for some requests (Firefox does not under a service worker): their queue, connect and server-wait columns are unknown, not zero. TTFT and token times are unaffected.',
  local_serial: 'The local engine runs one generation at a time: at concurrency above 1 the queueing is part of TTFT.',
  count_failed: 'The tokenizer went over its time budget counting an answer, so those answers keep the stream\'s own token estimate. Pass the model\'s own tokenizer, or use a server that sends usage, so that no count is needed.',
};

function warnings(report: Report): HTMLElement | undefined {
  const list = report.warnings ?? [];
  if (list.length === 0) return undefined;
  const out = el('div', { id: 'warnings' }, el('h3', { text: 'Warnings' }));
  for (const w of list.slice(0, DRAW.warnings)) {
    out.append(el('div', { class: 'notice', role: 'note', 'data-warning': short(w.code) }, el('strong', { text: short(w.code) }), ` ${short(w.message, 1000)}`, WARNING_HINTS[w.code] ? el('p', { class: 'hint', text: WARNING_HINTS[w.code] }) : ''));
  }
  if (list.length > DRAW.warnings) out.append(el('p', { class: 'hint', text: `${count(list.length - DRAW.warnings)} more warnings are in the exported JSON.` }));
  return out;
}

function timelines(records: RequestRecord[]): Timeline[] {
  const out: Timeline[] = [];
  for (const r of records) {
    if (out.length >= 8) break;
    if (r.warmup || !Array.isArray(r.chunk_times_ms) || r.chunk_times_ms.length === 0) continue;
    const wire = r.chunk_times_ms.map((t) => t - r.start_ms);
    const lag = paintOf(r)?.lag_ms;
    if (!Array.isArray(lag)) {
      out.push({ id: r.id, wire, paint: [] });
      continue;
    }
    const paint = lag.length > 0 ? wire.slice(0, lag.length).map((t, i) => t + lag[i]) : [];
    out.push({ id: r.id, wire, paint });
  }
  return out;
}

function levelPoints(report: Report): { points: LevelPoint[]; xLabel: string } {
  const open = report.levels.some((l) => (l.level as LevelSpec)?.rate !== undefined);
  // In order of load: a chart's x must rise, and a search runs its levels out of order.
  const levels = report.find_max ? byLoad(report.levels) : report.levels;
  const points = levels.map((l, i) => {
    const level = l.level as LevelSpec;
    const s = l.summary as Summary;
    return {
      x: level.concurrency ?? level.rate ?? i + 1,
      perUser: s.output_tps?.p50 ?? null,
      aggregate: s.aggregate_output_tps ?? null,
      painted: s.paint?.painted_tps?.p50 ?? null,
    };
  });
  return { points, xLabel: open ? 'requests/s' : 'concurrency' };
}

/** Everything drawn for one run; `destroy` frees the charts. */
export interface ResultsView {
  root: HTMLElement;
  charts: Chart[];
  headline: Headline;
  destroy(): void;
}

export function chartsFor(records: RequestRecord[], report?: Report): Chart[] {
  const measured = records.filter((r) => !r.warmup);
  const out: Chart[] = [];
  if (report && report.levels.length > 0) {
    const { points, xLabel } = levelPoints(report);
    out.push(degradationChart(points, xLabel));
  }
  if (report && Array.isArray(report.turns) && report.turns.length > 0) {
    const points = report.turns.map((t) => ({ level: t.level_index, turn: t.turn, ttftP50: t.ttft_ms_p50, cachedP50: t.cached_input_tokens_p50, inputP50: t.input_tokens_p50 }));
    const { points: loads, xLabel } = levelPoints(report);
    out.push(turnChart(points, (i) => `${xLabel} ${loads[i]?.x ?? i + 1}`));
  }
  const ttft = measured.map((r) => r.metrics?.ttft_ms).filter((v): v is number => typeof v === 'number');
  if (ttft.length > 0) out.push(histogramChart('Time to first token', ttft, 'ms'));
  // Every gap of every request, gathered by a loop into one typed array (a browser run can
  // have tens of millions).
  let gaps = 0;
  for (const r of measured) gaps += Array.isArray(r.metrics?.itl_chunk_ms) ? r.metrics!.itl_chunk_ms!.length : 0;
  if (gaps > 0) {
    const itl = new Float64Array(gaps);
    let n = 0;
    for (const r of measured) {
      const g = r.metrics?.itl_chunk_ms;
      if (!Array.isArray(g)) continue;
      for (let i = 0; i < g.length; i++) itl[n++] = typeof g[i] === 'number' ? g[i] : NaN;
    }
    out.push(histogramChart('Inter-token latency (gaps between chunks)', itl, 'ms'));
  }
  const t = timelines(measured);
  if (t.length > 0) out.push(timelineChart(t));
  return out;
}

/** Renders a stored run. `actions` (export, permalink, ...) are added by the caller. */
export function renderRun(run: StoredRun, partial: RequestRecord[] = []): ResultsView {
  const root = el('div', { class: 'results', 'data-run': run.id, 'data-status': run.status });
  const report = run.report;
  const s = run.settings ?? (report?.config as StoredRun['settings']);
  const what = s ? `${short(s.api)} · ${short(s.url)} · ${short(s.model)}` : short(run.title);
  root.append(el('p', { class: 'hint', text: `${what} · ${date(run.createdAt)} · ${run.source === 'browser' ? 'run in this browser' : run.source === 'import' ? `imported from ${short(run.title)}` : 'opened from a permalink'}` }));
  if (run.status === 'interrupted') root.append(el('div', { class: 'notice', role: 'note', text: `This run was interrupted (the page was reloaded or closed). The ${partial.length} requests that finished are kept below.` }));
  if (run.status === 'cancelled') root.append(el('div', { class: 'notice', role: 'note', text: 'This run was stopped before it finished; the report covers what ran.' }));
  if (run.trimmed) root.append(el('div', { class: 'notice', role: 'note', text: 'Opened from a permalink that left out per-chunk times to stay short: distributions and timelines need the exported JSON.' }));

  let h: Headline;
  let records: RequestRecord[] = [];
  if (report) {
    h = headline(report);
    records = report.requests;
  } else if (run.rows) {
    h = headlineOfRows(run.rows);
  } else {
    h = headlineOfRecords(partial);
    records = partial;
  }
  root.append(cards(h));
  if (report) {
    const where = measuredIn(report);
    if (where) root.append(el('p', { class: 'hint', id: 'measured-in', text: where }));
    const notes = report.environment?.notes ?? {};
    const env = [short(notes.user_agent), notes.cross_origin_isolated !== undefined ? `cross-origin isolated: ${short(notes.cross_origin_isolated)}` : '', notes.timer_resolution_ms && Number.isFinite(Number(notes.timer_resolution_ms)) ? `timer resolution ${num(Number(notes.timer_resolution_ms) * 1000)} µs` : '', notes.engine_adapter ? `adapter ${short(notes.engine_adapter)}` : '', stampedOn(notes.stamp_thread)]
      .filter(Boolean)
      .join(' · ');
    if (env) root.append(el('p', { class: 'hint', text: env }));
    const p = report.config.prompt;
    if (p.kind === 'dataset') {
      const skipped = p.skipped ? `, ${num(p.skipped)} without a prompt left out` : '';
      root.append(el('p', { class: 'hint', id: 'dataset', text: `Dataset ${short(p.name)}: ${num(p.entries)} entries (${short(p.format)}${skipped}), SHA-256 ${short(p.sha256)}` }));
    }
    const w = warnings(report);
    if (w) root.append(w);
    const search = findMaxView(report);
    if (search) root.append(search);
    root.append(levelTable(report));
  }
  const charts = run.rows ? [] : chartsFor(records, report);
  if (charts.length > 0) {
    const box = el('div', { class: 'charts' });
    for (const c of charts) box.append(c.figure);
    root.append(el('h3', { text: 'Charts' }), box);
  }
  const errors = errorTable(records);
  if (errors) root.append(errors);
  else if (run.rows) root.append(rowsTable(run.rows));
  else if (records.length > 0 && records.every((r) => !r.error)) root.append(el('p', { class: 'hint', id: 'no-errors', text: `No errors in ${records.length} requests.` }));
  return {
    root,
    charts,
    headline: h,
    destroy: () => charts.forEach((c) => c.destroy()),
  };
}

/** Where a browser run stamped its reads (`notes.stamp_thread`), in words. */
function stampedOn(thread: string | undefined): string {
  if (!thread) return '';
  return thread === 'worker' ? 'arrivals stamped in a Worker' : `arrivals stamped on the ${short(thread.replace(/^main/, 'main thread'))}`;
}
