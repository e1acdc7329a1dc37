// Per-request facts from Resource Timing: the HTTP version and the time the request sat in
// the browser's queue before it went out (HTTP/1.1 allows ~6 connections per host, so at
// higher concurrency requests wait there, and that wait is not server latency).
//
// Cross-origin entries read 0 for every detailed timestamp unless the server sends
// `Timing-Allow-Origin`; then the queueing is unknown (undefined) and the run is flagged.

/** Entries the buffer keeps (the default 250 fills up within one run). */
const TIMING_BUFFER_SIZE = 10_000;
/** An entry may start this much before the stamp taken right before `fetch`. */
const START_SLACK_MS = 1;

export interface RequestTiming {
  /** Time queued in the browser before the request went out, when measurable. */
  queueMs?: number;
  /** `nextHopProtocol`: "http/1.1", "h2", "h3" (empty cross-origin without TAO in some browsers). */
  httpVersion?: string;
  /** The entry exists but its detailed timestamps are zero (no Timing-Allow-Origin). */
  opaque: boolean;
}

/** Matches each request with its own Resource Timing entry, each entry used once. */
export class TimingMatcher {
  private readonly used = new WeakSet<PerformanceEntry>();

  constructor() {
    try {
      performance.setResourceTimingBufferSize?.(TIMING_BUFFER_SIZE);
    } catch {
      // Not fatal: entries then go missing when the buffer is full.
    }
  }

  /** The entry of the request to `url` started at `startMs`, when the browser made one. */
  take(url: string, startMs: number): RequestTiming | undefined {
    const absolute = new URL(url, typeof location !== 'undefined' ? location.href : undefined).href;
    let best: PerformanceResourceTiming | undefined;
    for (const e of performance.getEntriesByName(absolute, 'resource')) {
      if (this.used.has(e) || e.startTime < startMs - START_SLACK_MS) continue;
      if (!best || e.startTime < best.startTime) best = e as PerformanceResourceTiming;
    }
    if (!best) return undefined;
    this.used.add(best);
    return timingOf(best);
  }
}

function timingOf(e: PerformanceResourceTiming): RequestTiming {
  const httpVersion = e.nextHopProtocol || undefined;
  const sent = e.requestStart || e.connectStart;
  if (!sent) return { httpVersion, opaque: true };
  const connect = e.connectEnd - e.connectStart;
  const dns = e.domainLookupEnd - e.domainLookupStart;
  const queueMs = Math.max(0, sent - e.startTime - connect - dns);
  return { queueMs, httpVersion, opaque: false };
}
