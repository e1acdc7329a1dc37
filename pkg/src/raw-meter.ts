// The real-user meter's parser: the same glue as `raw`, from the meter build of the wasm
// crate (`Exchange` only, no load driver, request builders or report schema), about half the
// size of the benchmark build. Apps load it lazily on their users' pages, after a stream.

import init, * as glue from '../wasm/tpsmeter_meter.js';
import { loadOnce } from './load.js';

/** The initialised meter glue: `version()`, `Exchange`. */
export type MeterModule = typeof glue;

/** Instantiates the meter's wasm once (located next to this module); a failed load retries. */
export const loadMeterWasm: () => Promise<MeterModule> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_meter_bg.wasm', import.meta.url),
  'wasm/tpsmeter_meter_bg.wasm',
  glue,
);
