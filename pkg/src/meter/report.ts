// Builds a MeterReport from a stream's log: the kept (stamp, bytes) go through a standalone
// wasm `Exchange` (the one parser and metric implementation), then the paints. Loaded only
// when a report is built.

import { attributePaints, countChars, type Delta } from '../attribute.js';
import type { RequestRecord } from '../types.js';
import { TEXT_WIRE, type StreamLog } from './log.js';
import { toOtel } from './otel.js';
import type { MeterOptions, MeterRecord, MeterReport } from './types.js';

const encoder = new TextEncoder();

/** One OpenAI chat SSE event carrying `text` (how `chunk(text)` deltas are measured). */
function sseDelta(text: string): Uint8Array {
  const event = { choices: [{ index: 0, delta: { content: text }, finish_reason: null }] };
  return encoder.encode(`data: ${JSON.stringify(event)}\n\n`);
}

const SSE_END = encoder.encode(
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
);

export async function buildReport(
  log: StreamLog,
  options: MeterOptions,
  partial: boolean,
): Promise<MeterReport> {
  // The parser itself: a separate chunk a bundler splits off, fetched only now.
  const raw = await (await import('../raw-meter.js')).loadMeterWasm();
  const textMode = log.wire === TEXT_WIRE;
  // A snapshot: the stream may still be running (a partial report).
  const n = log.times.length;
  const endMs = partial ? undefined : log.endMs;
  const ex = new raw.Exchange(textMode ? 'openai-chat' : log.wire, log.startMs);
  try {
    ex.response(log.responseMs ?? log.times[0] ?? log.startMs, log.status, log.retryAfter);
    const ok = log.status >= 200 && log.status < 300;
    const deltas: Delta[] = [];
    let r = 0;
    for (let i = 0; i < n; i++) {
      const t = log.times[i]!;
      const c = log.chunks[i]!;
      const bytes = textMode ? sseDelta(c as string) : typeof c === 'string' ? encoder.encode(c) : c;
      if (!ok) {
        ex.errorBody(t, bytes);
        continue;
      }
      if (ex.ended) continue;
      const chars = countChars(ex.bytes(t, bytes));
      // The first time the app said (or the DOM showed) it had updated after this arrival.
      while (r < log.ready.length && log.ready[r]! < t) r++;
      deltas.push({ arrival: t, ready: log.ready[r] ?? Infinity, chars });
    }
    if (endMs !== undefined) {
      const f = log.failure;
      if (f) ex.fail(f.t, f.errorClass, f.message);
      else {
        if (textMode && ok && !ex.ended) ex.bytes(endMs, SSE_END);
        ex.end(endMs);
      }
    }
    for (const p of attributePaints(deltas, log.frames.frames)) ex.paint(p.t, p.chars);
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
