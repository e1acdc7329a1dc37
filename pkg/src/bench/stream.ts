// One streamed request's network side: fetch, read, stamp, time out, classify. No wasm and
// no DOM: it runs in the reader Worker (./reader-worker.ts), where the page's own work
// cannot delay a stamp, and on the page when no Worker can be had (./reader.ts).
//
// The stamp rule: each `reader.read()` is stamped with `performance.now()` as the very
// first thing after it resolves, before the bytes go anywhere; the events carry the stamp
// with the bytes. Failures that only JavaScript sees (timeouts, cancellation, CORS,
// unreachable servers) are reported with the time they happened. Messages are not redacted
// here: whoever feeds them to the exchange does that, in one place.

import type { FailClass } from '../types.js';
import { TimingMatcher, type RequestTiming } from './timing.js';

/** Bytes of a non-2xx body kept for the error message. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** After the end marker, how long to keep reading so the connection can be reused. */
const DRAIN_MS = 1000;
/** Waits for a Resource Timing entry that is not there yet when the body has just ended. */
const TIMING_RETRY_MS = [0, 10, 50];

export interface HttpRequest {
  method: string;
  url: string;
  headers: [string, string][];
  body: string;
}

/** What one request needs on the network side (structured-cloneable: it crosses to the Worker). */
export interface StreamSpec {
  request: HttpRequest;
  timeoutMs: number;
  idleTimeoutMs: number;
}

/** A request's events, in order, each with its stamp (ms, this context's `performance.now()`). */
export interface StreamEvents {
  /** Taken right before `fetch()`: always the first event. */
  start(t: number): void;
  response(t: number, status: number, retryAfter: string | null): void;
  /** A read of the (2xx) body. */
  bytes(t: number, chunk: Uint8Array): void;
  /** A read of a non-2xx body (the first MAX_ERROR_BODY_BYTES). */
  errorBody(t: number, chunk: Uint8Array): void;
  /** The body ended. Last event, unless the parser had already seen the end marker. */
  end(t: number): void;
  /** The request failed. Last event, as `end`. */
  fail(t: number, errorClass: FailClass, message: string): void;
  /**
   * `fetch()` rejected on its own (not a timeout or cancellation): classified on the page
   * (`classifyFetchError`). Last event, as `end`.
   */
  fetchError(t: number, detail: string): void;
}

interface Failure {
  errorClass: FailClass;
  message: string;
  t: number;
}

/** One request on the network side. */
export class StreamRead {
  /** Settles with the request's Resource Timing (when it has one) after the body is let go. */
  readonly timing: Promise<RequestTiming | undefined>;
  private readonly abort = new AbortController();
  private failure: Failure | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private parserDone = false;
  private body: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private startMs = 0;
  private responded = false;

  constructor(
    private readonly spec: StreamSpec,
    private readonly events: StreamEvents,
    matcher: TimingMatcher,
  ) {
    this.timing = this.run().then(() => (this.responded ? takeTiming(matcher, spec.request.url, this.startMs) : undefined));
  }

  /** Fails the request as `cancelled` (the run was cancelled), unless it is already over. */
  cancel(): void {
    this.failWith('cancelled', 'the run was cancelled');
  }

  /**
   * The parser has seen the stream's end marker: the request is complete. Stops the idle
   * timer and reads what follows (usually nothing but the end of the body) for up to DRAIN_MS,
   * so an HTTP/1.1 connection goes back to the pool; no more events are sent.
   */
  parserEnded(): void {
    if (this.parserDone) return;
    this.parserDone = true;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.body?.cancel().catch(() => {}), DRAIN_MS);
  }

  private failWith(errorClass: FailClass, message: string): void {
    if (this.failure || this.parserDone) return;
    this.failure = { errorClass, message, t: performance.now() };
    this.abort.abort(new DOMException(message, 'AbortError'));
  }

  private arm(ms: number, errorClass: FailClass, message: string): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.failWith(errorClass, message), ms);
  }

  /** The failure this context caused (a timeout, cancellation), reported at its own time. */
  private reportFailure(): boolean {
    const f = this.failure;
    if (!f) return false;
    this.events.fail(f.t, f.errorClass, f.message);
    return true;
  }

  /** Runs the request to its end (the drain after the end marker included). Never rejects. */
  private async run(): Promise<void> {
    const { spec, events } = this;
    const firstByteMsg = `no response byte within ${spec.timeoutMs / 1000} s (timeoutS)`;
    const stallMsg = `the stream was silent for ${spec.idleTimeoutMs / 1000} s (idleTimeoutS)`;
    const { method, url, headers, body } = spec.request;
    this.arm(spec.timeoutMs, 'timeout_first_byte', firstByteMsg);
    this.startMs = performance.now();
    // No `cache: 'no-store'`: POST responses are never cached anyway, and in Chromium it
    // also bypasses the CORS preflight cache, which would put a preflight round trip into
    // every request's TTFT (measured: 5 fetches made 10 requests to the server, not 6).
    // Sent before the `start` event, whose handling (the exchange's set-up) is not the
    // server's time.
    // `redirect: 'manual'`: a redirect is never followed, since the key's header would go
    // along to wherever the server points. 'manual' rather than 'error' because its answer
    // (an `opaqueredirect`) says that it was a redirect, where 'error' rejects as a network
    // failure would.
    const pending = fetch(url, { method, headers, body, signal: this.abort.signal, redirect: 'manual' });
    events.start(this.startMs);
    try {
      let response: Response;
      try {
        response = await pending;
      } catch (e) {
        const t = performance.now();
        if (this.reportFailure()) return;
        clearTimeout(this.timer);
        events.fetchError(t, fetchErrorText(e));
        return;
      }
      if (response.type === 'opaqueredirect') {
        // The browser hides the status and the target; the exchange words the failure.
        clearTimeout(this.timer);
        events.fail(performance.now(), 'redirect', 'a redirect, not followed');
        return;
      }
      events.response(performance.now(), response.status, response.headers.get('retry-after'));
      this.responded = true;
      const reader = response.body?.getReader();
      this.body = reader;
      if (!response.ok) {
        if (reader) await this.readErrorBody(reader);
        clearTimeout(this.timer);
        const t = performance.now();
        if (this.failure?.errorClass === 'cancelled') this.reportFailure();
        else events.end(t);
        return;
      }
      if (!reader) {
        events.end(performance.now());
        return;
      }
      for (;;) {
        let r: ReadableStreamReadResult<Uint8Array>;
        try {
          r = await reader.read();
        } catch (e) {
          const t = performance.now();
          if (this.parserDone) return;
          if (this.reportFailure()) return;
          // The connection broke mid-body: the exchange records a started stream as truncated.
          events.fail(t, 'connect', `the response body failed: ${fetchErrorText(e)}`);
          return;
        }
        const t = performance.now();
        if (this.parserDone) {
          if (r.done) return;
          continue;
        }
        if (r.done) {
          events.end(t);
          return;
        }
        if (r.value.byteLength === 0) continue;
        this.arm(spec.idleTimeoutMs, 'stall', stallMsg);
        events.bytes(t, r.value);
      }
    } finally {
      clearTimeout(this.timer);
    }
  }

  /** Reads up to MAX_ERROR_BODY_BYTES of an error body, then lets go. */
  private async readErrorBody(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    let kept = 0;
    try {
      while (kept < MAX_ERROR_BODY_BYTES && !this.failure) {
        const r = await reader.read();
        const t = performance.now();
        if (r.done) return;
        const room = MAX_ERROR_BODY_BYTES - kept;
        const chunk = r.value.byteLength > room ? r.value.subarray(0, room) : r.value;
        this.events.errorBody(t, chunk);
        kept += chunk.byteLength;
      }
      reader.cancel().catch(() => {});
    } catch {
      // A broken or slow error body still leaves the status to report.
    }
  }
}

/**
 * The request's Resource Timing entry, waiting briefly for one the browser is about to add;
 * a request that got a response but no entry has unknown phases (`no_entry`), not none.
 */
async function takeTiming(matcher: TimingMatcher, url: string, startMs: number): Promise<RequestTiming> {
  for (const ms of TIMING_RETRY_MS) {
    const rt = matcher.take(url, startMs);
    if (rt) return rt;
    await new Promise((r) => setTimeout(r, ms));
  }
  return matcher.take(url, startMs) ?? { opaque: true, reason: 'no_entry' };
}

/** How a rejected fetch's error reads (`name: message`), to classify on the page later. */
export function fetchErrorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
