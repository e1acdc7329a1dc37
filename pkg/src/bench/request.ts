// One streamed request of a run: fetch, read, stamp, time out, classify.
//
// The stamp rule: each `reader.read()` is stamped with `performance.now()` as the very
// first thing after it resolves, before the bytes go anywhere; the wasm parser gets the
// stamp with the bytes. Failures that only JavaScript sees (timeouts, cancellation, CORS,
// unreachable servers) are given to the exchange with the time they happened.

import type { Exchange } from '../raw.js';
import type { RequestPainter } from '../paint.js';
import type { FailClass } from '../types.js';
import { classifyFetchError } from './classify.js';

/** Bytes of a non-2xx body kept for the error message. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** After the end marker, how long to keep reading so the connection can be reused. */
const DRAIN_MS = 1000;

export interface HttpRequest {
  method: string;
  url: string;
  headers: [string, string][];
  body: string;
}

export interface RequestSetup {
  request: HttpRequest;
  timeoutMs: number;
  idleTimeoutMs: number;
  /** The run's cancellation. */
  cancel: AbortSignal;
  /** Removes secrets from messages. */
  redact: (message: string) => string;
  /** Creates the exchange once the start stamp is taken (`BenchRun.begin`). */
  begin: (startMs: number) => Exchange;
  painter?: RequestPainter;
}

export interface Outcome {
  exchange: Exchange;
  startMs: number;
  endMs: number;
  /** Whether response headers arrived (so the browser may have a Resource Timing entry). */
  responded: boolean;
  /** Settles when the body has been read to its end or let go (never rejects). */
  drained: Promise<void>;
}

interface Failure {
  errorClass: FailClass;
  message: string;
  t: number;
}

/** Runs one request to its end. Never rejects: every failure lands in the exchange. */
export async function runRequest(s: RequestSetup): Promise<Outcome> {
  const abort = new AbortController();
  let failure: Failure | undefined;
  const failWith = (errorClass: FailClass, message: string): void => {
    if (failure) return;
    failure = { errorClass, message, t: performance.now() };
    abort.abort(new DOMException(message, 'AbortError'));
  };
  const onCancel = (): void => failWith('cancelled', 'the run was cancelled');
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (ms: number, errorClass: FailClass, message: string): void => {
    clearTimeout(timer);
    timer = setTimeout(() => failWith(errorClass, message), ms);
  };
  const firstByteMsg = `no response byte within ${s.timeoutMs / 1000} s (timeoutS)`;
  const stallMsg = `the stream was silent for ${s.idleTimeoutMs / 1000} s (idleTimeoutS)`;

  const { method, url, headers, body } = s.request;
  arm(s.timeoutMs, 'timeout_first_byte', firstByteMsg);
  const startMs = performance.now();
  // No `cache: 'no-store'`: POST responses are never cached anyway, and in Chromium it also
  // bypasses the CORS preflight cache, which would put a preflight round trip into every
  // request's TTFT (measured: 5 fetches made 10 requests to the server instead of 6).
  const pending = fetch(url, { method, headers, body, signal: abort.signal });
  const exchange = s.begin(startMs);
  if (s.cancel.aborted) onCancel();
  else s.cancel.addEventListener('abort', onCancel, { once: true });

  let responded = false;
  let drained: Promise<void> = Promise.resolve();
  const finish = (t: number): Outcome => ({ exchange, startMs, endMs: t, responded, drained });
  try {
    let response: Response;
    try {
      response = await pending;
    } catch (e) {
      const t = performance.now();
      if (failure) {
        exchange.fail(failure.t, failure.errorClass, failure.message);
        return finish(failure.t);
      }
      clearTimeout(timer);
      const c = await classifyFetchError(url, e);
      exchange.fail(t, c.errorClass, s.redact(c.message));
      return finish(t);
    }
    exchange.response(performance.now(), response.status, response.headers.get('retry-after'));
    responded = true;
    const reader = response.body?.getReader();
    if (!response.ok) {
      if (reader) await readErrorBody(reader, exchange, () => failure !== undefined);
      clearTimeout(timer);
      const t = performance.now();
      if (failure?.errorClass === 'cancelled') {
        exchange.fail(failure.t, failure.errorClass, failure.message);
        return finish(failure.t);
      }
      exchange.end(t);
      return finish(t);
    }
    if (!reader) {
      const t = performance.now();
      exchange.end(t);
      return finish(t);
    }
    for (;;) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (e) {
        const t = performance.now();
        if (failure) {
          exchange.fail(failure.t, failure.errorClass, failure.message);
          return finish(failure.t);
        }
        // The connection broke mid-body: the exchange records a started stream as truncated.
        exchange.fail(t, 'connect', s.redact(`the response body failed: ${errorText(e)}`));
        return finish(t);
      }
      const t = performance.now();
      if (r.done) {
        exchange.end(t);
        return finish(t);
      }
      if (r.value.byteLength === 0) continue;
      arm(s.idleTimeoutMs, 'stall', stallMsg);
      const text = exchange.bytes(t, r.value);
      if (text && s.painter) s.painter.add(t, text);
      if (exchange.ended) {
        clearTimeout(timer);
        drained = drain(reader);
        return finish(t);
      }
    }
  } finally {
    clearTimeout(timer);
    s.cancel.removeEventListener('abort', onCancel);
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

/** Reads up to MAX_ERROR_BODY_BYTES of an error body into the exchange, then lets go. */
async function readErrorBody(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  exchange: Exchange,
  aborted: () => boolean,
): Promise<void> {
  let kept = 0;
  try {
    while (kept < MAX_ERROR_BODY_BYTES && !aborted()) {
      const r = await reader.read();
      const t = performance.now();
      if (r.done) return;
      const room = MAX_ERROR_BODY_BYTES - kept;
      const chunk = r.value.byteLength > room ? r.value.subarray(0, room) : r.value;
      exchange.errorBody(t, chunk);
      kept += chunk.byteLength;
    }
    reader.cancel().catch(() => {});
  } catch {
    // A broken or slow error body still leaves the status to report.
  }
}

/**
 * Reads what follows the end marker (usually nothing but the end of the body) so an
 * HTTP/1.1 connection goes back to the pool; gives up after DRAIN_MS. In the background:
 * the request is already complete.
 */
function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  const deadline = setTimeout(() => reader.cancel().catch(() => {}), DRAIN_MS);
  const pump = (): Promise<void> => reader.read().then((r) => (r.done ? undefined : pump()));
  return pump()
    .catch(() => {})
    .finally(() => clearTimeout(deadline));
}
