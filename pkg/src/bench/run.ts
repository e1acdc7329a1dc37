// `bench()`: the browser's load loop around the wasm `BenchRun`.
//
// The wasm side decides what to do next (start a request, sleep until a scheduled arrival,
// wait for a completion, stop) and turns stamped bytes into records and the report; this
// side runs fetches, timers and the DOM, and adds what only a browser knows: queueing in
// the browser, the HTTP version, hidden-tab periods, paint times.

import { loadWasm } from '../raw.js';
import { RequestPainter } from '../paint.js';
import type { Action, RecordExtras, Report, RequestRecord } from '../types.js';
import { loadDataset } from './dataset.js';
import { browserEnvironment } from './environment.js';
import {
  DEFAULT_IDLE_TIMEOUT_S,
  DEFAULT_TIMEOUT_S,
  maxConcurrency,
  runSettings,
  type BenchOptions,
  type Progress,
} from './options.js';
import { redactor } from './redact.js';
import { checkSettings } from './validate.js';
import { runLocalRequest, type BenchEngine } from './local.js';
import { streamHost, type StreamHost } from './reader.js';
import { runRequest, type HttpRequest } from './request.js';
import { loadTokenizer } from './tokenizer.js';
import { VisibilityLog } from './visibility.js';
import { setupParts, type OpaqueReason } from './timing.js';
import { runWarnings } from './warnings.js';

/**
 * Runs a benchmark from this page and resolves to its report (the CLI's JSON report).
 * Rejects only for invalid options or a failed wasm load; failed requests are records.
 */
export async function bench(options: BenchOptions): Promise<Report> {
  const raw = await loadWasm();
  const settings = runSettings(options);
  // The core's run spec checks every other option, before anything is fetched.
  checkSettings(raw, settings);
  // A dataset is read (or fetched) here and parsed by the wasm, which gets its bytes.
  const { dataset, ...rest } = settings;
  const withDataset = dataset === undefined ? rest : { ...rest, dataset: await loadDataset(dataset, options.signal) };
  const tokenizer = options.tokenizer === undefined ? undefined : await loadTokenizer(options.tokenizer, options.signal);
  let run: InstanceType<typeof raw.BenchRun>;
  try {
    run = new raw.BenchRun(withDataset, tokenizer?.count);
  } catch (e) {
    tokenizer?.free();
    throw e;
  }
  const visibility = new VisibilityLog();
  const cancel = new AbortController();
  const { signal, onProgress, onRecord, render } = options;
  const engine: BenchEngine | undefined = options.engine;
  const started = performance.now();

  let interrupted = false;
  let fatal: unknown;
  let wake: (() => void) | undefined;
  const notify = (): void => wake?.();
  const onAbort = (): void => {
    interrupted = true;
    cancel.abort();
    notify();
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });

  const inFlight = new Set<Promise<void>>();
  // The most requests this run had in flight at once: what could have queued for a connection.
  let peakInFlight = 0;
  const httpVersions = new Set<string>();
  let minQueueMs = Infinity;
  let maxQueueMs = 0;
  // Requests whose Resource Timing gave no phases, by why (see timing.ts).
  const opaqueTimings = new Map<OpaqueReason, number>();
  let renderError: unknown;
  let host: StreamHost | undefined;

  try {
    // Remote streams are read (and stamped) in a Worker unless told otherwise.
    host = await streamHost(!engine && (options.worker ?? true));
    const reader = host;
    const request = run.request() as HttpRequest;
    const redact = redactor(settings.apiKey);
    const timeoutMs = (settings.timeoutS ?? DEFAULT_TIMEOUT_S) * 1000;
    const idleTimeoutMs = (settings.idleTimeoutS ?? DEFAULT_IDLE_TIMEOUT_S) * 1000;

    const one = async (a: Extract<Action, { kind: 'start' }>): Promise<void> => {
      const painter = render
        ? new RequestPainter(render, { request: a.ticket, level: a.level, warmup: a.warmup })
        : undefined;
      // Each request's own body (its prompt starts with a mark of its own: no server
      // answers it from a prompt cache), built before the start stamp.
      const body = run.body(a.ticket);
      const req = body === undefined ? request : { ...request, body };
      const setup = { request: req, timeoutMs, idleTimeoutMs, cancel: cancel.signal, begin: (t: number) => run.begin(a.ticket, t), painter };
      const out = engine ? await runLocalRequest({ ...setup, engine }) : await runRequest({ ...setup, redact, host: reader });
      if (painter) {
        const p = await painter.settle();
        if (p) out.exchange.paintFrames(p.ready, p.raf, p.shown);
        renderError ??= painter.error;
      }
      const rt = await out.timing;
      if (rt?.httpVersion) httpVersions.add(rt.httpVersion);
      if (rt?.opaque) opaqueTimings.set(rt.reason ?? 'no_phases', (opaqueTimings.get(rt.reason ?? 'no_phases') ?? 0) + 1);
      if (rt?.queueMs !== undefined) {
        minQueueMs = Math.min(minQueueMs, rt.queueMs);
        maxQueueMs = Math.max(maxQueueMs, rt.queueMs);
      }
      const extras: RecordExtras = { tabHidden: visibility.hiddenDuring(out.startMs, out.endMs) };
      if (rt?.queueMs !== undefined) extras.queueMs = rt.queueMs;
      if (rt?.httpVersion) extras.httpVersion = rt.httpVersion;
      if (rt) Object.assign(extras, setupParts(rt));
      const record = run.complete(a.ticket, out.exchange, extras) as RequestRecord;
      callback(onRecord, record);
      if (onProgress) {
        const p = run.progress() as Omit<Progress, 'levelsDone' | 'elapsedMs'>;
        callback(onProgress, { ...p, levelsDone: run.levelsDone(), elapsedMs: performance.now() - started });
      }
    };

    const waitFor = (ms?: number): Promise<void> =>
      new Promise((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        };
        const timer = ms === undefined ? undefined : setTimeout(done, ms);
        wake = done;
      });

    loop: while (!cancel.signal.aborted) {
      const a = run.next(performance.now()) as Action;
      switch (a.kind) {
        case 'start': {
          const p: Promise<void> = one(a)
            .catch((e: unknown) => {
              // A wasm error (a bug) stops the run; it is rethrown once all requests settle.
              fatal ??= e;
              cancel.abort();
            })
            .finally(() => {
              inFlight.delete(p);
              notify();
            });
          inFlight.add(p);
          peakInFlight = Math.max(peakInFlight, inFlight.size);
          break;
        }
        case 'sleep':
          await waitFor(Math.max(0, a.untilMs - performance.now()));
          break;
        case 'wait':
          await waitFor();
          break;
        case 'done':
          break loop;
      }
    }
    if (cancel.signal.aborted) run.cancel(performance.now());
    while (inFlight.size > 0) await Promise.all([...inFlight]);
    if (fatal !== undefined) throw fatal;

    const hiddenMs = visibility.hiddenMs(performance.now());
    const environment = browserEnvironment({
      toolVersion: raw.version(),
      hiddenMs,
      httpVersions,
      engine,
      stampNotes: engine ? undefined : reader.notes,
      opaque: opaqueTimings,
    });
    const warnings = runWarnings({
      url: request.url,
      // A search asks for the loads it chooses: the most it had in flight is what it asked.
      maxConcurrency: settings.findMax ? Math.max(maxConcurrency(settings), peakInFlight) : maxConcurrency(settings),
      peakInFlight,
      httpVersions,
      minQueueMs,
      maxQueueMs,
      opaqueTimings,
      hiddenMs,
      wasHidden: visibility.wasHidden,
      interrupted,
      renderError,
      local: engine !== undefined,
    });
    return run.report(environment, warnings) as Report;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    visibility.dispose();
    host?.close();
    run.free();
    tokenizer?.free();
  }
}

/** Calls an app callback; an exception in it is reported, not allowed to break the run. */
function callback<T>(fn: ((arg: T) => void) | undefined, arg: T): void {
  if (!fn) return;
  try {
    fn(arg);
  } catch (e) {
    if (typeof reportError === 'function') reportError(e);
    else setTimeout(() => { throw e; });
  }
}
