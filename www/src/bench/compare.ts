// Runs side by side: a local run against a remote one, run against run, a browser run against
// a CLI report. One column per run; the headline figures, then the degradation curves of the
// runs that have levels, on one chart.

import { browserName } from './measured';
import type { RequestRecord } from 'tpsmeter';
import { el, tableWrap } from '../common/dom';
import { date, NONE, num } from '../common/format';
import { short } from '../common/limits';
import type { StoredRun } from '../common/store';
import { degradationCompareChart, type Chart } from './charts';
import { headline, headlineOfRecords, headlineOfRows, type Headline } from './results';

export function renderCompare(container: HTMLElement, runs: { run: StoredRun; partial: RequestRecord[] }[]): { destroy(): void; redraw(): void } {
  // A run whose figures cannot be read (an old or hand-edited one) gets an empty column.
  const heads: Headline[] = runs.map(({ run, partial }) => {
    try {
      return run.report ? headline(run.report) : run.rows ? headlineOfRows(run.rows) : headlineOfRecords(partial);
    } catch {
      return { basis: 'unreadable', ok: 0, failed: 0 };
    }
  });
  const table = el('table', { id: 'compare-table' }, el('caption', { text: `${runs.length} runs side by side (p50 at each run's lightest level)` }));
  const origin = (r: StoredRun) => {
    const tool = (r.report?.tool as { name?: string } | undefined)?.name;
    const env = r.report?.environment;
    if (r.source === 'browser') return 'this browser';
    if (env && env.os !== 'browser') return `CLI (${tool ?? 'tpsmeter'} on ${env.os})`;
    return r.source;
  };
  const head = el('tr', {}, el('th', { scope: 'col', text: 'metric' }));
  for (const { run } of runs) head.append(el('th', { scope: 'col', class: 'num', text: short(run.title) }));
  table.append(el('thead', {}, head));
  const rows: [string, (h: Headline, r: StoredRun) => string][] = [
    ['source', (_h, r) => origin(r)],
    ['when', (_h, r) => date(r.createdAt)],
    ['browser', (_h, r) => (r.report ? (browserName(r.report.environment?.browser) ?? (r.report.environment?.os === 'browser' ? 'not recorded' : 'none (native)')) : NONE)],
    ['TTFT ms', (h) => num(h.ttftMs)],
    ['output tok/s per user', (h) => num(h.outputTps)],
    ['painted tok/s', (h) => num(h.paintedTps)],
    ['end to end ms', (h) => num(h.e2eMs)],
    ['aggregate tok/s (busiest level)', (h) => num(h.aggregateTps)],
    ['ok / failed', (h) => `${h.ok} / ${h.failed}`],
  ];
  const body = el('tbody');
  for (const [label, f] of rows) {
    const tr = el('tr', {}, el('th', { scope: 'row', text: label }));
    runs.forEach(({ run }, i) => tr.append(el('td', { class: 'num', text: f(heads[i], run) })));
    body.append(tr);
  }
  // Ratios against the first run: the figure people quote.
  if (runs.length >= 2 && heads[0].outputTps) {
    const tr = el('tr', {}, el('th', { scope: 'row', text: 'tok/s per user vs the first' }));
    for (const h of heads) tr.append(el('td', { class: 'num', text: h.outputTps ? `${(h.outputTps / heads[0].outputTps!).toFixed(2)}×` : NONE }));
    body.append(tr);
  }
  table.append(body);
  const charts: Chart[] = [];
  const withLevels = runs.filter(({ run }) => run.report && Array.isArray(run.report.levels) && run.report.levels.length > 0);
  if (withLevels.length > 0) charts.push(degradationCompareChart(withLevels.map(({ run }) => ({ title: short(run.title), report: run.report! }))));
  container.replaceChildren(tableWrap(table, 'Runs side by side'));
  if (charts.length > 0) {
    const box = el('div', { class: 'charts' });
    for (const c of charts) box.append(c.figure);
    container.append(box);
  }
  for (const c of charts) c.draw();
  return {
    destroy: () => charts.forEach((c) => c.destroy()),
    redraw: () => charts.forEach((c) => c.draw()),
  };
}
