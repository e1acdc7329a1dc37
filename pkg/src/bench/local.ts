// One request of a `bench({ api: 'local', engine })` run: the local engine's stream in
// place of `fetch`.
//
// The engine's `chat.completions.create` takes the body the core built for the run (the
// OpenAI chat body) and yields `chat.completion.chunk` objects from its Worker. Each chunk is
// stamped with `performance.now()` as it reaches this page, then handed to the exchange as
// the SSE bytes an OpenAI server would have sent, so one parser, one timeline and one set of
// metric definitions serve local and remote runs alike (and paint times are taken the same
// way). The engine's own per-token times (on the Worker's clock, before the message hop)
// stay in its `timings`; what the report holds is what this page saw.

import type { RequestPainter } from '../paint.js';
import type { FailClass } from '../types.js';
import type { HttpRequest, Outcome, RequestSetup } from './request.js';

/** The chat request `bench()` hands a local engine: the run's OpenAI chat body, streamed. */
export interface BenchChatRequest {
  messages: { role: string; content: string }[];
  max_tokens?: number;
  temperature?: number;
  ignore_eos?: boolean;
  stream: true;
  signal?: AbortSignal;
}

/** What `bench()` needs of a local engine (a `LocalEngine` from `tpsmeter/engine`). */
export interface BenchEngine {
  readonly name: string;
  readonly info?: { backend?: string; why?: string; threads?: number; adapter?: string; profile?: string } | undefined;
  readonly sha256?: string;
  readonly chat: {
    completions: {
      // The request's own fields are the run's chat body; spelled out without an index
      // signature so that `LocalEngine` (whose `ChatRequest` is an interface) is assignable.
      create(request: BenchChatRequest): Promise<AsyncIterable<unknown>>;
    };
  };
}

export interface LocalSetup extends Omit<RequestSetup, 'request' | 'redact' | 'host'> {
  request: HttpRequest;
  engine: BenchEngine;
  painter?: RequestPainter;
}

const encoder = new TextEncoder();
/** What the read race resolves to when the request failed first. */
const STOP = Symbol('stop');

/** Runs one generation to its end. Never rejects: every failure lands in the exchange. */
export async function runLocalRequest(s: LocalSetup): Promise<Outcome> {
  const abort = new AbortController();
  let failure: { errorClass: FailClass; message: string; t: number } | undefined;
  // Settles when a timeout or the run's cancellation fails the request: the read below races
  // it, since the engine only looks at its signal between tokens (a long prefill, or a stuck
  // engine, must not hold the run).
  let failed$!: () => void;
  const failedNow = new Promise<typeof STOP>((resolve) => (failed$ = () => resolve(STOP)));
  const failWith = (errorClass: FailClass, message: string): void => {
    if (failure) return;
    failure = { errorClass, message, t: performance.now() };
    abort.abort();
    failed$();
  };
  const onCancel = (): void => failWith('cancelled', 'the run was cancelled');
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (ms: number, errorClass: FailClass, message: string): void => {
    clearTimeout(timer);
    timer = setTimeout(() => failWith(errorClass, message), ms);
  };

  // The body is the core's own JSON; the engine takes it as OpenAI sends it.
  const { model: _model, stream_options: _so, stream: _st, ...body } = JSON.parse(s.request.body) as Record<string, unknown>;
  arm(s.timeoutMs, 'timeout_first_byte', `no token within ${s.timeoutMs / 1000} s (timeoutS)`);
  const startMs = performance.now();
  const exchange = s.begin(startMs);
  if (s.cancel.aborted) onCancel();
  else s.cancel.addEventListener('abort', onCancel, { once: true });
  const finish = (t: number): Outcome => ({ exchange, startMs, endMs: t, timing: Promise.resolve(undefined) });
  const failed = (t: number, e: unknown): Outcome => {
    if (failure) {
      exchange.fail(failure.t, failure.errorClass, failure.message);
      return finish(failure.t);
    }
    const name = e instanceof Error ? e.name : 'Error';
    const message = e instanceof Error ? e.message : String(e);
    exchange.fail(t, 'other', `the local engine failed (${name}): ${message}`);
    return finish(t);
  };
  try {
    let chunks: AsyncIterable<unknown>;
    try {
      chunks = await s.engine.chat.completions.create({ ...(body as unknown as BenchChatRequest), stream: true, signal: abort.signal });
    } catch (e) {
      return failed(performance.now(), e);
    }
    // A local "response" is the engine accepting the request: no status line to wait for.
    exchange.response(performance.now(), 200, null);
    const it = chunks[Symbol.asyncIterator]();
    try {
      for (;;) {
        if (failure) break;
        const r = await Promise.race([it.next(), failedNow]);
        const t = performance.now();
        // Failed while waiting: the chunk (if one comes) is after the exchange's end.
        if (r === STOP || failure) break;
        if (r.done) break;
        arm(s.idleTimeoutMs, 'stall', `the engine was silent for ${s.idleTimeoutMs / 1000} s (idleTimeoutS)`);
        // The engine's timings (per-token arrays) are not part of the wire format.
        const { timings: _t, ...wire } = r.value as Record<string, unknown>;
        const text = exchange.bytes(t, encoder.encode(`data: ${JSON.stringify(wire)}\n\n`));
        if (text && s.painter) s.painter.add(t, text);
      }
    } catch (e) {
      return failed(performance.now(), e);
    } finally {
      // Leaving early (a failure) stops the generation, or takes it out of the engine's line;
      // not awaited: the request has ended.
      if (failure) void Promise.resolve(it.return?.()).catch(() => {});
    }
    const t = performance.now();
    if (failure) return failed(t, undefined);
    exchange.bytes(t, encoder.encode('data: [DONE]\n\n'));
    if (!exchange.ended) exchange.end(t);
    return finish(t);
  } finally {
    clearTimeout(timer);
    s.cancel.removeEventListener('abort', onCancel);
  }
}
