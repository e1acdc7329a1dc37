// `bench()` options that exist in JavaScript alone, checked in the package's words before
// anything starts: the callbacks, the render target, the signal, the Worker switch, the
// engine, and the shapes a tokenizer or a dataset may be handed in as. Every other option
// (its name, its kind, its range and every rule between options) is the core's run spec,
// checked by one wasm call (`checkOptions`), which says the same sentence as the CLI with
// `bench()`'s names; see `checkSettings`.

import { isDatasetInput } from './dataset.js';

type JsKind = 'hook' | 'object' | 'render' | 'boolean' | 'tokenizer' | 'dataset';

/** The options only JavaScript can check, and what each takes. */
const JS_OPTIONS: Record<string, JsKind> = {
  onProgress: 'hook',
  onRecord: 'hook',
  signal: 'object',
  render: 'render',
  worker: 'boolean',
  engine: 'object',
  tokenizer: 'tokenizer',
  dataset: 'dataset',
};

const EXPECTED: Record<JsKind, string> = {
  hook: 'a function',
  object: 'an object',
  render: 'an HTMLElement or a render callback',
  boolean: 'true or false',
  tokenizer: 'a URL, a Hugging Face model id, a File/Blob or bytes (ArrayBuffer, Uint8Array)',
  dataset: 'a File or Blob, { url }, { name, text } or { name, bytes }',
};

const describe = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'function') return 'a function';
  return String(v);
};

function fits(kind: JsKind, v: unknown): boolean {
  switch (kind) {
    case 'hook':
      return typeof v === 'function';
    case 'object':
      return typeof v === 'object' && v !== null;
    case 'render':
      return typeof v === 'function' || (typeof v === 'object' && v !== null);
    case 'boolean':
      return typeof v === 'boolean';
    case 'tokenizer':
      return (
        (typeof v === 'string' && v.length > 0) ||
        v instanceof URL ||
        v instanceof ArrayBuffer ||
        v instanceof Uint8Array ||
        (typeof Blob !== 'undefined' && v instanceof Blob)
      );
    case 'dataset':
      return isDatasetInput(v);
  }
}

/**
 * Checks the options only JavaScript knows, throwing a `TypeError` that names the first bad
 * one; returns the options with a single `concurrency` or `rate` number made a one-level list.
 */
export function validate(options: Record<string, unknown>): Record<string, unknown> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('bench() takes an options object: { api, url, model, ... }');
  }
  for (const [name, value] of Object.entries(options)) {
    const kind = JS_OPTIONS[name];
    if (kind !== undefined && value !== undefined && !fits(kind, value)) {
      throw new TypeError(`bench(): \`${name}\` expects ${EXPECTED[kind]}, got ${describe(value)}`);
    }
  }
  const out = { ...options };
  for (const name of ['concurrency', 'rate'] as const) {
    const v = out[name];
    if (typeof v === 'number') out[name] = [v];
  }
  return out;
}

/** The part of the wasm module that checks options (the bench build's `checkOptions`). */
export interface OptionChecker {
  checkOptions(options: unknown, names?: unknown): void;
}

/**
 * Checks run settings (no callbacks; `tokenizer` as its name) against the core's run spec,
 * throwing a `TypeError` with its message (`prefix` first). `names` maps option keys to the
 * caller's words for them (a form's labels).
 */
export function checkSettings(raw: OptionChecker, settings: object, prefix = 'bench(): ', names?: Record<string, string>): void {
  try {
    raw.checkOptions(settings, names);
  } catch (e) {
    throw new TypeError(`${prefix}${e instanceof Error ? e.message : String(e)}`);
  }
}

/** `concurrency` or `rate` as a list of levels: one number is one level. */
export function levelList(v: number | number[] | undefined): number[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}
