// Findings about a browser run that the numbers alone would hide.

import type { Warning } from '../types.js';

/** Connections per host a browser opens over HTTP/1.1. */
export const HTTP1_CONNECTIONS = 6;
/**
 * Queueing (ms) beyond the run's smallest that is reported even below 7 concurrent requests.
 * Every request measures a few ms from `fetch()` to the request going out (CORS preflight,
 * the browser's own dispatch; up to ~20 ms on a busy machine), so only the excess over the
 * quickest request counts; a request held for a connection waits a whole response (≫ 25 ms).
 */
const QUEUE_NOTICE_MS = 25;

export interface RunFacts {
  url: string;
  /** The largest number of requests the run asked to have in flight at once. */
  maxConcurrency: number;
  /** The most requests the run had in flight at once (fewer than asked when a level has fewer
   * requests than its concurrency, or an open loop never piles up). */
  peakInFlight: number;
  httpVersions: ReadonlySet<string>;
  /** Smallest and largest queueing measured (Infinity / 0 when none was). */
  minQueueMs: number;
  maxQueueMs: number;
  /** Requests whose Resource Timing entry had zeroed timestamps. */
  /** Requests whose Resource Timing gave no phases, by why (timing.ts's reasons). */
  opaqueTimings: ReadonlyMap<string, number>;
  hiddenMs: number;
  wasHidden: boolean;
  interrupted: boolean;
  renderError?: unknown;
  /** The run measured the local engine. */
  local?: boolean;
}

function isHttp1(f: RunFacts): boolean {
  if (f.httpVersions.has('http/1.1') || f.httpVersions.has('http/1.0')) return true;
  // Browsers speak HTTP/2 only over TLS: a plain-http URL is HTTP/1.1.
  return f.httpVersions.size === 0 && /^http:/i.test(new URL(f.url, globalThis.location?.href).protocol);
}

export function runWarnings(f: RunFacts): Warning[] {
  const out: Warning[] = [];
  const http1 = isHttp1(f);
  const excessQueueMs = f.maxQueueMs - Math.min(f.minQueueMs, f.maxQueueMs);
  // Only requests of this run that were in flight together can have waited for one another's
  // connections: one request at a time (or six over HTTP/1.1) queues for nothing of ours, and
  // a first request's longer CORS preflight is not queueing.
  const couldQueue = f.peakInFlight > 1;
  if (couldQueue && ((http1 && f.peakInFlight > HTTP1_CONNECTIONS) || excessQueueMs > QUEUE_NOTICE_MS)) {
    const asked = Number.isFinite(f.maxConcurrency) ? String(f.maxConcurrency) : 'unbounded (open loop)';
    const measured =
      f.maxQueueMs > 0
        ? `up to ${f.maxQueueMs.toFixed(1)} ms measured, queue_ms per record`
        : 'not measurable here: the server sends no Timing-Allow-Origin';
    out.push({
      code: 'http1_queueing',
      message:
        `The browser holds about ${HTTP1_CONNECTIONS} connections per host over HTTP/1.1, so the ` +
        `requested concurrency ${asked} was not reached: requests waited in the browser before ` +
        `going out (${measured}). That wait is not server latency. Use an HTTP/2 (https) endpoint ` +
        'to measure higher concurrency from a browser.',
    });
  }
  if (f.local && f.maxConcurrency > 1) {
    out.push({
      code: 'local_serial',
      message:
        `The local engine runs one generation at a time: of the ${f.maxConcurrency} requests asked to ` +
        'be in flight, the others wait their turn in the engine, and that wait is part of their TTFT ' +
        '(as in a server with one slot). Aggregate TPS is the single stream\'s.',
    });
  }
  if (f.wasHidden) {
    out.push({
      code: 'tab_hidden',
      message:
        `The tab was hidden for ${Math.round(f.hiddenMs)} ms during the run: browsers pause frames ` +
        'and throttle timers in hidden tabs, so paint times and scheduled starts from that time ' +
        'are not what a user would see (records carry tab_hidden).',
    });
  }
  const unrecorded = (f.opaqueTimings.get('no_phases') ?? 0) + (f.opaqueTimings.get('no_entry') ?? 0);
  if (unrecorded > 0) {
    out.push({
      code: 'timing_unrecorded',
      message:
        `The browser recorded no Resource Timing phases for ${unrecorded} request(s) (Firefox does not ` +
        'for fetches under a service worker): their queue, connect and server-wait times are unknown, ' +
        'not 0 ms. TTFT and the token timings are measured all the same.',
    });
  }
  const zeroed = f.opaqueTimings.get('no_timing_allow_origin') ?? 0;
  if (zeroed > 0) {
    out.push({
      code: 'timing_opaque',
      message:
        `Resource Timing gave zeroed timestamps for ${zeroed} request(s): the server sends ` +
        'no Timing-Allow-Origin header, so browser queueing and connection setup cannot be told ' +
        'apart from server latency. Send Timing-Allow-Origin: <page origin> (or *) for that detail.',
    });
  }
  if (f.interrupted) {
    out.push({
      code: 'interrupted',
      message:
        'The run was cancelled through its AbortSignal: requests in flight were recorded as ' +
        'cancelled and the remaining levels did not run.',
    });
  }
  if (f.renderError !== undefined) {
    const e = f.renderError;
    out.push({
      code: 'render_failed',
      message: `The render callback threw (${e instanceof Error ? e.message : String(e)}); paint times of that text are approximate.`,
    });
  }
  return out;
}
