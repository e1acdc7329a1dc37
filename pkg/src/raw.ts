// The one module that touches the generated wasm-bindgen glue. Everything else in the
// package imports the glue through here, so its shape can change in one place.
//
// `BenchRun` and `Exchange` own wasm memory: call `free()` when done with one (the
// package's own code always does).

import init, * as glue from '../wasm/tpsmeter_wasm.js';
import { loadOnce } from './load.js';

export * from '../wasm/tpsmeter_wasm.js';

/** The initialised glue: `version()`, `apis()`, `BenchRun`, `Exchange`, ... */
export type RawModule = typeof glue;

/**
 * Instantiates the wasm module once and resolves to the glue. The `.wasm` file is located
 * relative to this module, so the package works unbundled and in bundlers. A failed load is
 * not cached: a later call retries.
 */
export const loadWasm: () => Promise<RawModule> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_wasm_bg.wasm', import.meta.url),
  'wasm/tpsmeter_wasm_bg.wasm',
  glue,
);
