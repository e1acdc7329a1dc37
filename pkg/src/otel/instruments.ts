// The GenAI client instruments a meter report feeds, in either generation of the
// OpenTelemetry semantic conventions' names. One table, read by both the OTLP exporter and
// the bridge to an app's own `@opentelemetry/api` Meter, so the two record the same values.
//
// Released (semantic-conventions v1.41.0, e018fe6f, `docs/gen-ai/gen-ai-metrics.md`: what
// AIPerf and most backends' dashboards read): histograms `gen_ai.client.operation.duration`,
// `.time_to_first_chunk`, `.time_per_output_chunk` (new in v1.41.0) and
// `gen_ai.client.token.usage` with `gen_ai.token.type`. Latest (semantic-conventions-genai,
// `model/gen-ai/metrics.yaml` at 024a4f94 and `token-metrics.yaml` at 066d4a7f; v1.41.0 names
// its opt-in `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`): the timings renamed
// `gen_ai.client.inference.*`, and token usage as counters
// `gen_ai.client.inference.usage.{input,output}_tokens` plus per-call histograms
// `gen_ai.client.inference.operation.{input,output}_tokens`, typed by
// `gen_ai.token.modality` instead of `gen_ai.token.type`. Both: `error.type` only on the
// duration and the token histograms, as the tables say. docs/otel.md has the table.

import type { MeterReport } from '../meter/types.js';

/** Which names to emit: the released ones (default), the renamed ones, or both. */
export type Naming = 'released' | 'latest' | 'both';

/** The conventions' advised boundaries for timings, in seconds: 0.01 × 2^k up to 81.92. */
export const TIME_BUCKETS: readonly number[] = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** The advised boundaries for token counts: 4^k from 1 to 67,108,864. */
export const TOKEN_BUCKETS: readonly number[] = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

export interface Instrument {
  name: string;
  kind: 'histogram' | 'counter';
  unit: 's' | '{token}';
  description: string;
  /** Explicit bucket boundaries (histograms). */
  buckets?: readonly number[];
}

// Literals, no calls at the top level: an app that imports only the exporter's eager part
// (`otlp.ts`) keeps none of this.
const S = { kind: 'histogram', unit: 's', buckets: TIME_BUCKETS } as const;
const TOKENS = { kind: 'histogram', unit: '{token}', buckets: TOKEN_BUCKETS } as const;
const COUNT = { kind: 'counter', unit: '{token}' } as const;

/** Every instrument either naming defines, by name. */
export const INSTRUMENTS: Readonly<Record<string, Instrument>> = {
  'gen_ai.client.operation.duration': { name: 'gen_ai.client.operation.duration', ...S, description: 'GenAI operation duration.' },
  'gen_ai.client.operation.time_to_first_chunk': { name: 'gen_ai.client.operation.time_to_first_chunk', ...S, description: 'Time to receive the first chunk in a streaming operation.' },
  'gen_ai.client.operation.time_per_output_chunk': { name: 'gen_ai.client.operation.time_per_output_chunk', ...S, description: 'Time between consecutive chunks in a streaming operation.' },
  'gen_ai.client.token.usage': { name: 'gen_ai.client.token.usage', ...TOKENS, description: 'Number of input and output tokens used.' },
  'gen_ai.client.inference.duration': { name: 'gen_ai.client.inference.duration', ...S, description: 'GenAI inference duration.' },
  'gen_ai.client.inference.time_to_first_chunk': { name: 'gen_ai.client.inference.time_to_first_chunk', ...S, description: 'Time to receive the first chunk in a streaming inference.' },
  'gen_ai.client.inference.time_per_output_chunk': { name: 'gen_ai.client.inference.time_per_output_chunk', ...S, description: 'Time between consecutive chunks in a streaming inference.' },
  'gen_ai.client.inference.usage.input_tokens': { name: 'gen_ai.client.inference.usage.input_tokens', ...COUNT, description: 'Number of input tokens used.' },
  'gen_ai.client.inference.usage.output_tokens': { name: 'gen_ai.client.inference.usage.output_tokens', ...COUNT, description: 'Number of output tokens used.' },
  'gen_ai.client.inference.operation.input_tokens': { name: 'gen_ai.client.inference.operation.input_tokens', ...TOKENS, description: 'Number of input tokens per inference.' },
  'gen_ai.client.inference.operation.output_tokens': { name: 'gen_ai.client.inference.operation.output_tokens', ...TOKENS, description: 'Number of output tokens per inference.' },
};

/** One value for one instrument, with every attribute it carries. */
export interface Measurement {
  instrument: Instrument;
  value: number;
  attributes: Record<string, string>;
}

/** The released timing names and their renamed forms. */
const RENAMED: Record<string, string> = {
  'gen_ai.client.operation.duration': 'gen_ai.client.inference.duration',
  'gen_ai.client.operation.time_to_first_chunk': 'gen_ai.client.inference.time_to_first_chunk',
  'gen_ai.client.operation.time_per_output_chunk': 'gen_ai.client.inference.time_per_output_chunk',
};

/** What one report records, in `naming`'s names. Sends no text, prompt or key: the
 * report's OTel view holds only timings, counts and the low-cardinality attributes. */
export function measurements(report: MeterReport, naming: Naming = 'released'): Measurement[] {
  const out: Measurement[] = [];
  const released = naming !== 'latest';
  const latest = naming !== 'released';
  for (const metric of report.otel.metrics) {
    const all = { ...report.otel.attributes, ...metric.attributes };
    const push = (name: string, attrs: Record<string, string>, values: number[]): void => {
      const instrument = INSTRUMENTS[name];
      if (!instrument) return;
      const attributes = ERROR_TYPED.has(name) ? attrs : without(attrs, 'error.type');
      for (const value of values) out.push({ instrument, value, attributes });
    };
    if (released) push(metric.name, all, metric.values);
    if (!latest) continue;
    const renamed = RENAMED[metric.name];
    if (renamed) {
      push(renamed, all, metric.values);
    } else if (metric.name === 'gen_ai.client.token.usage') {
      // The latest names carry the token type in the name and the modality as an attribute.
      const side = all['gen_ai.token.type'] === 'input' ? 'input' : 'output';
      const attrs = { ...without(all, 'gen_ai.token.type'), 'gen_ai.token.modality': 'text' };
      push(`gen_ai.client.inference.usage.${side}_tokens`, attrs, metric.values);
      push(`gen_ai.client.inference.operation.${side}_tokens`, attrs, metric.values);
    }
  }
  return out;
}

/** The instruments whose attribute tables list `error.type`. */
const ERROR_TYPED = new Set([
  'gen_ai.client.operation.duration',
  'gen_ai.client.inference.duration',
  'gen_ai.client.inference.operation.input_tokens',
  'gen_ai.client.inference.operation.output_tokens',
]);

function without(attrs: Record<string, string>, key: string): Record<string, string> {
  const { [key]: _, ...rest } = attrs;
  return rest;
}
