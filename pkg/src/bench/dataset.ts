// `bench({ dataset })`: the file read (or fetched) here, its bytes handed to the wasm
// `BenchRun` with its name, and parsed and sampled there by the same core code as the CLI's
// `--dataset`. This side only gets the bytes, under the core's size cap.

import { absoluteUrl } from './options.js';
import { redactUrl } from './redact.js';

/**
 * A dataset for `bench()`: a `File` or `Blob` (a file the user picked), a URL to fetch, or
 * the text or bytes with a name for the report.
 */
export type DatasetInput =
  | Blob
  | { url: string }
  | { name: string; text: string }
  | { name: string; bytes: ArrayBuffer | Uint8Array };

/** The core's cap on a dataset file (`MAX_DATASET_BYTES`), 1 GiB. */
export const MAX_DATASET_BYTES = 2 ** 30;

/** A `File` or `Blob` (where the runtime has them). */
const isBlob = (v: unknown): v is Blob => typeof Blob !== 'undefined' && v instanceof Blob;

/** Whether `v` is one of the shapes of {@link DatasetInput}. */
export function isDatasetInput(v: unknown): v is DatasetInput {
  if (isBlob(v)) return true;
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  if (typeof o.url === 'string') return true;
  if (typeof o.name !== 'string') return false;
  return typeof o.text === 'string' || o.bytes instanceof ArrayBuffer || o.bytes instanceof Uint8Array;
}

const tooLarge = (bytes: number): Error =>
  new RangeError(`bench(): the dataset is ${bytes} bytes, over the cap of ${MAX_DATASET_BYTES} (1 GiB)`);

/** The dataset's name (a file name or the URL; the report drops a URL's credentials) and bytes. */
export async function loadDataset(input: DatasetInput, signal?: AbortSignal): Promise<{ name: string; bytes: Uint8Array }> {
  if (isBlob(input)) {
    // Refused from its size, before a byte is read.
    if (input.size > MAX_DATASET_BYTES) throw tooLarge(input.size);
    const name = typeof (input as File).name === 'string' ? (input as File).name : 'blob';
    return { name, bytes: new Uint8Array(await input.arrayBuffer()) };
  }
  if ('url' in input) {
    const url = absoluteUrl(input.url);
    return { name: url, bytes: await fetchBytes(url, signal) };
  }
  if ('text' in input) return { name: input.name, bytes: new TextEncoder().encode(input.text) };
  const bytes = input.bytes instanceof Uint8Array ? input.bytes : new Uint8Array(input.bytes);
  if (bytes.length > MAX_DATASET_BYTES) throw tooLarge(bytes.length);
  return { name: input.name, bytes };
}

/** The body of `url`, stopped at the cap (a `Content-Length` over it is refused first). */
async function fetchBytes(url: string, signal?: AbortSignal): Promise<Uint8Array> {
  const where = redactUrl(url);
  let response: Response;
  try {
    response = await fetch(url, signal ? { signal } : {});
  } catch (e) {
    throw new Error(`bench(): the dataset at ${where} could not be fetched: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!response.ok) throw new Error(`bench(): the dataset at ${where} answered HTTP ${response.status}`);
  const declared = Number(response.headers.get('content-length'));
  if (declared > MAX_DATASET_BYTES) {
    await response.body?.cancel();
    throw tooLarge(declared);
  }
  const reader = response.body?.getReader();
  if (!reader) return new Uint8Array(await response.arrayBuffer());
  const parts: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.length;
    if (length > MAX_DATASET_BYTES) {
      await reader.cancel();
      throw tooLarge(length);
    }
    parts.push(value);
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
