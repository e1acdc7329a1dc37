// Where `bench()` reads its streams: in a dedicated Worker (./reader-worker.ts) by default,
// so that a stamp is taken when the read resolved and not when the page's main thread got
// round to it (measured against a server's own send times at concurrency 4 with `render`:
// see docs/metrics.md, "Where the browser stamps"). On the page's main thread when asked
// (`worker: false`) or when no Worker can be had (no Worker in this context, a CSP without
// `worker-src 'self'`, a bundler that did not emit the file): the run goes on and its
// report says where its stamps were taken.

import { packageFile } from '../load.js';
import type { FromReader, ReaderEvent, ToReader } from './reader-protocol.js';
import { StreamRead, type StreamEvents, type StreamSpec } from './stream.js';
import { TimingMatcher, type RequestTiming } from './timing.js';

/** How long a starting Worker may take to say it runs before the page reads instead. */
const READY_TIMEOUT_MS = 10_000;
/** Round trips that check the Worker's clock mapping. */
const PINGS = 5;

/** One request being read. */
export interface OpenStream {
  /** Fails the request as `cancelled`, unless it is already over. */
  cancel(): void;
  /** The parser saw the end marker: the request is complete (the body is drained quietly). */
  parserEnded(): void;
  /** The request's Resource Timing, once its body is let go. Never rejects. */
  readonly timing: Promise<RequestTiming | undefined>;
}

/** Reads a run's streams and gives their events, stamped on the page's clock. */
export interface StreamHost {
  /** Where the stamps are taken, for the report's `environment.notes`. */
  readonly notes: Record<string, string>;
  open(spec: StreamSpec, events: StreamEvents): OpenStream;
  /** Stops the Worker (after the run: every request has settled). */
  close(): void;
}

/** The reader for a run: a Worker when `worker` and one starts, else the page itself. */
export async function streamHost(worker: boolean): Promise<StreamHost> {
  if (!worker) return pageHost('worker: false');
  if (typeof Worker === 'undefined') return pageHost('no Worker in this context');
  let w: Worker;
  try {
    w = startReader();
  } catch (e) {
    return pageHost(`the reader Worker could not start: ${errorText(e)}`);
  }
  try {
    return await WorkerHost.connect(w);
  } catch (e) {
    w.terminate();
    return pageHost(`the reader Worker did not start: ${errorText(e)}`);
  }
}

function startReader(): Worker {
  // Where a dev server's pre-bundling moved this module, the Worker is the installed
  // package's file. Otherwise the literal `new Worker(new URL(...), { ... })` below, the
  // pattern bundlers recognise to build and emit the Worker (Vite wants its options literal).
  const here = new URL(import.meta.url);
  const moved = packageFile(here, 'dist/bench/reader-worker.js');
  if (moved !== here) return new Worker(moved, { type: 'module', name: 'tpsmeter-reader' });
  return new Worker(new URL('./reader-worker.js', import.meta.url), { type: 'module', name: 'tpsmeter-reader' });
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function pageHost(why: string): StreamHost {
  const matcher = new TimingMatcher();
  return {
    notes: {
      stamp: 'each reader.read() stamped with performance.now() on the page\'s main thread, before any other work',
      stamp_thread: `main (${why})`,
    },
    open(spec, events) {
      const read = new StreamRead(spec, events, matcher);
      return { cancel: () => read.cancel(), parserEnded: () => read.parserEnded(), timing: read.timing };
    },
    close() {},
  };
}

interface Open {
  events: StreamEvents;
  /** `end` or `fail` was given (or the parser ended it): nothing more goes to `events`. */
  over: boolean;
  settle: (t: RequestTiming | undefined) => void;
}

class WorkerHost implements StreamHost {
  readonly notes: Record<string, string>;
  private readonly streams = new Map<number, Open>();
  private nextId = 1;

  private constructor(
    private readonly worker: Worker,
    /** Worker clock + offset = page clock. */
    private readonly offset: number,
    notes: Record<string, string>,
  ) {
    this.notes = notes;
    worker.onmessage = (e: MessageEvent<FromReader>) => this.onEvent(e.data);
    worker.onerror = (e) => this.lost(`the reader Worker failed: ${e.message || 'an error'}`);
    worker.onmessageerror = () => this.lost('a message from the reader Worker could not be read');
  }

  /** Waits for the Worker to run, then maps its clock onto the page's. */
  static async connect(worker: Worker): Promise<WorkerHost> {
    const ready = await new Promise<Extract<FromReader, { kind: 'ready' }>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
      worker.onmessage = (e: MessageEvent<FromReader>) => {
        if (e.data.kind !== 'ready') return;
        clearTimeout(timer);
        resolve(e.data);
      };
      worker.onerror = (e) => {
        clearTimeout(timer);
        e.preventDefault();
        reject(new Error(e.message || 'its script did not load'));
      };
    });
    const mapped = await clockOffset(worker, ready.timeOrigin - performance.timeOrigin);
    return new WorkerHost(worker, mapped.offset, {
      stamp: 'each reader.read() stamped with performance.now() in a dedicated Worker before any other work, mapped onto the page\'s clock',
      stamp_thread: 'worker',
      stamp_clock_map: mapped.how,
      worker_cross_origin_isolated: String(ready.isolated),
      worker_timer_resolution_ms: Number.isFinite(ready.resolutionMs) ? String(ready.resolutionMs) : 'unknown',
    });
  }

  open(spec: StreamSpec, events: StreamEvents): OpenStream {
    const id = this.nextId++;
    let settle!: (t: RequestTiming | undefined) => void;
    const timing = new Promise<RequestTiming | undefined>((resolve) => (settle = resolve));
    this.streams.set(id, { events, over: false, settle });
    this.post({ kind: 'open', id, spec });
    return {
      cancel: () => this.post({ kind: 'cancel', id }),
      parserEnded: () => {
        const s = this.streams.get(id);
        if (s) s.over = true;
        this.post({ kind: 'ended', id });
      },
      timing,
    };
  }

  close(): void {
    this.worker.terminate();
    this.lost('the run ended');
  }

  private post(m: ToReader): void {
    this.worker.postMessage(m);
  }

  private onEvent(m: FromReader): void {
    if (!('id' in m)) return;
    const s = this.streams.get(m.id);
    if (!s) return;
    if (m.kind === 'timing') {
      this.streams.delete(m.id);
      s.settle(m.timing);
      return;
    }
    if (s.over) return;
    deliver(s, m, this.offset);
  }

  /** The Worker is gone: every open request fails now (its events stop here). */
  private lost(why: string): void {
    const t = performance.now();
    for (const s of this.streams.values()) {
      if (!s.over) {
        s.over = true;
        s.events.fail(t, 'other', why);
      }
      s.settle(undefined);
    }
    this.streams.clear();
  }
}

/** Gives one Worker event to the request's events, on the page's clock. */
function deliver(s: Open, m: Exclude<ReaderEvent, { kind: 'timing' }>, offset: number): void {
  const t = m.t + offset;
  switch (m.kind) {
    case 'start':
      return s.events.start(t);
    case 'response':
      return s.events.response(t, m.status, m.retryAfter);
    case 'bytes':
      return s.events.bytes(t, m.chunk);
    case 'errorBody':
      return s.events.errorBody(t, m.chunk);
    case 'end':
      s.over = true;
      return s.events.end(t);
    case 'fail':
      s.over = true;
      return s.events.fail(t, m.errorClass, m.message);
    case 'fetchError':
      s.over = true;
      return s.events.fetchError(t, m.detail);
  }
}

/**
 * The Worker's clock mapped onto the page's: `performance.now()` in each counts from its own
 * time origin, so the difference of the two origins maps one onto the other. Checked
 * against round trips (a Worker reading at `w` between page readings `a` and `b` must map
 * into [a, b]); where the origins disagree with that (a browser that rounds `timeOrigin`
 * more coarsely than `now()`), the tightest round trip's midpoint is used instead.
 */
async function clockOffset(worker: Worker, fromOrigins: number): Promise<{ offset: number; how: string }> {
  let lo = -Infinity;
  let hi = Infinity;
  for (let seq = 0; seq < PINGS; seq++) {
    const a = performance.now();
    const w = await new Promise<number>((resolve) => {
      worker.onmessage = (e: MessageEvent<FromReader>) => {
        if (e.data.kind === 'pong' && e.data.seq === seq) resolve(e.data.t);
      };
      worker.postMessage({ kind: 'ping', seq } satisfies ToReader);
    });
    const b = performance.now();
    lo = Math.max(lo, a - w);
    hi = Math.min(hi, b - w);
  }
  // The two clocks' readings are rounded to their resolution: allow a step of each.
  const slack = 0.2;
  if (fromOrigins >= lo - slack && fromOrigins <= hi + slack) {
    return { offset: fromOrigins, how: `time origins (round trips agree within ${round3(hi - lo)} ms)` };
  }
  const mid = lo <= hi ? (lo + hi) / 2 : fromOrigins;
  return { offset: mid, how: `round trips (±${round3(Math.abs(hi - lo) / 2)} ms; time origins were ${round3(fromOrigins - mid)} ms off)` };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
