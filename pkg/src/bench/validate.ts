// `bench()` options checked in the package's own words before anything starts: an unknown
// name is refused with the name it was probably meant to be (`max_tokens` → `maxTokens`), a
// value of the wrong kind names its option and what it expects, and options that cannot go
// together say so. The wasm side would otherwise answer in serde's words ("invalid type:
// floating point `-5.0`, expected u32") or, for an unknown name, run without it.

import type { Api } from '../types.js';
import { isDatasetInput } from './dataset.js';

/** The streaming APIs `bench()` speaks, as documented (`local` needs `engine`). */
export const APIS: readonly Api[] = [
  'openai-chat',
  'openai-completions',
  'openai-responses',
  'anthropic',
  'gemini',
  'ollama-chat',
  'ollama-generate',
  'vercel-ui',
  'local',
];

/** The named workloads (the core's `Workload`). */
export const WORKLOADS = ['chat', 'rag-1k', 'long-10k', 'llmperf'] as const;

type Kind = 'string' | 'boolean' | 'count' | 'positiveInt' | 'positive' | 'nonNegative' | 'levels' | 'rates' | 'api' | 'hook' | 'object' | 'render' | 'cacheBust' | 'tokenizer' | 'workload' | 'findMax' | 'dataset';

/** Every option `bench()` takes, and what its value must be. */
const OPTIONS: Record<string, Kind> = {
  api: 'api',
  url: 'string',
  model: 'string',
  apiKey: 'string',
  concurrency: 'levels',
  rate: 'rates',
  maxConcurrency: 'positiveInt',
  requests: 'positiveInt',
  durationS: 'positive',
  maxTokens: 'positiveInt',
  maxTokensLimit: 'positiveInt',
  prompt: 'string',
  inputTokens: 'positiveInt',
  inputTokensStdev: 'count',
  tokenizer: 'tokenizer',
  workload: 'workload',
  turns: 'positiveInt',
  cacheBust: 'cacheBust',
  sharedPrefix: 'positiveInt',
  system: 'string',
  temperature: 'nonNegative',
  warmup: 'count',
  timeoutS: 'positive',
  idleTimeoutS: 'positive',
  slo: 'string',
  seed: 'count',
  ignoreEos: 'boolean',
  findMax: 'findMax',
  onProgress: 'hook',
  onRecord: 'hook',
  signal: 'object',
  render: 'render',
  worker: 'boolean',
  engine: 'object',
  rampUpS: 'nonNegative',
  dataset: 'dataset',
};

const EXPECTED: Record<Kind, string> = {
  string: 'a string',
  boolean: 'true or false',
  count: 'a whole number from 0',
  positiveInt: 'a whole number from 1',
  positive: 'a number above 0',
  nonNegative: 'a number from 0',
  levels: 'a whole number from 1, or an array of them (one level each), such as [1, 4, 16]',
  rates: 'a number of requests per second above 0, or an array of them, such as [0.5, 2]',
  api: `one of ${APIS.map((a) => `'${a}'`).join(', ')}`,
  hook: 'a function',
  object: 'an object',
  render: 'an HTMLElement or a render callback',
  cacheBust: "'prefix' or 'off'",
  tokenizer: 'a URL, a Hugging Face model id, a File/Blob or bytes (ArrayBuffer, Uint8Array)',
  workload: `one of ${WORKLOADS.map((w) => `'${w}'`).join(', ')}`,
  findMax: 'true, false or { maxLoad?, maxLevels?, minGainPct?, attainmentPct? } (numbers)',
  dataset: 'a File or Blob, { url }, { name, text } or { name, bytes }',
};

/** The limits a `findMax` object may set, and what each takes. */
const FIND_MAX_LIMITS: Record<string, (v: unknown) => boolean> = {
  maxLoad: (v) => typeof v === 'number' && Number.isFinite(v) && v > 0,
  maxLevels: (v) => isWhole(v, 1),
  minGainPct: (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0,
  attainmentPct: (v) => typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= 100,
};

/** Largest whole number an option takes (the wasm side reads 32-bit counts). */
const MAX_COUNT = 0xffff_ffff;

const describe = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (Array.isArray(v)) return `[${v.map(describe).join(', ')}]`;
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'function') return 'a function';
  return String(v);
};

const isWhole = (v: unknown, min: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= MAX_COUNT;

function fits(kind: Kind, v: unknown): boolean {
  switch (kind) {
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'count':
      return isWhole(v, 0);
    case 'positiveInt':
      return isWhole(v, 1);
    case 'positive':
      return typeof v === 'number' && Number.isFinite(v) && v > 0;
    case 'nonNegative':
      return typeof v === 'number' && Number.isFinite(v) && v >= 0;
    case 'levels':
      return isWhole(v, 1) || (Array.isArray(v) && v.length > 0 && v.every((x) => isWhole(x, 1)));
    case 'rates': {
      const rate = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x) && x > 0;
      return rate(v) || (Array.isArray(v) && v.length > 0 && v.every(rate));
    }
    case 'api':
      return typeof v === 'string' && (APIS as readonly string[]).includes(v);
    case 'hook':
      return typeof v === 'function';
    case 'object':
      return typeof v === 'object' && v !== null;
    case 'render':
      return typeof v === 'function' || (typeof v === 'object' && v !== null);
    case 'cacheBust':
      return v === 'prefix' || v === 'off';
    case 'workload':
      return typeof v === 'string' && (WORKLOADS as readonly string[]).includes(v);
    case 'tokenizer':
      return (
        (typeof v === 'string' && v.length > 0) ||
        v instanceof URL ||
        v instanceof ArrayBuffer ||
        v instanceof Uint8Array ||
        (typeof Blob !== 'undefined' && v instanceof Blob)
      );
    case 'findMax':
      return (
        typeof v === 'boolean' ||
        (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.entries(v).every(([k, x]) => x === undefined || FIND_MAX_LIMITS[k]?.(x) === true))
      );
    case 'dataset':
      return isDatasetInput(v);
  }
}

/** Edit distance, for "did you mean" (names are short: the plain table is fine). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = Math.min(up + 1, row[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length]!;
}

/** The known option a misspelt or snake_case name most likely meant, if any. */
export function suggest(name: string): string | undefined {
  const camel = name.replace(/[_-]+([a-z0-9])/gi, (_, c: string) => c.toUpperCase());
  const lower = camel.toLowerCase();
  const known = Object.keys(OPTIONS);
  const exact = known.find((k) => k.toLowerCase() === lower);
  if (exact) return exact;
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = distance(lower, k.toLowerCase());
    if (d < bestD) [best, bestD] = [k, d];
  }
  return bestD <= Math.max(1, Math.floor(lower.length / 4)) ? best : undefined;
}

/**
 * Checks every option, throwing a `TypeError` that names the first bad one; returns the
 * settings with a single `concurrency` or `rate` number made a one-level list.
 */
export function validate(options: Record<string, unknown>): Record<string, unknown> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('bench() takes an options object: { api, url, model, ... }');
  }
  for (const [name, value] of Object.entries(options)) {
    const kind = OPTIONS[name];
    if (kind === undefined) {
      const hint = suggest(name);
      throw new TypeError(`bench(): unknown option \`${name}\`${hint ? ` (did you mean \`${hint}\`?)` : ''}`);
    }
    if (value !== undefined && !fits(kind, value)) {
      throw new TypeError(`bench(): option \`${name}\` expects ${EXPECTED[kind]}, got ${describe(value)}`);
    }
  }
  if (options.api === undefined) throw new TypeError(`bench(): option \`api\` is required: ${EXPECTED.api}`);
  if (options.api !== 'local') {
    for (const name of ['url', 'model']) {
      if (typeof options[name] !== 'string' || options[name] === '') {
        throw new TypeError(`bench(): option \`${name}\` is required for api '${String(options.api)}'`);
      }
    }
  }
  if (options.concurrency !== undefined && options.rate !== undefined) {
    throw new TypeError(
      'bench(): options `concurrency` and `rate` conflict: `concurrency` runs closed-loop levels (requests kept in flight), `rate` open-loop ones (arrivals per second); give one',
    );
  }
  if (options.maxConcurrency !== undefined && options.rate === undefined) {
    throw new TypeError('bench(): option `maxConcurrency` caps open-loop levels: it needs `rate`');
  }
  if (options.prompt !== undefined && options.inputTokens !== undefined) {
    throw new TypeError('bench(): options `prompt` and `inputTokens` conflict: `inputTokens` generates the prompt; give one');
  }
  if (options.workload !== undefined && (options.prompt !== undefined || options.inputTokens !== undefined)) {
    throw new TypeError('bench(): option `workload` sets the input itself: give a workload, or `prompt` / `inputTokens`');
  }
  if (typeof options.turns === 'number' && options.turns > 1 && options.rate !== undefined) {
    throw new TypeError('bench(): option `turns` needs closed-loop users (`concurrency`): conversations are held by virtual users, not arrivals');
  }
  if (typeof options.turns === 'number' && options.turns > 64) {
    throw new TypeError(`bench(): option \`turns\` is at most 64, got ${options.turns}`);
  }
  if (options.inputTokensStdev !== undefined && options.inputTokens === undefined) {
    throw new TypeError('bench(): option `inputTokensStdev` needs `inputTokens`: the mean it draws lengths around');
  }
  if (options.sharedPrefix !== undefined && options.cacheBust === 'off') {
    throw new TypeError("bench(): option `sharedPrefix` needs cache busting: with `cacheBust: 'off'` every request shares all of its prompt");
  }
  if (typeof options.sharedPrefix === 'number' && typeof options.inputTokens === 'number' && options.sharedPrefix >= options.inputTokens) {
    throw new TypeError(`bench(): option \`sharedPrefix\` must be below \`inputTokens\` (${options.inputTokens}), got ${options.sharedPrefix}`);
  }
  if (typeof options.rampUpS === 'number' && options.rampUpS > 0) {
    if (options.rate !== undefined) {
      throw new TypeError(
        'bench(): option `rampUpS` spreads the start of closed-loop streams (`concurrency`); open-loop arrivals (`rate`) are already spread by their rate: start with a lower rate instead',
      );
    }
    if (typeof options.durationS === 'number' && options.rampUpS >= options.durationS) {
      throw new TypeError(`bench(): option \`rampUpS\` must be shorter than \`durationS\` (${options.durationS}), got ${options.rampUpS}`);
    }
  }
  if (options.findMax !== undefined && options.findMax !== false) {
    if (typeof options.slo !== 'string' || options.slo === '') {
      throw new TypeError('bench(): option `findMax` needs `slo`: each level is judged by it (e.g. slo: "ttft=500ms")');
    }
    for (const name of ['concurrency', 'rate'] as const) {
      if (Array.isArray(options[name]) && (options[name] as unknown[]).length > 1) {
        throw new TypeError(`bench(): option \`findMax\` chooses the levels itself: give one \`${name}\` to start from, not a list`);
      }
    }
  }
  if (options.dataset !== undefined) {
    const other = ['prompt', 'inputTokens', 'sharedPrefix', 'workload'].find((name) => options[name] !== undefined);
    if (other) throw new TypeError(`bench(): options \`dataset\` and \`${other}\` conflict: a dataset gives each request its messages; give one`);
  }
  const out = { ...options };
  for (const name of ['concurrency', 'rate'] as const) {
    if (out[name] !== undefined) out[name] = levelList(out[name] as number | number[]);
  }
  return out;
}

/** `concurrency` or `rate` as a list of levels: one number is one level. */
export function levelList(v: number | number[] | undefined): number[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}
