// Choosing between a CPU build's relaxed-SIMD twin and its plain build, in the engine's Worker.

import type { EngineError } from './error.js';
import { messageOf } from './error.js';

/**
 * `load(true)` where `relaxed`, and `load(false)` if that fails: a relaxed-SIMD build that
 * does not load (a host that lacks its file, as `cargo xtask demo` serves the page before
 * those two builds are compiled; a browser that validates a small relaxed-SIMD module but not
 * the engine's) leaves the plain build, which computes the same results, with the reason.
 */
export async function preferRelaxed<T>(
  relaxed: boolean,
  load: (relaxed: boolean) => Promise<T>,
  signal: AbortSignal,
  cancelled: () => EngineError,
): Promise<{ wasm: T; relaxed: boolean; simdWhy?: string }> {
  if (!relaxed) return { wasm: await load(false), relaxed: false };
  try {
    return { wasm: await load(true), relaxed: true };
  } catch (e) {
    if (signal.aborted) throw cancelled();
    return { wasm: await load(false), relaxed: false, simdWhy: `plain SIMD: the relaxed-SIMD build did not load (${messageOf(e)})` };
  }
}
