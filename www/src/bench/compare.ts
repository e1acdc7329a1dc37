// Runs side by side: a local run against a remote one, run against run, a browser run against
// a CLI report. One column per run; the headline figures, then the degradation curves of the
// runs that have levels, on one chart.

import type { RequestRecord } from 'tpsmeter';
import { date, el, num, tableWrap } from '../common/format';
import type { StoredRun } from '../common/store';
import { degradationCompareChart, type Chart } from './charts';
import { headline, headlineOfRecords, headlineOfRows, type Headline } from './results';

export function renderCompare(container: HTMLElement, runs: { run: StoredRun; partial: RequestRecord[] }[]): { destroy(): void; redraw(): void } {
  const heads: Headline[] = runs.map(({ run, partial }) => (run.report ? headline(run.report) : run.rows ? headlineOfRows(run.rows) : headlineOfRecords(partial)));
  const table = el('table', { id: 'compare-table' }, el('caption', { text: `${runs.length} runs side by side (p50 at each run's lightest level)` }));
  const origin = (r: StoredRun) => {
    const tool = (r.report?.tool as { name?: string } | undefined)?.name;
    const env = r.report?.environment;
    if (r.source === 'browser') return 'this browser';
    if (env && env.os !== 'browser') return `CLI (${tool ?? 'tpsmeter'} on ${env.os})`;
    return r.source;
  };
  table.append(el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'metric' }), ...runs.map(({ run }) => el('th', { scope: 'col', class: 'num', text: run.title })))));
  const rows: [string, (h: Headline, r: StoredRun) => string][] = [
    ['source', (_h, r) => origin(r)],
    ['when', (_h, r) => date(r.createdAt)],
    ['TTFT ms', (h) => num(h.ttftMs)],
    ['output tok/s per user', (h) => num(h.outputTps)],
    ['painted tok/s', (h) => num(h.paintedTps)],
    ['end to end ms', (h) => num(h.e2eMs)],
    ['aggregate tok/s (busiest level)', (h) => num(h.aggregateTps)],
    ['ok / failed', (h) => `${h.ok} / ${h.failed}`],
  ];
  const body = el('tbody');
  for (const [label, f] of rows) body.append(el('tr', {}, el('th', { scope: 'row', text: label }), ...runs.map(({ run }, i) => el('td', { class: 'num', text: f(heads[i], run) }))));
  // Ratios against the first run: the figure people quote.
  if (runs.length >= 2 && heads[0].outputTps) {
    body.append(
      el(
        'tr',
        {},
        el('th', { scope: 'row', text: 'tok/s per user vs the first' }),
        ...heads.map((h) => el('td', { class: 'num', text: h.outputTps ? `${(h.outputTps / heads[0].outputTps!).toFixed(2)}×` : '–' })),
      ),
    );
  }
  table.append(body);
  const charts: Chart[] = [];
  const withLevels = runs.filter(({ run }) => run.report && run.report.levels.length > 0);
  if (withLevels.length > 0) charts.push(degradationCompareChart(withLevels.map(({ run }) => ({ title: run.title, report: run.report! }))));
  container.replaceChildren(tableWrap(table, 'Runs side by side'), ...(charts.length ? [el('div', { class: 'charts' }, ...charts.map((c) => c.figure))] : []));
  for (const c of charts) c.draw();
  return {
    destroy: () => charts.forEach((c) => c.destroy()),
    redraw: () => charts.forEach((c) => c.draw()),
  };
}
