// `bench()` options: the run's settings (passed to the wasm `BenchRun` as they are) and the
// browser-side callbacks, which stay in JavaScript.

import type * as spec from '../generated/spec.js';
import type { RenderTarget } from '../paint.js';
import type { Api, RequestRecord } from '../types.js';
import type { DatasetInput } from './dataset.js';
import type { BenchEngine } from './local.js';
import { tokenizerName, type TokenizerSource } from './tokenizer.js';
import { levelList, validate } from './validate.js';

/**
 * The run's settings: the CLI's `bench` options, camelCase. Generated from the core's run
 * spec (`crates/tpsmeter-core/spec.schema.json`, the Rust `BenchOptions` and its docs); only
 * the two that take JavaScript objects are typed here.
 */
export interface RunSettings extends Omit<spec.RunSettings, 'tokenizer' | 'dataset'> {
  /**
   * The model's tokenizer, to count input tokens exactly and answers without usage: a URL of
   * a `tokenizer.json` or GGUF, a Hugging Face model id (`ORG/NAME`, fetched from the Hub), a
   * `File`, or bytes. Loads the engine's wasm (~1 MB) on first use. A `tokenizer.json` over
   * 128 MiB rejects with `LimitExceeded`, one with a regex that could pin the CPU (look-around
   * outside the known models' patterns) with `UnsafeTokenizer`, a model other than BPE or
   * Unigram with `UnsupportedModel`, and one past the limits on added tokens or Unigram
   * pieces with `LimitExceeded`. An answer the tokenizer cannot count within its time budget
   * keeps the stream's estimate (warning `count_failed`).
   */
  tokenizer?: TokenizerSource;
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
export type FindMaxLimits = spec.FindMaxLimits;

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

// `bench()` takes exactly the options the core's table lists (`spec.OptionKey`, generated from
// `FIELDS`): an option added there and not here, or here and not there, fails to compile.
// Types only: nothing of it reaches the bundle.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
export type OptionKeysMatchTheSpec = Holds<Same<keyof RunSettings | keyof RunHooks | 'engine', spec.OptionKey>>;

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
