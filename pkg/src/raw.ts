// The one module that touches the generated wasm-bindgen glue. Everything else in the
// package imports the glue through here, so its shape can change in one place.
//
// `BenchRun` and `Exchange` own wasm memory: call `free()` when done with one (the
// package's own code always does).

import init, * as glue from '../wasm/tpsmeter_wasm.js';

export * from '../wasm/tpsmeter_wasm.js';

/** The initialised glue: `version()`, `apis()`, `BenchRun`, `Exchange`, ... */
export type RawModule = typeof glue;

let loading: Promise<RawModule> | undefined;

/**
 * Instantiates the wasm module once and resolves to the glue. The `.wasm` file is located
 * relative to this module (`new URL(..., import.meta.url)`), which works unbundled in a
 * `<script type="module">` page and in bundlers that understand that pattern (Vite,
 * webpack 5, Rollup with the URL plugin). A failed load is not cached: a later call retries.
 */
export function loadWasm(): Promise<RawModule> {
  loading ??= init({
    module_or_path: new URL('../wasm/tpsmeter_wasm_bg.wasm', import.meta.url),
  }).then(
    () => glue,
    (e: unknown) => {
      loading = undefined;
      throw e;
    },
  );
  return loading;
}
