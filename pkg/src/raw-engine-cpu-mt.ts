// The local engine's CPU glue on wasm threads: the `threads` build of the wasm crate (the CPU
// backend's classes, on shared memory). The engine's Worker imports it only where the page is
// cross-origin isolated and more than one thread is wanted; the pool's own Workers (more
// copies of the engine's Worker script) import it too, to join the same memory.

import init, * as glue from '../wasm/tpsmeter_engine_cpu_mt.js';
import { joinThreadPool, loadOnce } from './load.js';

/** The initialised threaded CPU engine glue. */
export type CpuThreadsModule = typeof glue;

/** Instantiates the threaded CPU engine's wasm once, on a new shared memory. */
export const loadCpuThreadsWasm: () => Promise<CpuThreadsModule> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_engine_cpu_mt_bg.wasm', import.meta.url),
  'wasm/tpsmeter_engine_cpu_mt_bg.wasm',
  glue,
);

/** Makes the calling Worker one of this build's pool threads ([`joinThreadPool`]). */
export const runCpuThread = (module: WebAssembly.Module, memory: WebAssembly.Memory, ready: () => void): Promise<void> =>
  joinThreadPool(init, glue.runThread, module, memory, ready);
