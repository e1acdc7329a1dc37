// Builds a MeterReport from a stream's log: the kept (stamp, bytes or text) go through a
// standalone wasm `Exchange` (the one parser and metric implementation), then the frames
// (which the exchange pairs with the text it parsed). Loaded only when a report is built.

import { paintTime } from '../frames.js';
import type { RequestRecord } from '../types.js';
import { TEXT_WIRE, type StreamLog } from './log.js';
import { toOtel } from './otel.js';
import type { MeterOptions, MeterRecord, MeterReport } from './types.js';

const encoder = new TextEncoder();

export async function buildReport(
  log: StreamLog,
  options: MeterOptions,
  partial: boolean,
): Promise<MeterReport> {
  const textMode = log.wire === TEXT_WIRE;
  // Text needs no wire parsed: any build's exchange measures it, so the meter's own API's
  // (the build its other streams load) rather than a second one.
  const api = textMode ? options.api : log.wire;
  // A partial report is a snapshot taken now: the stream is still running, and what it
  // shows is what had arrived when the report was asked for, however long the parser then
  // takes to load (the first time: its glue, then its wasm). A final one reads the log
  // after the load, which may hold a paint more.
  const n = log.times.length;
  const endMs = partial ? undefined : log.endMs;
  const failure = log.failure;
  const snapshot = partial ? paints(log) : undefined;
  // The parser itself: a separate chunk a bundler splits off, fetched only now.
  const raw = await (await import('../raw-meter.js')).loadMeterWasm(api);
  const ex = new raw.Exchange(api, log.startMs);
  try {
    ex.response(log.responseMs ?? log.times[0] ?? log.startMs, log.status, log.retryAfter);
    const ok = log.status >= 200 && log.status < 300;
    for (let i = 0; i < n; i++) {
      const t = log.times[i]!;
      const c = log.chunks[i]!;
      if (textMode) ex.text(t, c as string);
      else if (!ok) ex.errorBody(t, typeof c === 'string' ? encoder.encode(c) : c);
      else if (ex.ended) break;
      else ex.bytes(t, typeof c === 'string' ? encoder.encode(c) : c);
    }
    if (endMs !== undefined) {
      const f = failure;
      if (f) ex.fail(f.t, f.errorClass, f.message);
      else if (textMode) ex.textEnd(endMs);
      else ex.end(endMs);
    }
    const { ready, raf } = snapshot ?? paints(log);
    ex.paintFramesAfterUpdates(ready, raf, raf.map(paintTime));
    // `id` and `level` number a bench run's requests and levels: a meter has neither.
    const { id: _id, level: _level, ...rest } = JSON.parse(ex.record()) as RequestRecord;
    const record: MeterRecord = rest;
    if (log.implicitStart) {
      // wrap() without start(): the clock started when the response was already here, so
      // its "TTFT" would be the gap to the first chunk (a fraction of a millisecond). Say so
      // rather than report it.
      record.metrics = { ...record.metrics, ttft_ms: null };
      record.start_missing = true;
    }
    return { record, otel: toOtel(record, options, partial, log.id), partial, stream_id: log.id };
  } finally {
    ex.free();
  }
}

/** The log's DOM-update stamps and frames as they stand. */
function paints(log: StreamLog): { ready: Float64Array; raf: Float64Array } {
  return { ready: Float64Array.from(log.ready), raf: Float64Array.from(log.frames.frames) };
}
