// A standalone OTLP/HTTP JSON metrics exporter for apps without the OpenTelemetry SDK: the
// meter's reports aggregate into delta histograms and counters per attribute set, sent to
// a Collector's (or a vendor's) `/v1/metrics` at an interval and when the page hides or
// unloads, with `keepalive` so a closing page still delivers what had finished.
//
// Bounded whatever the endpoint does: one window of at most MAX_SERIES series, a retry
// queue of at most `maxQueued` bodies of at most MAX_BODY bytes each; beyond that, what is
// dropped is counted (`stats()`), never kept. Sends timings, counts and the attributes of
// `instruments.ts`: no key, prompt or text.

import type { MeterReport } from '../meter/types.js';
import { type AttributeValue, byteLength, Window } from './aggregate.js';
import { measurements, type Naming } from './instruments.js';
import { MAX_BODY } from './limits.js';
import { Partials } from './partials.js';

/** At most this much is in flight with `keepalive` at once (within the browser's 64 KiB);
 * more waits for the next send or goes without it. */
const KEEPALIVE_QUOTA = MAX_BODY;
/** The longest wait between retries of one body. */
const MAX_BACKOFF_MS = 60_000;

export interface OtlpOptions {
  /** The endpoint, e.g. `https://collector.example.com:4318/v1/metrics`. */
  url: string;
  /** `service.name`: the app's. */
  serviceName: string;
  /** Extra request headers (a vendor's API key header, for one: sent only to `url`). */
  headers?: Record<string, string>;
  /** Export interval (default 30 s). */
  intervalMs?: number;
  /** Convention names: `released` (default), `latest` or `both`. */
  naming?: Naming;
  /** More resource attributes (`service.version`, `deployment.environment.name`, ...). */
  resource?: Record<string, AttributeValue>;
  /** Bodies kept for retry when the endpoint is down (default 32: at most ~1.9 MB). */
  maxQueued?: number;
}

export interface OtlpStats {
  /** Requests the endpoint accepted (2xx). */
  sent: number;
  /** Retries made (429, 502, 503, 504, or a network error). */
  retried: number;
  /** Bodies dropped: refused (another 4xx/5xx), or pushed out of a full retry queue. */
  droppedBodies: number;
  /** Values dropped because a window held MAX_SERIES series. */
  droppedValues: number;
  /** Bodies waiting to be retried. */
  queued: number;
  /** Their bytes: at most `maxQueued` × MAX_BODY. */
  queuedBytes: number;
  /** Reports that arrived while the exporter loaded, past the 256 it keeps meanwhile. */
  droppedReports?: number;
}

interface Pending {
  body: string;
  /** The body's UTF-8 length. */
  bytes: number;
  attempt: number;
  notBeforeMs: number;
}

const RETRYABLE = new Set([429, 502, 503, 504]);

export class OtlpExporter {
  private window = new Window(Date.now());
  private readonly queue: Pending[] = [];
  private readonly partials: Partials;
  private readonly resource: Record<string, AttributeValue>;
  private readonly maxQueued: number;
  private keepaliveInFlight = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly counts = { sent: 0, retried: 0, droppedBodies: 0, droppedValues: 0 };
  private readonly onHidden = (): void => {
    if (typeof document !== 'undefined' && document.visibilityState === 'hidden') this.flush(true);
  };
  private readonly onPageHide = (): void => this.last(true);

  constructor(private readonly options: OtlpOptions) {
    this.maxQueued = Math.max(1, options.maxQueued ?? 32);
    this.resource = { ...browserResource(), ...options.resource, 'service.name': options.serviceName };
    this.partials = new Partials((report) => {
      for (const m of measurements(report, options.naming)) this.window.add(m);
    });
    this.timer = setInterval(() => this.flush(false), Math.max(1000, options.intervalMs ?? 30_000));
    if (typeof addEventListener === 'function') {
      addEventListener('pagehide', this.onPageHide);
      addEventListener('visibilitychange', this.onHidden);
    }
  }

  /** The meter's `onReport`: `new Meter({ api, onReport: exporter.record })`. */
  readonly record = (report: MeterReport): void => this.partials.take(report);

  /** Sends what has been recorded since the last send (and any retries due). */
  flush(unloading = false): void {
    const now = Date.now();
    this.counts.droppedValues += this.window.dropped;
    this.window.dropped = 0;
    if (this.window.size > 0) {
      for (const body of this.window.toRequests(now, this.resource, MAX_BODY)) {
        this.enqueue({ body, bytes: byteLength(body), attempt: 0, notBeforeMs: 0 });
      }
      this.window = new Window(now);
    }
    this.drain(unloading);
  }

  stats(): OtlpStats {
    const queuedBytes = this.queue.reduce((n, p) => n + p.bytes, 0);
    return { ...this.counts, queued: this.queue.length, queuedBytes };
  }

  /** Stops the timers and listeners after a last send. */
  shutdown(): void {
    this.last(false);
    clearInterval(this.timer);
    clearTimeout(this.retryTimer);
    this.timer = undefined;
    if (typeof removeEventListener === 'function') {
      removeEventListener('pagehide', this.onPageHide);
      removeEventListener('visibilitychange', this.onHidden);
    }
  }

  /** The last send: held partial reports too, since no final one will follow. */
  private last(unloading: boolean): void {
    this.partials.releaseAll();
    this.flush(unloading);
  }

  private enqueue(p: Pending): void {
    this.queue.push(p);
    while (this.queue.length > this.maxQueued) {
      this.queue.shift();
      this.counts.droppedBodies++;
    }
  }

  private drain(unloading: boolean): void {
    const now = Date.now();
    const due = this.queue.filter((p) => p.notBeforeMs <= now);
    this.queue.splice(0, this.queue.length, ...this.queue.filter((p) => p.notBeforeMs > now));
    for (const p of due) this.send(p, unloading);
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    clearTimeout(this.retryTimer);
    if (this.queue.length === 0 || this.timer === undefined) return;
    const next = Math.min(...this.queue.map((p) => p.notBeforeMs));
    this.retryTimer = setTimeout(() => this.drain(false), Math.max(0, next - Date.now()));
  }

  private send(p: Pending, unloading: boolean): void {
    const { bytes } = p;
    const keepalive = this.keepaliveInFlight + bytes <= KEEPALIVE_QUOTA;
    if (!keepalive && unloading) {
      // No quota left and the page is going: a plain request would be cancelled with it.
      this.enqueue(p);
      return;
    }
    if (keepalive) this.keepaliveInFlight += bytes;
    const done = (): void => {
      if (keepalive) this.keepaliveInFlight -= bytes;
    };
    fetch(this.options.url, {
      method: 'POST',
      body: p.body,
      keepalive,
      credentials: 'omit',
      headers: { ...this.options.headers, 'Content-Type': 'application/json' },
    }).then(
      (res) => {
        done();
        if (res.ok) {
          this.counts.sent++;
        } else if (RETRYABLE.has(res.status)) {
          this.retry(p, retryAfterMs(res.headers.get('Retry-After')));
        } else {
          this.counts.droppedBodies++;
        }
      },
      () => {
        done();
        this.retry(p, undefined);
      },
    );
  }

  private retry(p: Pending, afterMs: number | undefined): void {
    this.counts.retried++;
    const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** p.attempt) * (0.5 + Math.random() / 2);
    this.enqueue({ ...p, attempt: p.attempt + 1, notBeforeMs: Date.now() + Math.min(MAX_BACKOFF_MS, afterMs ?? backoff) });
    this.scheduleRetry();
  }
}

/** `Retry-After` in ms: delay-seconds or an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** The conventions' `browser.*` resource attributes this browser tells (none in Node). */
function browserResource(): Record<string, AttributeValue> {
  if (typeof navigator === 'undefined') return {};
  const out: Record<string, AttributeValue> = {};
  const ua = (navigator as Navigator & { userAgentData?: { brands?: { brand: string; version: string }[]; platform?: string; mobile?: boolean } }).userAgentData;
  if (ua?.brands) out['browser.brands'] = ua.brands.map((b) => `${b.brand} ${b.version}`);
  if (ua?.platform) out['browser.platform'] = ua.platform;
  if (typeof ua?.mobile === 'boolean') out['browser.mobile'] = ua.mobile;
  if (navigator.language) out['browser.language'] = navigator.language;
  // The conventions: the user agent string only where the client hints are missing.
  if (!ua?.brands && navigator.userAgent) out['user_agent.original'] = navigator.userAgent;
  return out;
}

