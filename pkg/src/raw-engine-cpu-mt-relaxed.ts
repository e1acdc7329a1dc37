// The threaded CPU engine glue's relaxed-SIMD twin: the `threads,relaxed` build (the same
// classes as ./raw-engine-cpu-mt.ts). Loaded, by the engine's Worker and its pool's threads
// alike, instead of that one where the browser validates relaxed SIMD.

import init, * as glue from '../wasm/tpsmeter_engine_cpu_mt_relaxed.js';
import { joinThreadPool, loadOnce } from './load.js';

/** Instantiates the relaxed-SIMD threaded CPU engine's wasm once, on a new shared memory. */
export const loadCpuThreadsWasm: () => Promise<typeof glue> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_engine_cpu_mt_relaxed_bg.wasm', import.meta.url),
  'wasm/tpsmeter_engine_cpu_mt_relaxed_bg.wasm',
  glue,
);

/** Makes the calling Worker one of this build's pool threads ([`joinThreadPool`]). */
export const runCpuThread = (module: WebAssembly.Module, memory: WebAssembly.Memory, ready: () => void): Promise<void> =>
  joinThreadPool(init, glue.runThread, module, memory, ready);
