// What the Meter keeps of one stream while it runs: stamps and the very bytes (or text),
// nothing parsed. The hot path is `performance.now()` and two array pushes.

import { FrameRecorder } from '../frames.js';

/** The wire of `chunk(text)` streams: text deltas, handed to the exchange as text (`Exchange.text`). */
export const TEXT_WIRE = 'openai-chat-text';

export interface StreamLog {
  /** `MeterReport.stream_id`. */
  id: string;
  /** The stream's wire format: the Meter's api, or `TEXT_WIRE` for `chunk(text)` deltas. */
  wire: string;
  startMs: number;
  /** Headers arrived (wrap(Response)) or the stream was handed over. */
  responseMs?: number;
  status: number;
  retryAfter: string | null;
  /** Arrival stamps, one per kept chunk. */
  times: number[];
  /** Bytes as read (wrap) or text deltas (`chunk`). */
  chunks: (Uint8Array | string)[];
  /** The stream ended (body done, `end()`), or failed. */
  endMs?: number;
  /** A failure the parser cannot see (read error before a byte, cancellation). */
  failure?: { t: number; errorClass: string; message: string };
  /** When the app said, or the DOM showed, that its text was updated. */
  ready: number[];
  frames: FrameRecorder;
  /** onReport has been (or is being) given this stream's final report. */
  reported: boolean;
  /** onReport was given a partial report. */
  partialSent?: boolean;
  /** Begun by wrap() or chunk() with no start() before the request (no TTFT then). */
  implicitStart?: boolean;
  /** A body is being read through the meter (wrap): it ends the stream itself. */
  tapped?: boolean;
  /** The final report, once built. */
  built?: Promise<import('./types.js').MeterReport>;
}

// randomUUID exists in every secure context (https, localhost).
const newId = (): string => globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;

export function newLog(wire: string, startMs: number): StreamLog {
  return {
    id: newId(),
    wire,
    startMs,
    status: 200,
    retryAfter: null,
    times: [],
    chunks: [],
    ready: [],
    frames: new FrameRecorder(),
    reported: false,
  };
}
