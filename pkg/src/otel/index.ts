// tpsmeter/otel: the real-user meter's reports into the tools teams already watch.
//
// - `otelBridge(meter)`: an app that runs the OpenTelemetry JS SDK passes its `Meter`; each
//   stream records into GenAI client instruments there (the app's exporter, resource and
//   views apply). Imports nothing of OpenTelemetry.
// - `otlpExporter({ url, serviceName })`: for apps without the SDK, delta histograms and
//   counters sent as OTLP/HTTP JSON to a Collector or a vendor's endpoint.
//
// Both take the meter's reports as its `onReport`, and record the same values (`instruments.ts`).

export { otelBridge, type BridgeOptions, type OtelApiMeter } from './bridge.js';
export { otlpExporter, type OtlpHandle } from './otlp.js';
export type { OtlpOptions, OtlpStats } from './exporter.js';
export { MAX_BODY, MAX_SERIES } from './limits.js';
export { INSTRUMENTS, TIME_BUCKETS, TOKEN_BUCKETS, measurements, type Instrument, type Measurement, type Naming } from './instruments.js';
export { MAX_HELD } from './partials.js';
