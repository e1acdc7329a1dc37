// `bench({ tokenizer })`: the model's tokenizer, which makes synthetic prompts exactly
// `inputTokens` long and counts answers that arrive without usage.
//
// The tokenizer is the `tokenizers` crate in a wasm build of its own (`tpsmeter_tokenizer`:
// the model floor's tokenizer, no engine; the benchmark module stays small without it),
// imported here only when a run asks for one. It counts synchronously, so the benchmark
// module calls it through a plain function.

/** Where a tokenizer comes from: a `tokenizer.json` or a GGUF (its header carries the vocabulary). */
export type TokenizerSource = string | URL | Blob | ArrayBuffer | Uint8Array;

/** A loaded tokenizer: its count and the name the report records. */
export interface LoadedTokenizer {
  name: string;
  count: (text: string) => number;
  free: () => void;
}

/** First read: a GGUF's header (the vocabulary) is usually well inside this. */
const FIRST_READ = 16 << 20;
/** Most of a GGUF read for its header: a 256k vocabulary's header is ~10 MB. */
const MAX_HEADER = 256 << 20;
/** A Hugging Face model id, `ORG/NAME`. */
const MODEL_ID = /^[\w.-]+\/[\w.-]+$/;
/** The magic a GGUF file starts with. */
const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46];

/** What the report calls a source: a file's name, a URL without credentials or query, a model id. */
export function tokenizerName(source: TokenizerSource): string {
  if (typeof source === 'string' && MODEL_ID.test(source) && !source.includes('..')) return source;
  if (typeof source === 'string' || source instanceof URL) {
    try {
      const u = new URL(String(source), typeof location !== 'undefined' ? location.href : undefined);
      return `${u.origin}${u.pathname}`;
    } catch {
      return String(source).slice(0, 200);
    }
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return (source as Blob & { name?: string }).name || 'tokenizer';
  }
  return 'tokenizer';
}

/**
 * Loads the tokenizer `source` names: a URL (a GGUF is fetched by ranges, header only, where
 * the server allows), a Hugging Face model id (its `tokenizer.json` from the Hub), a
 * `File`/`Blob`, or bytes. A `tokenizer.json` is read whole, up to the engine's cap (the
 * CLI's, 128 MiB: `LimitExceeded` past it), and its regexes are vetted before they run
 * (`UnsafeTokenizer`: a pattern that could pin the CPU). Only BPE and Unigram models load
 * (`UnsupportedModel`), within the limits on added tokens and Unigram pieces
 * (`LimitExceeded`); a count over its time budget throws `LimitExceeded` (docs/workloads.md).
 */
export async function loadTokenizer(source: TokenizerSource, signal?: AbortSignal): Promise<LoadedTokenizer> {
  const { loadTokenizerWasm } = await import('../raw-tokenizer.js');
  const wasm = await loadTokenizerWasm();
  const name = tokenizerName(source);
  const make = (bytes: Uint8Array): InstanceType<typeof wasm.TokenCounter> => new wasm.TokenCounter(bytes);
  const counter = await grow(read(source, signal), make, wasm.TokenCounter.maxJsonBytes(), name);
  return {
    name,
    count: (text: string) => counter.count(text),
    free: () => counter.free(),
  };
}

/**
 * Reads up to `n` bytes from the start of the source: `[bytes, whole]`, `whole` when they
 * are all of it. Never holds more than `n` (and one network chunk).
 */
type Reader = (n: number) => Promise<[Uint8Array, boolean]>;

const isGguf = (bytes: Uint8Array): boolean => GGUF_MAGIC.every((b, i) => bytes[i] === b);

/** A named error, as the engine's wasm throws them. */
function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

/**
 * Builds from the first bytes, reading more while a GGUF header runs past them; anything
 * else (a `tokenizer.json`) is read whole, up to `maxJson` bytes.
 */
async function grow<T>(reader: Reader, make: (b: Uint8Array) => T, maxJson: number, name: string): Promise<T> {
  let [bytes, whole] = await reader(FIRST_READ);
  // What the engine takes for a `tokenizer.json` (anything else that is not a GGUF is
  // refused from its first bytes). Read again, whole: simpler than resuming the first read,
  // and only files over `FIRST_READ` (Gemma's, ~33 MB) pay for it.
  if (!whole && !isGguf(bytes) && bytes[0] === 0x7b) {
    // One byte past the cap tells a file at the cap from a longer one.
    [bytes, whole] = await reader(maxJson + 1);
    if (!whole || bytes.length > maxJson) {
      throw named('LimitExceeded', `tokenizer ${name}: over the ${maxJson}-byte limit of a tokenizer.json`);
    }
  }
  let n = FIRST_READ;
  for (;;) {
    try {
      return make(bytes);
    } catch (e) {
      if ((e as Error)?.name !== 'Truncated' || whole || n >= MAX_HEADER) throw e;
      n = Math.min(n * 4, MAX_HEADER);
      [bytes, whole] = await reader(n);
    }
  }
}

function read(source: TokenizerSource, signal?: AbortSignal): Reader {
  if (source instanceof Uint8Array) return async () => [source, true];
  if (source instanceof ArrayBuffer) return async () => [new Uint8Array(source), true];
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return async (n) => [new Uint8Array(await source.slice(0, n).arrayBuffer()), n >= source.size];
  }
  let url = String(source);
  if (typeof source === 'string' && MODEL_ID.test(source) && !source.includes('..')) {
    url = `https://huggingface.co/${source}/resolve/main/tokenizer.json`;
  }
  return async (n) => {
    const response = await fetch(url, { headers: { range: `bytes=0-${n - 1}` }, signal });
    if (!response.ok) throw new Error(`tokenizer ${tokenizerName(source)}: HTTP ${response.status}`);
    // A server that ignores the range (200) sends it all: stop reading past `n`.
    const [bytes, ended] = await readAtMost(response, n);
    return [bytes, response.status === 206 ? bytes.length < n : ended];
  };
}

/**
 * At most the first `n` bytes of a response's body, and whether the body ended there
 * (reading stops, and the rest is cancelled, one byte past `n`).
 */
async function readAtMost(response: Response, n: number): Promise<[Uint8Array, boolean]> {
  const reader = response.body?.getReader();
  if (!reader) return [new Uint8Array(0), true];
  const parts: Uint8Array[] = [];
  let length = 0;
  let ended = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    if (length + value.length > n) {
      parts.push(value.subarray(0, n - length));
      length = n;
      await reader.cancel();
      break;
    }
    parts.push(value);
    length += value.length;
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return [out, ended];
}
