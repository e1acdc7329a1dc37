// A record in OpenTelemetry GenAI semantic-convention names and units (seconds, {token}).
// The conventions are in development; names as of 2026: gen_ai.client.operation.duration,
// .time_to_first_chunk, .time_per_output_chunk, gen_ai.client.token.usage.

import type { Api } from '../types.js';
import type { MeterOptions, MeterRecord, OtelData, OtelMetric } from './types.js';

// Both tables are `Record`s over `Api` (generated from the Rust enum): a wire format the core
// adds and a table lacks fails the package's type check.

/** `gen_ai.provider.name` well-known values by wire format (Ollama has none: its own name). */
const PROVIDERS: Record<Api, string | undefined> = {
  'openai-chat': 'openai',
  'openai-completions': 'openai',
  'openai-responses': 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  'ollama-chat': 'ollama',
  'ollama-generate': 'ollama',
  // The AI SDK's UI stream carries no provider (the app's route chose it): the SDK's name,
  // a custom value as the conventions allow, unless `provider` names the real one.
  'vercel-ui': 'vercel.ai',
  // The page's own engine: no provider, unless `provider` names one.
  local: undefined,
};

/** `gen_ai.operation.name` by wire format. */
const OPERATIONS: Record<Api, string> = {
  'openai-chat': 'chat',
  'openai-completions': 'text_completion',
  'openai-responses': 'chat',
  anthropic: 'chat',
  gemini: 'generate_content',
  'ollama-chat': 'chat',
  'ollama-generate': 'text_completion',
  'vercel-ui': 'chat',
  local: 'chat',
};

const s = (ms: number): number => ms / 1000;

export function toOtel(record: MeterRecord, options: MeterOptions, partial: boolean, streamId: string): OtelData {
  // Whether the stream had ended: a partial report (the tab went hidden) is a cut view of
  // a stream whose final report may follow. Low-cardinality, so an attribute; the stream
  // id, unique per stream, is a field beside the attributes, not one of them.
  const attributes: Record<string, string> = { 'tpsmeter.report.partial': String(partial) };
  const provider = options.provider ?? PROVIDERS[options.api];
  if (provider) attributes['gen_ai.provider.name'] = provider;
  if (options.model) attributes['gen_ai.request.model'] = options.model;
  const operation = OPERATIONS[options.api];
  if (operation) attributes['gen_ai.operation.name'] = operation;
  if (record.error) attributes['error.type'] = record.error.class;

  const metrics: OtelMetric[] = [];
  const add = (name: OtelMetric['name'], unit: OtelMetric['unit'], values: number[], extra = {}): void => {
    const finite = values.filter(Number.isFinite);
    if (finite.length) metrics.push({ name, unit, values: finite, attributes: extra });
  };
  add('gen_ai.client.operation.duration', 's', [s(record.end_ms - record.start_ms)]);
  const firstChunk = record.chunk_times_ms?.[0] ?? record.first_token_ms;
  // Without start() the clock began after the response arrived: no time to first chunk.
  const started = !record.start_missing;
  if (firstChunk != null && started) add('gen_ai.client.operation.time_to_first_chunk', 's', [s(firstChunk - record.start_ms)]);
  add('gen_ai.client.operation.time_per_output_chunk', 's', (record.metrics.itl_chunk_ms ?? []).map(s));
  if (record.input_tokens != null) {
    add('gen_ai.client.token.usage', '{token}', [record.input_tokens], { 'gen_ai.token.type': 'input' });
  }
  add('gen_ai.client.token.usage', '{token}', [record.output_tokens], { 'gen_ai.token.type': 'output' });
  return { attributes, metrics, stream_id: streamId };
}
