// The Meter's public types (type-only: nothing here reaches the eager bundle).

import type { Api, StreamRecord } from '../types.js';

export interface MeterOptions {
  /** The wire format of the streams you wrap (for `chunk(text)` alone, any: it names the provider). */
  api: Api;
  /** `gen_ai.request.model`. */
  model?: string;
  /** `gen_ai.provider.name`; derived from `api` when left out (openai, anthropic, gcp.gemini, ...). */
  provider?: string;
  /**
   * Called once per stream when it ends (`partial: false`), and once before that if the tab
   * goes hidden mid-stream (`partial: true`, what was seen so far: a page that is then
   * frozen or closed never sends the final one). Both carry the same `stream_id`: keep the
   * final report where both arrive.
   */
  onReport?: (report: MeterReport) => void;
  /**
   * Called instead of `onReport` when a stream's report cannot be built: the parser's wasm
   * failed to load (an error named `WasmLoadError`, with the `url` it fetched and why; the
   * class is exported by `tpsmeter`, kept out of this entry's eager code). Without
   * `onError`, the error goes to the page's `reportError` (the console's uncaught errors).
   */
  onError?: (error: Error) => void;
}

/** One value set of an OpenTelemetry GenAI histogram, with its semantic-convention name. */
export interface OtelMetric {
  name:
    | 'gen_ai.client.operation.duration'
    | 'gen_ai.client.operation.time_to_first_chunk'
    | 'gen_ai.client.operation.time_per_output_chunk'
    | 'gen_ai.client.token.usage';
  unit: 's' | '{token}';
  /** Values to record on the histogram (one per chunk gap for time_per_output_chunk). */
  values: number[];
  /** Attributes of these values beyond the common ones (`gen_ai.token.type`). */
  attributes: Record<string, string>;
}

/** The stream in OpenTelemetry GenAI semantic-convention names and units. */
export interface OtelData {
  /**
   * Common attributes: gen_ai.provider.name, gen_ai.request.model, gen_ai.operation.name,
   * error.type, and `tpsmeter.report.partial` ("true" for a report of a stream that had
   * not ended, "false" for a final one).
   */
  attributes: Record<string, string>;
  metrics: OtelMetric[];
  /** The stream's id (as `MeterReport.stream_id`): pairs a partial report with its final one. */
  stream_id: string;
}

/**
 * One stream's record: the report schema's RequestRecord, paint times included, without a
 * bench run's `id` and `level`.
 */
export type MeterRecord = StreamRecord & {
  /** The stream was wrapped without `start()` before its request: no TTFT could be measured
   * (`metrics.ttft_ms` is null). */
  start_missing?: true;
};

export interface MeterReport {
  /** The stream's record. */
  record: MeterRecord;
  otel: OtelData;
  /** The stream had not ended (the tab went hidden, or `report()` was called mid-stream). */
  partial: boolean;
  /** One id per stream, the same in its partial and final reports. */
  stream_id: string;
}

/**
 * One stream's handle, from `meter.start()`: what it wraps or is fed is measured on its own,
 * whatever other streams of the same meter run meanwhile.
 */
export interface MeterStream {
  /** As `Meter.wrap`, for this stream (once). */
  wrap(response: Response): Response;
  wrap(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>;
  wrap<T extends Uint8Array | string>(iterable: AsyncIterable<T>): AsyncIterable<T>;
  /** A text delta of this stream that the app received by other means. */
  chunk(text: string): void;
  /** Ends this stream when it was fed with `chunk()`. */
  end(): void;
  /** This stream's latest text is in the DOM: the next frame paints it. */
  painted(): void;
  /** This stream's report; `partial` while it has not ended. */
  report(): Promise<MeterReport>;
}
