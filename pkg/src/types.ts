// The JSON shapes that cross the wasm boundary, as the package's users see them. The report
// is the same JSON the CLI writes with `--json` (one JSON Schema: `raw.reportSchema()`); only
// the fields this package reads are spelled out, the rest stay open.

/** A streaming API wire format (the CLI's `--api` names). */
export type Api =
  | 'openai-chat'
  | 'openai-completions'
  | 'openai-responses'
  | 'anthropic'
  | 'gemini'
  | 'ollama-chat'
  | 'ollama-generate'
  | 'vercel-ui'
  /** The local engine of `tpsmeter/engine` (OpenAI chat chunks, no network). */
  | 'local';

/** The report's error classes (`record.error.class`). */
export type ErrorClass =
  | 'http_4xx'
  | 'http_5xx'
  | 'rate_limited'
  | 'connect_refused'
  | 'dns'
  | 'connect'
  | 'cors'
  | 'timeout_first_byte'
  | 'stall'
  | 'truncated'
  | 'stream_error'
  | 'malformed_json'
  | 'oversized'
  | 'invalid_utf8'
  | 'cancelled'
  | 'other';

/** The classes JavaScript reports through `Exchange.fail` (the rest come from the parser). */
export type FailClass =
  | 'timeout_first_byte'
  | 'stall'
  | 'connect'
  | 'connect_refused'
  | 'dns'
  | 'cors'
  | 'cancelled'
  | 'other';

export interface ErrorRecord {
  class: ErrorClass;
  message: string;
  http_status?: number | null;
  retry_after_s?: number | null;
}

/** One request of a run (times in ms on the run's `performance.now()` clock). */
export interface RequestRecord extends StreamRecord {
  id: number;
  level: unknown;
}

/** What a request's record holds about its stream (a `RequestRecord` less its place in a run). */
export interface StreamRecord {
  warmup: boolean;
  start_ms: number;
  first_byte_ms?: number | null;
  first_token_ms?: number | null;
  end_ms: number;
  chunk_times_ms?: number[] | null;
  output_tokens: number;
  input_tokens?: number | null;
  http_status?: number | null;
  error?: ErrorRecord | null;
  metrics: Record<string, unknown> & {
    ttft_ms?: number | null;
    e2e_ms?: number | null;
    itl_chunk_ms?: number[];
    output_tps?: number | null;
  };
  [field: string]: unknown;
}

/** A finding about the run that the numbers alone would hide. */
export interface Warning {
  code: string;
  message: string;
}

/** A whole run: the CLI's report schema. */
export interface Report {
  schema_version: number;
  tool: { name: string; version: string };
  config: Record<string, unknown>;
  environment: Environment;
  levels: { level: unknown; summary: Record<string, unknown> }[];
  requests: RequestRecord[];
  warnings?: Warning[];
  [field: string]: unknown;
}

export interface Environment {
  os: string;
  arch: string;
  cpu_count?: number | null;
  tool_version: string;
  notes: Record<string, string>;
}

/** What the load driver asks for next (`BenchRun.next`). */
export type Action =
  | { kind: 'start'; ticket: number; level: number; warmup: boolean; scheduledMs?: number }
  | { kind: 'sleep'; untilMs: number }
  | { kind: 'wait' }
  | { kind: 'done' };

/** Browser facts about one request, passed to `BenchRun.complete`. */
export interface RecordExtras {
  queueMs?: number;
  httpVersion?: string;
  tabHidden?: boolean;
}
