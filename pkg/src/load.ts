// Instantiating a wasm-bindgen module once, shared by the benchmark glue (`raw`) and the
// meter's smaller parser (`raw-meter`), which must not import each other: each is its own
// lazily loaded chunk. Also where the package finds its own files (the wasm, the engine's
// Worker) when a dev server has moved its modules.

import { packageBase } from './package-base.js';
import { WasmLoadError } from './wasm-error.js';

/** The one line that turns off Vite's dependency pre-bundling for the package. */
const VITE_HINT = "in vite.config, `optimizeDeps: { exclude: ['tpsmeter'] }`";

/**
 * Where the package's file `file` (its path inside the package, e.g. `wasm/x.wasm`) is,
 * given `url`, the same file located from the calling module (`new URL(..., import.meta.url)`,
 * written out at the call so that bundlers see the pattern and emit the file).
 *
 * Vite's dev server pre-bundles dependencies into `node_modules/.vite/deps/`: there `url`
 * points beside the pre-bundled module, where nothing of ours exists (and the dev server's
 * fallback answers with its index.html). The installed package is served from
 * `node_modules/tpsmeter/`, beside that cache directory, so the file is taken from there.
 */
export function packageFile(url: URL, file: string): URL {
  // Told by the app (a bundler that copies nothing of ours: see package-base.ts).
  const base = packageBase();
  if (base) return new URL(file, base);
  const marker = '/node_modules/.vite/';
  const at = url.pathname.indexOf(marker);
  if (at < 0) return url;
  return new URL(`${url.pathname.slice(0, at)}/node_modules/tpsmeter/${file}`, url);
}

/**
 * Fetches the wasm at `url` and checks that a wasm file came back, so that a dev server's
 * web page is named as such (not "expected magic word 00 61 73 6d, found 3c 21 64 6f").
 */
async function fetchWasm(url: URL): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new WasmLoadError(url.href, `tpsmeter: could not fetch its wasm at ${url.href} (${e instanceof Error ? e.message : String(e)})`);
  }
  const type = res.headers.get('content-type') ?? '';
  if (!res.ok || type.startsWith('text/html')) {
    const what = res.ok ? 'a web page (text/html)' : `HTTP ${res.status}`;
    throw new WasmLoadError(
      url.href,
      `tpsmeter: its wasm at ${url.href} came back as ${what}. The server does not serve the ` +
        `package's wasm/ folder there: with a bundler, make it emit the file (a dev server ` +
        `that pre-bundles dependencies may need the package excluded: ${VITE_HINT}).`,
    );
  }
  return res;
}

/**
 * Makes the calling Worker a thread of a threaded build's pool: instantiates `module` on the
 * engine's shared `memory` with the build's `init`, calls `ready`, then `run` (the build's
 * `runThread`, a call that blocks for the pool's life).
 */
export async function joinThreadPool(
  init: (input: { module_or_path: WebAssembly.Module; memory: WebAssembly.Memory }) => Promise<unknown>,
  run: () => void,
  module: WebAssembly.Module,
  memory: WebAssembly.Memory,
  ready: () => void,
): Promise<void> {
  await init({ module_or_path: module, memory });
  ready();
  run();
}

/**
 * Calls `init` with the `.wasm` at `url` (the package's `file`, see [`packageFile`]) once and
 * resolves to `glue`; a failed load is not cached, so a later call retries. The URL is built
 * by the caller with `new URL(..., import.meta.url)`, which works unbundled in a
 * `<script type="module">` page and in bundlers that understand that pattern (Vite, webpack 5,
 * Rollup with the URL plugin).
 */
export function loadOnce<T>(
  init: (input: { module_or_path: Response }) => Promise<unknown>,
  url: URL,
  file: string,
  glue: T,
): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= fetchWasm(packageFile(url, file))
      .then((res) => init({ module_or_path: res }))
      .then(
        () => glue,
        (e: unknown) => {
          loading = undefined;
          throw e;
        },
      );
    return loading;
  };
}
