// One streamed request of a run, on the page: its stream's stamped events (read in the
// reader Worker, or on the page; see ./reader.ts) fed to the wasm exchange as they come,
// and its text to the painter. The stamps are the reads' own: however late an event reaches
// this thread, it carries the time its read resolved.

import type { Exchange } from '../raw.js';
import type { RequestPainter } from '../paint.js';
import type { OpenStream, StreamHost } from './reader.js';
import type { StreamEvents, StreamSpec } from './stream.js';
import type { RequestTiming } from './timing.js';
import { classifyFetchError, type Classified } from './classify.js';

export type { HttpRequest } from './stream.js';

export interface RequestSetup extends StreamSpec {
  /** The run's cancellation. */
  cancel: AbortSignal;
  /** Removes secrets from messages. */
  redact: (message: string) => string;
  /** Creates the exchange once the start stamp is taken (`BenchRun.begin`). */
  begin: (startMs: number) => Exchange;
  painter?: RequestPainter;
  /** Where the stream is read. */
  host: StreamHost;
}

export interface Outcome {
  exchange: Exchange;
  startMs: number;
  endMs: number;
  /** The request's Resource Timing, once its body is let go (never rejects). */
  timing: Promise<RequestTiming | undefined>;
}

/**
 * Runs one request to its end. Every failure of the request lands in the exchange; it
 * rejects only when the exchange itself throws (a bug in the wasm side, which stops the run).
 */
export function runRequest(s: RequestSetup): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    let exchange: Exchange | undefined;
    let startMs = 0;
    let stream: OpenStream | undefined;
    let over = false;
    // The exchange exists from the `start` event on; a Worker lost before it still gets one.
    const ex = (t: number): Exchange => {
      if (!exchange) {
        startMs = t;
        exchange = s.begin(t);
      }
      return exchange;
    };
    const onCancel = (): void => stream?.cancel();
    const finish = (t: number): void => {
      if (over) return;
      over = true;
      s.cancel.removeEventListener('abort', onCancel);
      resolve({ exchange: ex(t), startMs, endMs: t, timing: stream?.timing ?? Promise.resolve(undefined) });
    };
    // An exception here would otherwise be lost in the reader's event loop, the request
    // never settling: it rejects the request, and the stream is let go.
    const guard =
      <A extends unknown[]>(f: (...a: A) => void) =>
      (...a: A): void => {
        if (over) return;
        try {
          f(...a);
        } catch (e) {
          over = true;
          s.cancel.removeEventListener('abort', onCancel);
          stream?.cancel();
          reject(e);
        }
      };
    const events: StreamEvents = {
      start: guard((t) => void ex(t)),
      response: guard((t, status, retryAfter) => ex(t).response(t, status, retryAfter)),
      bytes: guard((t, chunk) => {
        const e = ex(t);
        const text = e.bytes(t, chunk);
        if (text && s.painter) s.painter.add(t, text);
        if (e.ended) {
          stream?.parserEnded();
          finish(t);
        }
      }),
      errorBody: guard((t, chunk) => ex(t).errorBody(t, chunk)),
      end: guard((t) => {
        ex(t).end(t);
        finish(t);
      }),
      fail: guard((t, errorClass, message) => {
        ex(t).fail(t, errorClass, s.redact(message));
        finish(t);
      }),
      fetchError: guard((t, detail) => {
        // The probe takes a while: the request is over at `t`, its class known later.
        void classifyFetchError(s.request.url, detail).then(
          guard((c: Classified) => {
            ex(t).fail(t, c.errorClass, s.redact(c.message));
            finish(t);
          }),
        );
      }),
    };
    const { request, timeoutMs, idleTimeoutMs } = s;
    stream = s.host.open({ request, timeoutMs, idleTimeoutMs }, events);
    if (s.cancel.aborted) onCancel();
    else if (!over) s.cancel.addEventListener('abort', onCancel, { once: true });
  });
}
