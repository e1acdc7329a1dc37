// tpsmeter/meter: the real-user meter for an app's own LLM streams.
//
// Cheap on purpose: while a stream runs it only stamps `performance.now()` and keeps the
// bytes; the wasm parser (the one `bench()` and the CLI use) is imported dynamically when a
// report is built, after the stream, when the browser is idle. Nothing here imports the
// wasm glue or the bench statically.

import { canObserveFrames } from '../frames.js';
import { newLog, TEXT_WIRE, type StreamLog } from './log.js';
import { tapIterable, tapStream } from './tap.js';
import type { MeterOptions, MeterReport, MeterStream } from './types.js';

export type { MeterOptions, MeterRecord, MeterReport, MeterStream, OtelData, OtelMetric } from './types.js';
export { setPackageBase } from '../package-base.js';

/** After a stream ends, how long to wait for the app's last paint before reporting. */
const SETTLE_MS = 500;
/** Longest wait for an idle moment before building a report anyway. */
const IDLE_TIMEOUT_MS = 2000;

type Chunk = Uint8Array | string;

export class Meter {
  private log: StreamLog | undefined;
  /** Streams not ended: each reports early when the tab goes hidden. */
  private readonly running = new Set<StreamLog>();
  /** Paints are tracked once the app calls `painted()` or `observe()`. */
  private trackPaints = false;
  private readonly observers = new Set<MutationObserver>();
  private readonly onHidden = (): void => {
    if (document.visibilityState !== 'hidden') return;
    for (const log of this.running) {
      if (log.endMs === undefined && !log.partialSent) this.deliver(log, true);
    }
  };

  constructor(private readonly options: MeterOptions) {
    if (typeof document !== 'undefined') document.addEventListener('visibilitychange', this.onHidden);
  }

  /**
   * Marks the start of a new stream (call right before `fetch` so TTFT covers the request)
   * and returns its own handle: `const s = meter.start(); s.wrap(await fetch(...))`. Streams
   * started this way are measured independently, however many run at once. The meter's own
   * `wrap()`/`chunk()`/`end()` act on the stream started last.
   */
  start(): MeterStream {
    const log = this.begin(this.options.api, true);
    const attach = (): StreamLog => {
      if (log.tapped || log.responseMs !== undefined) {
        throw new Error('tpsmeter: this stream was already wrapped or fed; call meter.start() for each stream');
      }
      return log;
    };
    return {
      wrap: ((x: Response | ReadableStream<Uint8Array> | AsyncIterable<Chunk>) => this.tap(attach(), x)) as MeterStream['wrap'],
      chunk: (text: string) => this.feed(log, text),
      end: () => this.finish(log),
      painted: () => {
        this.trackPaints = true;
        ready(log, performance.now());
      },
      report: () => this.reportOf(log),
    };
  }

  /**
   * Passes a stream through, stamping each chunk. A `Response` gives a new Response (same
   * status and headers) whose body yields the very same chunks; a ReadableStream gives a
   * stream; an async iterable (of bytes or strings) gives an async iterable.
   */
  wrap(response: Response): Response;
  wrap(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>;
  wrap<T extends Chunk>(iterable: AsyncIterable<T>): AsyncIterable<T>;
  wrap(x: Response | ReadableStream<Uint8Array> | AsyncIterable<Chunk>): unknown {
    return this.tap(this.begin(this.options.api, false), x);
  }

  private tap(log: StreamLog, x: Response | ReadableStream<Uint8Array> | AsyncIterable<Chunk>): unknown {
    log.tapped = true;
    const t = performance.now();
    log.responseMs = t;
    const onEnd = (): void => this.ended(log);
    if (typeof Response !== 'undefined' && x instanceof Response) {
      log.status = x.status;
      log.retryAfter = x.headers.get('retry-after');
      if (!x.body) {
        log.endMs = t;
        onEnd();
        return x;
      }
      const body = tapStream(x.body, log, onEnd);
      return new Response(body, { status: x.status, statusText: x.statusText, headers: x.headers });
    }
    if (typeof ReadableStream !== 'undefined' && x instanceof ReadableStream) return tapStream(x, log, onEnd);
    return tapIterable(x as AsyncIterable<Chunk>, log, onEnd);
  }

  /** Stamps a text delta the app received by other means (already decoded: measured as text, no wire). */
  chunk(text: string): void {
    let log = this.log;
    if (!(log && log.endMs === undefined && log.wire === TEXT_WIRE)) log = this.begin(TEXT_WIRE, false);
    this.feed(log, text);
  }

  /** Ends a stream fed with `chunk()`. */
  end(): void {
    if (this.log) this.finish(this.log);
  }

  private feed(log: StreamLog, text: string): void {
    const t = performance.now();
    if (typeof text !== 'string') throw new TypeError('tpsmeter: chunk() takes the text delta as a string');
    if (log.endMs !== undefined) return;
    log.wire = TEXT_WIRE;
    log.responseMs ??= t;
    log.times.push(t);
    log.chunks.push(text);
  }

  private finish(log: StreamLog): void {
    if (log.endMs !== undefined) return;
    log.endMs = performance.now();
    this.ended(log);
  }

  /** The app's last update is in the DOM: the next frame paints it. */
  painted(): void {
    this.trackPaints = true;
    if (this.log) ready(this.log, performance.now());
  }

  /** Watches `element`: text added to it makes the next frame a paint. Returns a disconnect. */
  observe(element: Node): () => void {
    this.trackPaints = true;
    const mo = new MutationObserver((records) => {
      const t = performance.now();
      if (this.log && records.some((r) => r.type === 'characterData' || r.addedNodes.length > 0)) ready(this.log, t);
    });
    mo.observe(element, { childList: true, characterData: true, subtree: true });
    this.observers.add(mo);
    return () => {
      mo.disconnect();
      this.observers.delete(mo);
    };
  }

  /** The report of the current (or last) stream; `partial` while it has not ended. */
  report(): Promise<MeterReport> {
    const log = this.log;
    if (!log) return Promise.reject(new Error('tpsmeter: no stream to report (call start() or wrap() first)'));
    return this.reportOf(log);
  }

  /** `log`'s final report once built, else one built now (partial while it runs). */
  private reportOf(log: StreamLog): Promise<MeterReport> {
    if (log.endMs !== undefined && log.built) return log.built;
    return build(log, this.options, log.endMs === undefined);
  }

  /** Stops watching the page (visibility, observed elements). */
  dispose(): void {
    if (typeof document !== 'undefined') document.removeEventListener('visibilitychange', this.onHidden);
    for (const mo of this.observers) mo.disconnect();
    this.observers.clear();
    this.log?.frames.stop();
    this.running.clear();
  }

  private begin(wire: string, explicit: boolean): StreamLog {
    const prev = this.log;
    // A start() right before wrap()/chunk() belongs to that stream.
    if (!explicit && prev && prev.responseMs === undefined && prev.endMs === undefined) {
      prev.wire = wire;
      return prev;
    }
    // A wrapped stream ends with its body (streams may overlap); one fed with chunk() has no
    // end of its own: a new stream ends it. A start() not yet wrapped or fed is left open:
    // its handle may still be waiting for its response (`Promise.all` of two requests).
    if (prev && prev.endMs === undefined && !prev.tapped && prev.responseMs !== undefined) {
      prev.endMs = performance.now();
      this.ended(prev);
    }
    const log = newLog(wire, performance.now());
    log.implicitStart = !explicit;
    this.log = log;
    this.running.add(log);
    if (this.trackPaints) log.frames.start();
    return log;
  }


  private ended(log: StreamLog): void {
    this.running.delete(log);
    if (log.reported) return;
    const go = (): void => {
      if (!log.reported) this.deliver(log, false);
    };
    if (!this.trackPaints) return idle(go);
    // Wait for the frame after the app's last update, then report when idle.
    const endMs = log.endMs ?? performance.now();
    const deadline = setTimeout(() => idle(go), SETTLE_MS);
    log.frames.onFrame = (t) => {
      const last = log.ready[log.ready.length - 1];
      if (last !== undefined && last >= endMs && t >= last) {
        clearTimeout(deadline);
        log.frames.onFrame = undefined;
        idle(go);
      }
    };
  }

  private deliver(log: StreamLog, partial: boolean): void {
    if (partial) log.partialSent = true;
    else {
      log.reported = true;
      log.frames.stop();
    }
    const p = build(log, this.options, partial);
    if (!partial) log.built = p;
    const { onReport, onError } = this.options;
    p.then(
      (r) => onReport?.(r),
      (e: unknown) => {
        const err = e instanceof Error ? e : new Error(String(e));
        if (onError) onError(err);
        else rethrow(err);
      },
    );
  }
}

/** Builds the report off the critical path: the parser is loaded only now. */
async function build(log: StreamLog, options: MeterOptions, partial: boolean): Promise<MeterReport> {
  const { buildReport } = await import('./report.js');
  return buildReport(log, options, partial);
}

function idle(fn: () => void): void {
  if (typeof requestIdleCallback === 'function') requestIdleCallback(fn, { timeout: IDLE_TIMEOUT_MS });
  else setTimeout(fn, 0);
}

function rethrow(e: unknown): void {
  if (typeof globalThis.reportError === 'function') globalThis.reportError(e);
}

/** The app's text for `log` is in the DOM at `t`: the next frame paints it. */
function ready(log: StreamLog, t: number): void {
  log.ready.push(t);
  if (canObserveFrames()) log.frames.start();
}
