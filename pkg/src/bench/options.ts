// `bench()` options: the run's settings (passed to the wasm `BenchRun` as they are) and the
// browser-side callbacks, which stay in JavaScript.

import type { RenderTarget } from '../paint.js';
import type { Api, RequestRecord } from '../types.js';
import type { DatasetInput } from './dataset.js';
import type { BenchEngine } from './local.js';
import { tokenizerName, type TokenizerSource } from './tokenizer.js';
import { levelList, validate } from './validate.js';

/** The run's settings: the CLI's `bench` options, camelCase. */
export interface RunSettings {
  api: Api;
  /** Base URL or full endpoint URL of the API. */
  url: string;
  model: string;
  /** Sent in the API's header (or query for Gemini); kept in memory only, never in a report or message. */
  apiKey?: string;
  /** Closed-loop levels: requests kept in flight (one number is one level). Not with `rate`. */
  concurrency?: number | number[];
  /** Open-loop levels: Poisson arrivals per second (one number is one level). Not with `concurrency`. */
  rate?: number | number[];
  /** Cap on requests in flight in open-loop levels. */
  maxConcurrency?: number;
  /** Measured requests per level. */
  requests?: number;
  /** Seconds per level. Not with `requests`. */
  durationS?: number;
  /**
   * A time budget for each level run by request count, seconds: after it the level starts
   * no more requests (those in flight finish), and the report warns (`max_duration`) that
   * it was cut. Not with `durationS`.
   */
  maxDurationS?: number;
  maxTokens?: number;
  /**
   * The largest output cap any request may ask for: a `dataset` entry's own `max_tokens`
   * (or its answer's length) above it is lowered to it, and a `maxTokens` above it is
   * refused. The benchmark page passes its form's limit, so a dataset a link names cannot
   * ask for more than the form allows.
   */
  maxTokensLimit?: number;
  prompt?: string;
  /**
   * A generated prompt of this many tokens (instead of `prompt`): exactly, mark included,
   * with `tokenizer`; about (one token per common English word) without.
   */
  inputTokens?: number;
  /**
   * A named workload: `'chat'` (128 input / 256 output tokens), `'rag-1k'` (1,000 / 256),
   * `'long-10k'` (10,000 / 256), `'llmperf'` (550±150 / 150). Sets the input size and the
   * output cap (an explicit `maxTokens` wins); not with `prompt` or `inputTokens`.
   */
  workload?: 'chat' | 'rag-1k' | 'long-10k' | 'llmperf';
  /**
   * Multi-turn chats: each virtual user holds one conversation of this many turns; each turn
   * sends the conversation so far (the model's real answers included) and a new user
   * message. Records carry `turn` and the report `turns` (TTFT per turn). Not with `rate`.
   */
  turns?: number;
  /** Draw each request's input length around `inputTokens` with this standard deviation. */
  inputTokensStdev?: number;
  /**
   * The model's tokenizer, to count input tokens exactly and answers without usage: a URL of
   * a `tokenizer.json` or GGUF, a Hugging Face model id (`ORG/NAME`, fetched from the Hub), a
   * `File`, or bytes. Loads the engine's wasm (~1 MB) on first use. A `tokenizer.json` over
   * 128 MiB rejects with `LimitExceeded`, one with a regex that could pin the CPU (look-around
   * outside the known models' patterns) with `UnsafeTokenizer`.
   */
  tokenizer?: TokenizerSource;
  /**
   * `'prefix'` (default): each request's prompt starts with a mark of its own
   * (`[run <id> #<n>] `), so that no server answers it from a prompt cache; `'off'`: every
   * request sends the same prompt (measures the cached case).
   */
  cacheBust?: 'prefix' | 'off';
  /** Every request shares this many tokens of text before its mark (measures prefix caching). */
  sharedPrefix?: number;
  system?: string;
  temperature?: number;
  /** Warm-up requests per level, excluded from summaries. */
  warmup?: number;
  /** No byte of the response within this many seconds → `timeout_first_byte` (default 60). */
  timeoutS?: number;
  /** The stream silent for this many seconds → `stall` (default 30). */
  idleTimeoutS?: number;
  /** Service-level objectives, e.g. `"ttft=500ms,tpot=50ms"`. */
  slo?: string;
  /** Seed of the open-loop arrival schedule and of the prompts' run id (same seed, same request bodies as the CLI's). */
  seed?: number;
  ignoreEos?: boolean;
  /**
   * Seconds over which each closed-loop level (its warm-up and its measured phase alike)
   * opens its streams, evenly, instead of all at once: a burst of new connections can
   * overflow a server's listen backlog. Counts inside `durationS`. Not with `rate`.
   */
  rampUpS?: number;
  /**
   * Search for the highest load that meets `slo` instead of running listed levels: from the
   * one `concurrency` (default 1) or `rate` given, double until a level misses the SLO or
   * goodput stops rising, then bisect (the CLI's `--find-max`; the rule is in docs/metrics.md,
   * "Finding the knee"). `true` takes the default limits. The report's `find_max` says the
   * highest load that met the SLO and why the search stopped. Needs `slo`.
   */
  findMax?: boolean | FindMaxLimits;
  /**
   * Draw each request's messages from a dataset instead of one prompt: JSON Lines with a
   * `prompt` or an OpenAI `messages` array per line (and optionally `max_tokens` or
   * `output_tokens`), or ShareGPT's JSON (an array of `conversations`: the first human turn
   * is sent, the first gpt answer's length is the output cap: ⌈characters / 4⌉, or its count
   * with `tokenizer`). A `File` or `Blob` (a file
   * the user picked), `{ url }` (fetched by the page: the URL must allow it through CORS
   * and the page's CSP), or `{ name, text }` / `{ name, bytes }`. Entries are drawn without
   * replacement, in a fresh shuffle each time round, the same for the same `seed` (and the
   * same as the CLI's `--dataset`). The report names it with its SHA-256. A malformed entry
   * rejects the run with its line. Not with `prompt`, `inputTokens`, `sharedPrefix` or
   * `workload`.
   */
  dataset?: DatasetInput;
}

/** The limits of a `findMax` search; each left out takes its default. */
export interface FindMaxLimits {
  /** The highest load tried: streams, or requests/s with `rate` (default 1024). */
  maxLoad?: number;
  /** Levels run at most, every level counted (default 12, at most 64). */
  maxLevels?: number;
  /** Goodput must rise by more than this percentage for the load to keep doubling (default 10). */
  minGainPct?: number;
  /** Percentage of a level's requests that must meet every SLO for the level to meet it (default 95). */
  attainmentPct?: number;
}

/** Where the run stands, after each finished request (the load driver's own counts). */
export interface Progress {
  /** Index of the level running now. */
  levelIndex: number;
  /** Levels in the run. */
  levels: number;
  /** The current level is still warming up. */
  warmup: boolean;
  /** Requests started, completed and failed in the current level. */
  started: number;
  completed: number;
  failed: number;
  /** Requests in flight now. */
  inFlight: number;
  /** Requests the current level will measure, when count-limited. */
  target?: number | null;
  /** Levels whose summary is final. */
  levelsDone: number;
  /** Since the run started, ms. */
  elapsedMs: number;
}

/** The callbacks and page objects of a run, besides its settings. */
export interface RunHooks {
  /** Called after each finished request. */
  onProgress?: (progress: Progress) => void;
  /** Called with each request's record as it finishes. */
  onRecord?: (record: RequestRecord) => void;
  /** Aborting it cancels the run; the report is still returned (with an `interrupted` warning). */
  signal?: AbortSignal;
  /** Show the text as it streams and measure when it is painted (perceived TPS). */
  render?: RenderTarget;
  /**
   * Read and stamp the streams in a dedicated Worker (default `true`), so that the page's
   * own rendering and scripts cannot delay an arrival stamp; the text still comes to the
   * page to be parsed and painted. `false` reads them on the page's main thread. Where no
   * Worker starts (a CSP without `worker-src 'self'`, say) the run reads on the page, and
   * `environment.notes.stamp_thread` says so.
   */
  worker?: boolean;
}

/** A remote API: its URL and model. */
export type RemoteBenchOptions = RunSettings & RunHooks & { api: Exclude<Api, 'local'>; engine?: undefined };

/**
 * The local engine (`createEngine` of `tpsmeter/engine`), measured like a remote API into the
 * same report: `url` and `model` default to `local:engine` and the engine's model name.
 */
export type LocalBenchOptions = Omit<RunSettings, 'api' | 'url' | 'model' | 'apiKey'> &
  RunHooks & { api: 'local'; engine: BenchEngine; url?: string; model?: string };

export type BenchOptions = RemoteBenchOptions | LocalBenchOptions;

/** The `url` of a local run (the core's `LOCAL_URL`). */
export const LOCAL_URL = 'local:engine';

export const DEFAULT_TIMEOUT_S = 60;
export const DEFAULT_IDLE_TIMEOUT_S = 30;

/**
 * The settings for `BenchRun`, without callbacks and undefined fields. `check`: only to check
 * them (`checkBenchOptions`), so a local run needs no engine yet.
 */
export function runSettings(options: BenchOptions, check = false): RunSettings {
  const checked = validate(options as unknown as Record<string, unknown>) as unknown as BenchOptions;
  const { onProgress: _p, onRecord: _r, signal: _s, render: _d, worker: _w, engine, ...settings } = checked;
  if (settings.api === 'local') {
    if (check) {
      settings.url ||= LOCAL_URL;
      settings.model ||= 'local';
    } else if (!engine || typeof engine.chat?.completions?.create !== 'function') {
      throw new TypeError("bench({ api: 'local' }) needs `engine`: a LocalEngine from createEngine() (tpsmeter/engine)");
    } else {
      settings.url ??= LOCAL_URL;
      settings.model ??= engine.name;
    }
  } else if (engine !== undefined) {
    throw new TypeError(`\`engine\` is for api: 'local', not ${settings.api}`);
  } else if (typeof settings.url === 'string') {
    settings.url = absoluteUrl(settings.url);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) if (v !== undefined) out[k] = v;
  // The wasm side records the tokenizer's name; its bytes come to it as a count function.
  if (settings.tokenizer !== undefined) out.tokenizer = tokenizerName(settings.tokenizer);
  return out as unknown as RunSettings;
}

/**
 * A same-origin path (`/api/chat`) or other relative URL resolved against the page's (or the
 * Worker's) location, as `fetch()` would resolve it; absolute URLs are left alone, and so is
 * anything outside a browser (the core then says what a URL must look like).
 */
export function absoluteUrl(url: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) return url;
  const base = typeof location !== 'undefined' ? location.href : undefined;
  if (base === undefined) return url;
  try {
    return new URL(url, base).href;
  } catch {
    return url;
  }
}

/** The most requests the run asks to have in flight at once. */
export function maxConcurrency(s: RunSettings): number {
  const closed = Math.max(0, ...levelList(s.concurrency));
  const open = levelList(s.rate).length > 0 ? (s.maxConcurrency ?? Infinity) : 0;
  return Math.max(closed, open, s.concurrency || s.rate ? 0 : 1);
}
