// `bench({ tokenizer })`'s token counter: the `tokenizer` build of the wasm crate (the model
// floor's tokenizer, no engine), imported only when a run names a tokenizer.

import init, * as glue from '../wasm/tpsmeter_tokenizer.js';
import { loadOnce } from './load.js';

/** The initialised tokenizer glue. */
export type TokenizerModule = typeof glue;

/** Instantiates the tokenizer's wasm once (located next to this module); a failed load retries. */
export const loadTokenizerWasm: () => Promise<TokenizerModule> = loadOnce(
  init,
  new URL('../wasm/tpsmeter_tokenizer_bg.wasm', import.meta.url),
  'wasm/tpsmeter_tokenizer_bg.wasm',
  glue,
);
