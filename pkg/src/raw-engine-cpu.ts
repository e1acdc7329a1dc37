// The local engine's CPU glue: the `cpu` build of the wasm crate (the same EngineLoader and
// Engine classes as ./raw-engine.ts, computing with wasm SIMD instead of WebGPU). The engine's
// Worker imports this module only when it runs on the CPU, so a page with WebGPU never
// downloads the CPU kernels.

import init, * as glue from '../wasm/tpsmeter_engine_cpu.js';
import { loadOnce } from './load.js';

/** The initialised CPU engine glue. */
export type CpuEngineModule = typeof glue;

/** Instantiates the CPU engine's wasm once (located next to this module); a failed load retries. */
export const loadCpuEngineWasm: () => Promise<CpuEngineModule> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_engine_cpu_bg.wasm', import.meta.url),
  'wasm/tpsmeter_engine_cpu_bg.wasm',
  glue,
);
