// The CPU engine glue's relaxed-SIMD twin: the `cpu,relaxed` build of the wasm crate (the
// same classes as ./raw-engine-cpu.ts; its Q4 kernels use relaxed SIMD's 8-bit dot). The
// engine's Worker imports it instead of that one where the browser validates relaxed SIMD.

import init, * as glue from '../wasm/tpsmeter_engine_cpu_relaxed.js';
import { loadOnce } from './load.js';

/** Instantiates the relaxed-SIMD CPU engine's wasm once; a failed load retries. */
export const loadCpuEngineWasm: () => Promise<typeof glue> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_engine_cpu_relaxed_bg.wasm', import.meta.url),
  'wasm/tpsmeter_engine_cpu_relaxed_bg.wasm',
  glue,
);
