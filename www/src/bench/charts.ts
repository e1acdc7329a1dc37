// The result charts, drawn by uPlot (a 50 KB canvas plotting library that draws 100k points
// in milliseconds and is actively kept; Observable Plot would bring d3 and SVG nodes per
// point for the token timelines). Colours come from the page's CSS variables when a chart is
// built, so charts are rebuilt when the theme changes.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { el } from '../common/dom';
import { count, DRAW, strideIndices } from '../common/limits';

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

function axes(xLabel: string, yLabel: string, y2Label?: string): uPlot.Axis[] {
  const stroke = cssVar('--fg');
  const grid = { stroke: cssVar('--border'), width: 1 };
  const ticks = { stroke: cssVar('--border'), width: 1 };
  const out: uPlot.Axis[] = [
    { label: xLabel, stroke, grid, ticks },
    { label: yLabel, stroke, grid, ticks, size: 60 },
  ];
  if (y2Label) out.push({ label: y2Label, stroke, grid: { show: false }, ticks, side: 1, scale: 'y2', size: 60 });
  return out;
}

/** A chart in a <figure> with a caption and a text alternative; resizes with its box. */
export interface Chart {
  figure: HTMLElement;
  /** Builds (or rebuilds, after a theme change) the plot. */
  draw(): void;
  destroy(): void;
}

/** `note`: what the chart leaves out (downsampling), shown under it. */
function chart(caption: string, summary: string, build: (width: number) => uPlot.Options, data: uPlot.AlignedData, note?: string): Chart {
  const plot = el('div', { class: 'plot', role: 'img', 'aria-label': `${caption}. ${summary}${note ? ` ${note}` : ''}` });
  const figure = el('figure', { class: 'chart' }, el('figcaption', { text: caption }), plot, note ? el('p', { class: 'hint chart-note', text: note }) : undefined);
  let u: uPlot | undefined;
  let observer: ResizeObserver | undefined;
  const width = () => Math.max(260, plot.clientWidth || 460);
  return {
    figure,
    draw() {
      u?.destroy();
      u = new uPlot(build(width()), data, plot);
      observer ??= new ResizeObserver(() => {
        const w = width();
        if (u && Math.abs(u.width - w) > 4) u.setSize({ width: w, height: u.height });
      });
      observer.observe(plot);
    },
    destroy() {
      observer?.disconnect();
      u?.destroy();
    },
  };
}

export interface LevelPoint {
  x: number;
  perUser?: number | null;
  aggregate?: number | null;
  painted?: number | null;
}

/** Per-user and aggregate output TPS against load: the degradation curve. */
export function degradationChart(all: LevelPoint[], xLabel: string): Chart {
  // Past `DRAW.levelPoints` levels, every k-th (a report holds at most 64 unless hand-made).
  const picked = strideIndices(all.length, DRAW.levelPoints);
  const points = picked ? picked.map((i) => all[i]) : all;
  const note = picked ? `Drawn through ${count(points.length)} evenly spaced levels of the ${count(all.length)} (first and last included).` : undefined;
  const xs = points.map((p) => p.x);
  const series: (number | null)[][] = [
    points.map((p) => p.perUser ?? null),
    points.map((p) => p.aggregate ?? null),
    points.map((p) => p.painted ?? null),
  ];
  const hasPaint = series[2].some((v) => v !== null);
  const summary = points
    .slice(0, 20)
    .map((p) => `${xLabel} ${p.x}: ${fmt(p.perUser)} tok/s per user, ${fmt(p.aggregate)} tok/s in all`)
    .join('; ') + (points.length > 20 ? `; and ${count(points.length - 20)} more levels` : '');
  return chart(
    'Output tokens per second against load',
    summary,
    (width) => ({
      width,
      height: 260,
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, niceMax(max)] }, y2: { range: (_u, _min, max) => [0, niceMax(max)] } },
      axes: withSplits(axes(xLabel, 'tok/s per user', 'tok/s in all'), xs),
      series: [
        { label: xLabel },
        { label: 'per user (p50)', stroke: cssVar('--series-1'), width: 2, points: { show: true, size: 7 } },
        { label: 'aggregate', stroke: cssVar('--series-2'), width: 2, dash: [6, 4], scale: 'y2', points: { show: true, size: 7 } },
        { label: 'painted per user (p50)', stroke: cssVar('--series-3'), width: 2, show: hasPaint, points: { show: true, size: 7 } },
      ],
    }),
    [xs, series[0], series[1], series[2]] as uPlot.AlignedData,
    note,
  );
}

/** One turn of one level of a multi-turn run (the report's `turns`). */
export interface TurnPoint {
  level: number;
  turn: number;
  ttftP50?: number | null;
  cachedP50?: number | null;
  inputP50?: number | null;
}

/**
 * TTFT against the turn of a conversation, one line per level: how a server's prompt cache
 * meets a chat as it grows (a cache keeps later turns' TTFT flat; without one it climbs
 * with the conversation's length).
 */
export function turnChart(points: TurnPoint[], levelName: (i: number) => string): Chart {
  const turns = [...new Set(points.map((p) => p.turn))].sort((a, b) => a - b);
  const levels = [...new Set(points.map((p) => p.level))].sort((a, b) => a - b).slice(0, 6);
  const series = levels.map((l) => turns.map((t) => points.find((p) => p.level === l && p.turn === t)?.ttftP50 ?? null));
  const summary = levels
    .map((l) => `${levelName(l)}: ` + turns.map((t) => {
      const p = points.find((q) => q.level === l && q.turn === t);
      const cached = p?.cachedP50 != null && p?.inputP50 != null ? ` (${fmt(p.cachedP50)} of ${fmt(p.inputP50)} input tokens cached)` : '';
      return `turn ${t} ${fmt(p?.ttftP50)} ms${cached}`;
    }).join(', '))
    .join('; ');
  const colours = ['--series-1', '--series-2', '--series-3'];
  return chart(
    'Time to first token by turn of the conversation',
    summary,
    (width) => ({
      width,
      height: 240,
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, niceMax(max)] } },
      axes: withSplits(axes('turn', 'TTFT p50 (ms)'), turns),
      series: [
        { label: 'turn' },
        ...levels.map((l, i) => ({ label: levelName(l), stroke: cssVar(colours[i % colours.length]!), width: 2, dash: i >= colours.length ? [6, 4] : undefined, points: { show: true, size: 7 } })),
      ],
    }),
    [turns, ...series] as uPlot.AlignedData,
  );
}

/**
 * Ticks at the load levels themselves (1, 2, 4, 8), not at 1.5 or 2.5; past a dozen levels
 * the labels would overlap, and uPlot's own ticks are used.
 */
function withSplits(a: uPlot.Axis[], xs: number[]): uPlot.Axis[] {
  if (xs.length <= 12) a[0] = { ...a[0], splits: () => xs };
  return a;
}

function fmt(v: number | null | undefined): string {
  return v === null || v === undefined ? 'none' : v.toFixed(1);
}

function niceMax(max: number | null): number {
  if (!max || !Number.isFinite(max) || max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  return Math.ceil((max * 1.1) / p) * p;
}

/**
 * The `p`-quantile (nearest rank below, as the caption has always said) of `v`, which it
 * reorders: Hoare's selection, linear on average, where sorting 10 M values takes seconds.
 */
function select(v: Float64Array, p: number): number {
  const k = Math.min(v.length - 1, Math.floor(p * (v.length - 1)));
  let lo = 0;
  let hi = v.length - 1;
  while (lo < hi) {
    const pivot = v[(lo + hi) >>> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i <= j) {
        const t = v[i];
        v[i] = v[j];
        v[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return v[k];
}

/**
 * A histogram of `values` (ms): every value counts (loops only, no argument spread, so
 * millions of values are fine); at most 40 bins.
 */
export function histogramChart(caption: string, values: ArrayLike<number>, unit: string): Chart {
  let n = 0;
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i])) n++;
  const v = new Float64Array(n);
  let min = Infinity;
  let max = -Infinity;
  n = 0;
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) continue;
    v[n++] = x;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  const bins = Math.max(1, Math.min(40, Math.ceil(Math.sqrt(v.length)) + 1));
  const step = max > min ? (max - min) / bins : 1;
  const xs: number[] = [];
  const counts: number[] = [];
  for (let i = 0; i < bins; i++) {
    xs.push(min + step * (i + 0.5));
    counts.push(0);
  }
  for (let i = 0; i < v.length; i++) counts[Math.min(bins - 1, Math.floor((v[i] - min) / step))]++;
  const q = (p: number) => (v.length > 0 ? select(v, p) : undefined);
  const summary = `${count(v.length)} values from ${min.toFixed(1)} to ${max.toFixed(1)} ${unit}; median ${q(0.5)?.toFixed(1)}, p90 ${q(0.9)?.toFixed(1)}`;
  const bars = uPlot.paths.bars!({ size: [0.9, 80] });
  return chart(
    caption,
    summary,
    (width) => ({
      width,
      height: 220,
      scales: { x: { time: false, range: (_u, lo, hi) => [lo - step / 2, hi + step / 2] }, y: { range: (_u, _lo, hi) => [0, Math.max(1, hi)] } },
      axes: axes(unit, 'count'),
      legend: { show: false },
      series: [{ label: unit }, { label: 'count', fill: cssVar('--series-1'), stroke: cssVar('--series-1'), paths: bars, points: { show: false } }],
    }),
    [xs, counts],
  );
}

export interface Timeline {
  id: number;
  /** ms after the request started, one per chunk. */
  wire: number[];
  /** Paint times of the painted chunks, ms after the request started (empty: not painted). */
  paint: number[];
}

/**
 * One line of a timeline: chunk k (from 1) at `times[k - 1]`; past `DRAW.timelinePoints`
 * chunks, every k-th (the first and the last kept), which keeps the curve's shape.
 */
function cumulative(times: number[]): { table: uPlot.AlignedData; thinned: boolean } {
  const picked = strideIndices(times.length, DRAW.timelinePoints);
  if (!picked) return { table: [times, times.map((_, k) => k + 1)], thinned: false };
  return { table: [picked.map((k) => times[k]), picked.map((k) => k + 1)], thinned: true };
}

/** Cumulative chunks against time for a few requests: when they arrived and when they showed. */
export function timelineChart(timelines: Timeline[]): Chart {
  const tables: uPlot.AlignedData[] = [];
  const series: uPlot.Series[] = [{ label: 'ms' }];
  const colours = ['--series-1', '--series-2', '--series-3', '--series-4'];
  const stepped = uPlot.paths.stepped!({ align: 1 });
  let thinned = 0;
  let most = 0;
  const add = (times: number[]) => {
    const line = cumulative(times);
    if (line.thinned) thinned++;
    most = Math.max(most, times.length);
    tables.push(line.table);
  };
  timelines.forEach((t, i) => {
    const colour = colours[i % colours.length];
    add(t.wire);
    series.push({ label: `#${t.id} wire`, stroke: cssVar(colour), width: 1.5, paths: stepped, spanGaps: true, points: { show: false } });
    if (t.paint.length > 0) {
      add(t.paint);
      series.push({ label: `#${t.id} painted`, stroke: cssVar(colour), width: 1.5, dash: [4, 3], paths: stepped, spanGaps: true, points: { show: false } });
    }
  });
  const data = uPlot.join(tables);
  const painted = timelines.some((t) => t.paint.length > 0);
  const summary = `${timelines.length} requests; chunks received over time${painted ? ' (solid) and painted (dashed)' : ''}`;
  const note = thinned > 0 ? `Lines of more than ${count(DRAW.timelinePoints)} chunks (up to ${count(most)}) are drawn through ${count(DRAW.timelinePoints)} evenly spaced chunks each, first and last included.` : undefined;
  return chart(
    painted ? 'Token timelines: received (solid) and painted (dashed)' : 'Token timelines: chunks received',
    summary,
    (width) => ({
      width,
      height: 260,
      scales: { x: { time: false } },
      axes: axes('ms since the request started', 'chunks'),
      // One legend entry per series would be two per request: the caption says which is which.
      legend: { show: false },
      series,
    }),
    data,
    note,
  );
}

/** Per-user output TPS against load for several runs on one chart. */
export function degradationCompareChart(runs: { title: string; report: { levels: { level: unknown; summary: { output_tps?: unknown } }[] } }[]): Chart {
  const colours = ['--series-1', '--series-2', '--series-3', '--series-4'];
  const tables: uPlot.AlignedData[] = [];
  const series: uPlot.Series[] = [{ label: 'load' }];
  let open = false;
  let thinned = 0;
  runs.forEach((r, i) => {
    const xs: number[] = [];
    const ys: (number | null)[] = [];
    const levels = r.report.levels;
    const picked = strideIndices(levels.length, DRAW.levelPoints);
    if (picked) thinned++;
    for (const k of picked ?? levels.keys()) {
      const l = levels[k];
      const level = (l.level ?? {}) as { concurrency?: number; rate?: number };
      if (level.rate !== undefined) open = true;
      xs.push(level.concurrency ?? level.rate ?? k + 1);
      ys.push((l.summary?.output_tps as { p50?: number } | null | undefined)?.p50 ?? null);
    }
    const order = xs.map((_, k) => k).sort((a, b) => xs[a] - xs[b]);
    tables.push([order.map((k) => xs[k]), order.map((k) => ys[k])]);
    series.push({ label: r.title, stroke: cssVar(colours[i % colours.length]), width: 2, dash: i >= colours.length ? [6, 4] : undefined, spanGaps: true, points: { show: true, size: 7 } });
  });
  const summary = runs.map((r) => r.title).join(' vs ');
  const note = thinned > 0 ? `Runs of more than ${count(DRAW.levelPoints)} levels are drawn through ${count(DRAW.levelPoints)} evenly spaced levels each.` : undefined;
  return chart(
    'Output tokens per second per user against load',
    summary,
    (width) => ({
      width,
      height: 260,
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, niceMax(max)] } },
      axes: withSplits(axes(open ? 'requests/s' : 'concurrency', 'tok/s per user (p50)'), [...new Set(tables.flatMap((t) => t[0] as number[]))].sort((a, b) => a - b)),
      series,
    }),
    uPlot.join(tables),
    note,
  );
}
