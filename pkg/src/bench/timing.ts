// Per-request facts from Resource Timing: the HTTP version, the time the request sat in
// the browser's queue before it went out (HTTP/1.1 allows ~6 connections per host, so at
// higher concurrency requests wait there, and that wait is not server latency), and the
// rest of the wait before the response, split as k6 splits it: name lookup, TCP handshake
// (a full listen backlog stalls here), TLS handshake, and the server's wait from the
// request going out to the response's first byte. A reused connection reads 0 set-up.
// Entries live in the timeline of the context that fetched (the reader Worker, or the
// page); every value here is a duration, so no clock mapping is needed.
//
// Cross-origin entries read 0 for every detailed timestamp unless the server sends
// `Timing-Allow-Origin`; then the queueing is unknown (undefined) and the run is flagged.
// Firefox gives a Worker's fetch on a page with an active service worker an entry whose
// stamps all equal `startTime`: no phase there was measured either, so it is unknown too
// (reading it as phases gave 0 ms queue, connect and server wait).

/** Entries the buffer keeps (the default 250 fills up within one run). */
const TIMING_BUFFER_SIZE = 10_000;
/** An entry may start this much before the stamp taken right before `fetch`. */
const START_SLACK_MS = 1;

export interface RequestTiming {
  /** Time queued in the browser before the request went out, when measurable. */
  queueMs?: number;
  /** `nextHopProtocol`: "http/1.1", "h2", "h3" (empty cross-origin without TAO in some browsers). */
  httpVersion?: string;
  /** `domainLookupEnd − domainLookupStart`. */
  dnsMs?: number;
  /** The TCP handshake: `connectStart` to `secureConnectionStart` (or `connectEnd` without TLS). */
  connectMs?: number;
  /** The TLS handshake: `secureConnectionStart` to `connectEnd`; absent without TLS. */
  tlsMs?: number;
  /** The server's wait: `responseStart − requestStart`. */
  waitMs?: number;
  /** The entry exists but gives no phases: its detailed timestamps are zero or all `startTime`. */
  opaque: boolean;
  /** Why an opaque entry gave no phases. */
  reason?: OpaqueReason;
}

/**
 * Why an entry gave no phases: `no_timing_allow_origin` (cross-origin, its detailed stamps
 * zeroed), `no_phases` (every stamp equals `startTime`: Firefox under a service worker),
 * `no_entry` (the browser recorded none for a request that got a response).
 */
export type OpaqueReason = 'no_timing_allow_origin' | 'no_phases' | 'no_entry';

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

/** An entry's phases, or why it has none. Exported for the unit tests. */
export function timingOf(e: Pick<PerformanceResourceTiming, 'startTime' | 'domainLookupStart' | 'domainLookupEnd' | 'connectStart' | 'connectEnd' | 'secureConnectionStart' | 'requestStart' | 'responseStart' | 'nextHopProtocol'>): RequestTiming {
  const httpVersion = e.nextHopProtocol || undefined;
  const sent = e.requestStart || e.connectStart;
  if (!sent) return { httpVersion, opaque: true, reason: 'no_timing_allow_origin' };
  // A response cannot start when its request did: stamps that all equal startTime are no
  // measurement (a real exchange takes at least the timer's step of 5 to 100 µs).
  if (e.responseStart <= e.startTime && e.requestStart <= e.startTime) return { httpVersion, opaque: true, reason: 'no_phases' };
  const connect = e.connectEnd - e.connectStart;
  const dns = e.domainLookupEnd - e.domainLookupStart;
  const queueMs = Math.max(0, sent - e.startTime - connect - dns);
  const tls = e.secureConnectionStart > 0;
  const timing: RequestTiming = {
    queueMs,
    httpVersion,
    opaque: false,
    dnsMs: Math.max(0, dns),
    connectMs: Math.max(0, (tls ? e.secureConnectionStart : e.connectEnd) - e.connectStart),
  };
  if (tls) timing.tlsMs = Math.max(0, e.connectEnd - e.secureConnectionStart);
  if (e.requestStart > 0 && e.responseStart >= e.requestStart) timing.waitMs = e.responseStart - e.requestStart;
  return timing;
}

/** The parts of the wait before the response that the entry gave, as record extras. */
export function setupParts(t: RequestTiming): { dnsMs?: number; connectMs?: number; tlsMs?: number; waitMs?: number } {
  const out: { dnsMs?: number; connectMs?: number; tlsMs?: number; waitMs?: number } = {};
  for (const k of ['dnsMs', 'connectMs', 'tlsMs', 'waitMs'] as const) if (t[k] !== undefined) out[k] = t[k];
  return out;
}
