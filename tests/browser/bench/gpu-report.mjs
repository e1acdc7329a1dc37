// The browser half of `cargo xtask gpu-report`: our engine and wllama (llama.cpp in wasm, its
// WebGPU backend) in headless Chromium on the machine's real GPU, on every GGUF given, with
// the adapter Chromium got. Writes one JSON document (the xtask prints the table).
//
//   node tests/browser/bench/gpu-report.mjs OUT.json PROMPT_TOKENS GEN_TOKENS ROUNDS MODEL.gguf...
//
// TPSMETER_GPU_REPORT_CHROMIUM_ARGS: Chromium's flags as a JSON array (the xtask passes the
// real-GPU set, see xtask/src/gpu_report.rs). Every model lies in one directory (served as
// /models/). Each measured generation has its own prompt (a different first word), so no
// engine reuses a cached prefix; the first generation of each engine is a warm-up.

import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, isolatedPage, loadAverage, log } from './common.mjs';

const [out, promptArg, genArg, roundsArg, ...models] = process.argv.slice(2);
const promptTokens = Number(promptArg);
const genTokens = Number(genArg);
const rounds = Number(roundsArg);
if (!out || !models.length || !(promptTokens > 0) || !(genTokens > 1) || !(rounds > 0)) {
  console.error('usage: gpu-report.mjs OUT.json PROMPT_TOKENS GEN_TOKENS ROUNDS MODEL.gguf...');
  process.exit(2);
}
const args = process.env.TPSMETER_GPU_REPORT_CHROMIUM_ARGS ? JSON.parse(process.env.TPSMETER_GPU_REPORT_CHROMIUM_ARGS) : undefined;
const modelDir = path.dirname(models[0]);
if (models.some((m) => path.dirname(m) !== modelDir)) {
  console.error('every model must lie in one directory');
  process.exit(2);
}
/** About `n` tokens of text whose first word differs per `salt` (the same text as the xtask's native runs). */
const prompt = (n, salt) =>
  `${['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo', 'Foxtrot', 'Golf', 'Hotel'][salt % 8]} ${'the sea and the sky '.repeat(Math.ceil(n / 5))}`
    .split(' ')
    .slice(0, n)
    .join(' ');
const prompts = Array.from({ length: rounds + 1 }, (_, s) => prompt(promptTokens, s));
const wllamaDir = path.join(REPO_ROOT, 'tests', 'browser', 'node_modules', '@wllama', 'wllama', 'esm');
let wllamaVersion = null;
try {
  wllamaVersion = JSON.parse(fs.readFileSync(path.join(wllamaDir, '..', 'package.json'), 'utf8')).version;
} catch {
  // Not installed: its rows say so.
}

const loadStart = loadAverage();
log(`gpu-report (browser): load average ${loadStart}; Chromium flags ${JSON.stringify(args ?? 'default')}`);
const ctx = await isolatedPage({ webgpu: true, args, mounts: { '/models/': modelDir, '/wllama/': wllamaDir } });
const report = { chromium_args: args ?? null, load_average_start: loadStart, adapter: null, rows: [] };
try {
  // What a page asking for the fast adapter gets (the engine's Worker asks the same way).
  report.adapter = await ctx.page.evaluate(async () => {
    if (!navigator.gpu) return { error: 'navigator.gpu is missing (WebGPU is off)' };
    const a = (await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' })) ?? (await navigator.gpu.requestAdapter());
    if (!a) return { error: 'requestAdapter() returned null' };
    const i = a.info ?? {};
    return {
      vendor: i.vendor ?? '',
      architecture: i.architecture ?? '',
      device: i.device ?? '',
      description: i.description ?? '',
      is_fallback: Boolean(i.isFallbackAdapter ?? a.isFallbackAdapter),
      shader_f16: a.features.has('shader-f16'),
      subgroups: a.features.has('subgroups'),
    };
  });
  log(`gpu-report (browser): adapter ${JSON.stringify(report.adapter)}`);
  for (const model of models) {
    const url = `/models/${path.basename(model)}`;
    try {
      report.rows.push({ runtime: 'ours', model: path.basename(model), ...(await ours(url)) });
    } catch (e) {
      report.rows.push({ runtime: 'ours', model: path.basename(model), error: String(e?.message ?? e) });
    }
    if (!wllamaVersion) {
      report.rows.push({ runtime: 'wllama', model: path.basename(model), error: 'not installed (npm ci in tests/browser installs @wllama/wllama)' });
      continue;
    }
    try {
      report.rows.push({ runtime: `wllama ${wllamaVersion}`, model: path.basename(model), ...(await wllama(url)) });
    } catch (e) {
      report.rows.push({ runtime: `wllama ${wllamaVersion}`, model: path.basename(model), error: String(e?.message ?? e) });
    }
  }
} finally {
  await ctx.close();
}
report.load_average_end = loadAverage();
fs.writeFileSync(out, JSON.stringify(report, null, 2));
log(`gpu-report (browser): wrote ${out}`);

/** Our engine in the page's Worker: prefill and decode per round, per-token GPU work. */
async function ours(url) {
  return ctx.page.evaluate(
    async ({ url, prompts, genTokens }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const engine = await createEngine({ model: url });
      try {
        const runs = [];
        for (const [i, p] of prompts.entries()) {
          const res = await engine.completions.create({ prompt: p, max_tokens: genTokens, temperature: 0, ignore_eos: true });
          if (i > 0) runs.push(res.timings);
        }
        // A 1-token prompt: every step is one token, so the generation's GPU counters divide
        // evenly per token (the prompt's step is a decode step too).
        const one = await engine.completions.create({ prompt: 'A', max_tokens: genTokens, temperature: 0, ignore_eos: true });
        const t = one.timings;
        const n = t.tokens?.length || genTokens;
        const cost = t.per_token_cost ?? null;
        return {
          backend: 'WebGPU',
          engine_adapter: engine.info?.adapter ?? '',
          profile: engine.info?.profile ?? '',
          prefill: runs.map((r) => r.prefill_tokens_per_second),
          decode: runs.map((r) => r.decode_tokens_per_second),
          prompt_tokens: runs[0]?.prompt_tokens_evaluated ?? null,
          gen_tokens: runs[0]?.tokens?.length ?? null,
          dispatches_per_token: cost?.dispatches ?? (t.gpu ? t.gpu.dispatches / n : null),
          encode_ms_per_token: cost?.encode_ms ?? null,
          per_token_cost: cost,
        };
      } finally {
        await engine.dispose();
      }
    },
    { url, prompts, genTokens },
  );
}

/**
 * wllama with every layer offered to its WebGPU backend (its default since 3.1, n_gpu_layers
 * 99999); its log says whether ggml's WebGPU device took them, and the row says which.
 */
async function wllama(url) {
  return ctx.page.evaluate(
    async ({ url, prompts, genTokens, promptTokens, shaderF16 }) => {
      const { Wllama } = await import('/wllama/index.js');
      const lines = [];
      const keep = (...a) => lines.push(a.join(' '));
      const w = new Wllama({ default: '/wllama/wasm/wllama.wasm' }, { logger: { debug: keep, log: keep, warn: keep, error: keep } });
      await w.loadModelFromUrl(url, { n_ctx: Math.max(1024, 2 * (promptTokens + genTokens)), useCache: false, n_gpu_layers: 99999 });
      try {
        const runs = [];
        for (const [i, p] of prompts.entries()) {
          const res = await w.createCompletion({ prompt: p, max_tokens: genTokens, temperature: 0, ignore_eos: true });
          if (i > 0) runs.push(res.timings);
        }
        const offload = lines.find((l) => /offloaded \d+\/\d+ layers to GPU/.test(l)) ?? '';
        const m = offload.match(/offloaded (\d+)\/(\d+) layers/);
        // wllama's only GPU device is ggml's WebGPU backend: layers offloaded means WebGPU.
        const gpu = m && Number(m[1]) > 0;
        const device = lines.find((l) => /ggml_webgpu|WebGPU.*(adapter|device)/i.test(l)) ?? '';
        return {
          // ggml's WebGPU backend registers no device without `shader-f16` (ggml-webgpu.cpp:
          // "WebGPU backend requires f16 support"); SwiftShader lacks it.
          backend: gpu ? `WebGPU (${m[1]}/${m[2]} layers)` : `wasm CPU (WebGPU not taken${shaderF16 ? '' : ': adapter lacks shader-f16'})`,
          engine_adapter: device.trim().slice(0, 160),
          prefill: runs.map((t) => t.prompt_per_second),
          decode: runs.map((t) => t.predicted_per_second),
          prompt_tokens: runs[0]?.prompt_n ?? null,
          gen_tokens: runs[0]?.predicted_n ?? null,
          dispatches_per_token: null,
          encode_ms_per_token: null,
          log_tail: lines.filter((l) => /webgpu|gpu|device|offload|buffer size|jspi|compat/i.test(l)).slice(0, 16),
        };
      } finally {
        await w.exit();
      }
    },
    { url, prompts, genTokens, promptTokens, shaderF16: Boolean(report.adapter?.shader_f16) },
  );
}
