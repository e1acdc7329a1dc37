// Findings about a browser run that the numbers alone would hide.

import type { Warning } from '../types.js';

/** Connections per host a browser opens over HTTP/1.1. */
export const HTTP1_CONNECTIONS = 6;
/** Queueing above this (ms) on any request is reported even below 7 concurrent requests. */
const QUEUE_NOTICE_MS = 1;

export interface RunFacts {
  url: string;
  /** The largest number of requests the run asked to have in flight at once. */
  maxConcurrency: number;
  httpVersions: ReadonlySet<string>;
  maxQueueMs: number;
  /** Requests whose Resource Timing entry had zeroed timestamps. */
  opaqueTimings: number;
  hiddenMs: number;
  wasHidden: boolean;
  interrupted: boolean;
  renderError?: unknown;
}

function isHttp1(f: RunFacts): boolean {
  if (f.httpVersions.has('http/1.1') || f.httpVersions.has('http/1.0')) return true;
  // Browsers speak HTTP/2 only over TLS: a plain-http URL is HTTP/1.1.
  return f.httpVersions.size === 0 && /^http:/i.test(new URL(f.url, globalThis.location?.href).protocol);
}

export function runWarnings(f: RunFacts): Warning[] {
  const out: Warning[] = [];
  const http1 = isHttp1(f);
  if ((http1 && f.maxConcurrency > HTTP1_CONNECTIONS) || f.maxQueueMs > QUEUE_NOTICE_MS) {
    out.push({
      code: 'http1_queueing',
      message:
        `The browser holds about ${HTTP1_CONNECTIONS} connections per host over HTTP/1.1, so the ` +
        `requested concurrency ${f.maxConcurrency} was not reached: requests waited in the browser ` +
        `before going out (up to ${f.maxQueueMs.toFixed(1)} ms measured; queue_ms per record where ` +
        'Resource Timing allows). That wait is not server latency. Use an HTTP/2 (https) endpoint ' +
        'to measure higher concurrency from a browser.',
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
  if (f.opaqueTimings > 0) {
    out.push({
      code: 'timing_opaque',
      message:
        `Resource Timing gave zeroed timestamps for ${f.opaqueTimings} request(s): the server sends ` +
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
