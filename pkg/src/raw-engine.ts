// The local engine's glue: the `gpu` build of the wasm crate (EngineLoader, Engine), loaded
// only inside the engine's Worker.

import init, * as glue from '../wasm/tpsmeter_engine.js';
import { loadOnce } from './load.js';

/** The initialised engine glue. */
export type EngineModule = typeof glue;

/** Instantiates the engine's wasm once (located next to this module); a failed load retries. */
export const loadEngineWasm: () => Promise<EngineModule> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_engine_bg.wasm', import.meta.url),
  'wasm/tpsmeter_engine_bg.wasm',
  glue,
);
