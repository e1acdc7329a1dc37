// Where a report's figures were measured, as a line beside them: the browser and its
// engine, the timer's step, isolation, where arrivals were stamped, and which requests'
// connection phases the browser did not give. The same TTFT means more from a 5 µs timer
// in a Worker than from a 100 µs one on a busy main thread.

import type { BrowserEnvironment, Report } from 'tpsmeter';
import { num } from '../common/format';
import { short } from '../common/limits';

const ENGINE_NAMES: Record<string, string> = { blink: 'Blink', gecko: 'Gecko', webkit: 'WebKit' };
const STAMPED: Record<string, string> = {
  worker: 'chunk arrivals stamped in a Worker',
  main: "chunk arrivals stamped on the page's main thread",
  engine: "tokens stamped as the engine Worker's messages reached the page",
};
const OPAQUE: Record<string, string> = {
  no_timing_allow_origin: 'no Timing-Allow-Origin',
  no_phases: 'none recorded by the browser',
  no_entry: 'no Resource Timing entry',
};

/** "Firefox 153.0 (Gecko)", or undefined for a report from no browser. */
export function browserName(b: BrowserEnvironment | null | undefined): string | undefined {
  if (!b) return undefined;
  const engine = ENGINE_NAMES[b.engine] ?? short(b.engine);
  return `${short(b.browser)} ${short(b.version)}${engine && engine !== b.browser ? ` (${engine})` : ''}`;
}

/** The line under a run's figures, or undefined for a native (CLI) report. */
export function measuredIn(report: Report): string | undefined {
  const b = report.environment?.browser;
  const name = browserName(b);
  if (!b || !name) return undefined;
  const parts = [
    `Measured in ${name}`,
    b.timer_resolution_ms > 0 ? `timer ${num(b.timer_resolution_ms * 1000)} µs` : 'timer step unknown',
    b.cross_origin_isolated ? 'cross-origin isolated' : 'not cross-origin isolated',
    STAMPED[b.arrivals_stamped_in] ?? short(b.arrivals_stamped_in),
  ];
  for (const o of b.opaque ?? []) {
    parts.push(`connection phases unknown for ${num(o.requests)} request${o.requests === 1 ? '' : 's'} (${OPAQUE[o.reason] ?? short(o.reason)})`);
  }
  return parts.join(' · ');
}
