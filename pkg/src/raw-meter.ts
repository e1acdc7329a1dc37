// The real-user meter's parsers: the same glue as `raw`, from the meter builds of the wasm
// crate (`Exchange` only: no load driver, request builders or report schema), one build per
// wire family, so that a page downloads the adapter of its meter's API alone (the adapters
// are most of a build: measured in tests/browser/bench/meter.mjs). Apps load one lazily,
// after a stream. Each build's glue and wasm are named literally below, so that a bundler
// emits every one as a chunk and an asset of its own.

import type * as glue from '../wasm/tpsmeter_meter_openai_chat.js';
import { loadOnce } from './load.js';
import type { Api } from './types.js';

/** The initialised meter glue: `version()`, `Exchange` (every family's build exports the same). */
export type MeterModule = typeof glue;

type Glue = MeterModule & { default: Parameters<typeof loadOnce>[0] };

/**
 * A build loaded once: its glue imported, then its wasm (`url`, the package's `file`)
 * instantiated; a failure of either is not kept, so a later call retries.
 */
function build(importGlue: () => Promise<Glue>, url: URL, file: string): () => Promise<MeterModule> {
  let loader: Promise<() => Promise<MeterModule>> | undefined;
  return async () => {
    loader ??= importGlue().then(
      (g) => loadOnce(g.default, url, file, g as MeterModule),
      (e: unknown) => {
        loader = undefined;
        throw e;
      },
    );
    return (await loader)();
  };
}

const openaiChat = build(
  () => import('../wasm/tpsmeter_meter_openai_chat.js'),
  new URL('../wasm/tpsmeter_meter_openai_chat_bg.wasm', import.meta.url),
  'wasm/tpsmeter_meter_openai_chat_bg.wasm',
);
const ollama = build(
  () => import('../wasm/tpsmeter_meter_ollama.js'),
  new URL('../wasm/tpsmeter_meter_ollama_bg.wasm', import.meta.url),
  'wasm/tpsmeter_meter_ollama_bg.wasm',
);

/**
 * The build that decodes each API: the wire families of tpsmeter-core's `Api::family`
 * (tests/browser/meter.test.mjs checks every API the benchmark build names against it). A
 * `Record` over `Api` (generated from the Rust enum): an API without a build fails the type
 * check. `ollama` is the CLI's and bench()'s alias of ollama-chat.
 */
const BUILDS: Record<Api | 'ollama', () => Promise<MeterModule>> = {
  'openai-chat': openaiChat,
  local: openaiChat,
  'openai-completions': build(
    () => import('../wasm/tpsmeter_meter_openai_completions.js'),
    new URL('../wasm/tpsmeter_meter_openai_completions_bg.wasm', import.meta.url),
    'wasm/tpsmeter_meter_openai_completions_bg.wasm',
  ),
  'openai-responses': build(
    () => import('../wasm/tpsmeter_meter_openai_responses.js'),
    new URL('../wasm/tpsmeter_meter_openai_responses_bg.wasm', import.meta.url),
    'wasm/tpsmeter_meter_openai_responses_bg.wasm',
  ),
  anthropic: build(
    () => import('../wasm/tpsmeter_meter_anthropic.js'),
    new URL('../wasm/tpsmeter_meter_anthropic_bg.wasm', import.meta.url),
    'wasm/tpsmeter_meter_anthropic_bg.wasm',
  ),
  gemini: build(
    () => import('../wasm/tpsmeter_meter_gemini.js'),
    new URL('../wasm/tpsmeter_meter_gemini_bg.wasm', import.meta.url),
    'wasm/tpsmeter_meter_gemini_bg.wasm',
  ),
  'ollama-chat': ollama,
  ollama,
  'ollama-generate': ollama,
  'vercel-ui': build(
    () => import('../wasm/tpsmeter_meter_vercel_ui.js'),
    new URL('../wasm/tpsmeter_meter_vercel_ui_bg.wasm', import.meta.url),
    'wasm/tpsmeter_meter_vercel_ui_bg.wasm',
  ),
};

/** Instantiates the meter build that decodes `api` (once); an unknown API is an error. */
export function loadMeterWasm(api: string): Promise<MeterModule> {
  const load = Object.hasOwn(BUILDS, api) ? BUILDS[api as keyof typeof BUILDS] : undefined;
  if (!load) return Promise.reject(new Error(`tpsmeter/meter: unknown api ${JSON.stringify(api.slice(0, 40))}`));
  return load();
}
