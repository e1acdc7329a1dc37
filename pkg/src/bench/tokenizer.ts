// `bench({ tokenizer })`: the model's tokenizer, which makes synthetic prompts exactly
// `inputTokens` long and counts answers that arrive without usage.
//
// The tokenizer is the `tokenizers` crate compiled into the engine's wasm (the benchmark
// module stays small without it), imported here only when a run asks for one. It counts
// synchronously, so the benchmark module calls it through a plain function.

/** Where a tokenizer comes from: a `tokenizer.json` or a GGUF (its header carries the vocabulary). */
export type TokenizerSource = string | URL | Blob | ArrayBuffer | Uint8Array;

/** A loaded tokenizer: its count and the name the report records. */
export interface LoadedTokenizer {
  name: string;
  count: (text: string) => number;
  free: () => void;
}

/** First read of a GGUF: its header (the vocabulary) is usually well inside this. */
const FIRST_READ = 16 << 20;
/** Most of a GGUF read for its header: a 256k vocabulary's header is ~10 MB. */
const MAX_HEADER = 256 << 20;
/** A Hugging Face model id, `ORG/NAME`. */
const MODEL_ID = /^[\w.-]+\/[\w.-]+$/;

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
 * `File`/`Blob`, or bytes.
 */
export async function loadTokenizer(source: TokenizerSource, signal?: AbortSignal): Promise<LoadedTokenizer> {
  const { loadEngineWasm } = await import('../raw-engine.js');
  const wasm = await loadEngineWasm();
  const name = tokenizerName(source);
  const make = (bytes: Uint8Array): InstanceType<typeof wasm.TokenCounter> => new wasm.TokenCounter(bytes);
  const counter = await grow(read(source, signal), make);
  return {
    name,
    count: (text: string) => counter.count(text),
    free: () => counter.free(),
  };
}

/** Reads `n` bytes from the start of the source (or all of it): `[bytes, whole]`. */
type Reader = (n: number) => Promise<[Uint8Array, boolean]>;

/** Builds from the first bytes, reading more while a GGUF header runs past them. */
async function grow<T>(reader: Reader, make: (b: Uint8Array) => T): Promise<T> {
  let n = FIRST_READ;
  for (;;) {
    const [bytes, whole] = await reader(n);
    try {
      return make(bytes);
    } catch (e) {
      if ((e as Error)?.name !== 'Truncated' || whole || n >= MAX_HEADER) throw e;
      n = Math.min(n * 4, MAX_HEADER);
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
    const bytes = new Uint8Array(await response.arrayBuffer());
    // 200: the server ignored the range and sent it all.
    return [bytes, response.status !== 206 || bytes.length < n];
  };
}
