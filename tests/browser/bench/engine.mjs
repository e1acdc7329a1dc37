// The local engine's benchmark: SmolLM2-135M Q4_1 in headless Chromium (WebGPU on
// SwiftShader here, and the CPU backend) beside our native engine (`tpsmeter run`, lavapipe
// here) in the same run.
//
//   cargo xtask pkg && cargo build --release -p tpsmeter-cli
//   TPSMETER_MODEL=... node tests/browser/bench/engine.mjs [rounds]
//
// Prints: cold load (download + upload + pipelines, cache empty) and warm load (from the
// model cache), prefill tok/s and TTFT at a 64-token prompt, decode tok/s at contexts 64 and
// 512 (32 tokens generated after the prompt), submits, dispatches and bytes read back per
// token (from the engine's GPU counters), the host's cost per decoded token
// (`timings.perTokenCost`: passes, pipeline and bind-group changes, bytes written, median
// encode+submit ms in the Worker), the probed roofline and
// decode as its share; then the same figures from the native engine, and browser / native
// ratios (and, where Chromium's SwiftShader can be loaded as a native Vulkan driver, the native
// engine on that same adapter); then wllama (npm `@wllama/wllama`: llama.cpp compiled to wasm, installed with the
// browser tests) on the same GGUF in the same browser, with one thread, its default threads
// and one per core, as ratios to ours on WebGPU and on the CPU backend; then the gzipped sizes
// of the engine's wasms and JS. Medians of
// `rounds` (default 3) runs each. The CLI binary: TPSMETER_CLI_RELEASE, else
// target/release/tpsmeter.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { REPO_ROOT, isolatedPage, loadAverage, log } from './common.mjs';

const rounds = Number(process.argv[2] ?? 3);
const model = process.env.TPSMETER_MODEL;
if (!model || !fs.existsSync(model)) {
  console.error('set TPSMETER_MODEL to SmolLM2-135M-Instruct.Q4_1.gguf (cargo xtask setup caches it)');
  process.exit(2);
}
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(REPO_ROOT, 'target');
const cli = process.env.TPSMETER_CLI_RELEASE ?? path.join(targetDir, 'release', 'tpsmeter');
const median = (v) => {
  const s = v.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
/** A prompt of about `n` tokens whose first word differs per `salt` (no KV prefix reuse). */
const prompt = (n, salt) => `${['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo', 'Foxtrot', 'Golf', 'Hotel'][salt % 8]} ${'the sea and the sky '.repeat(Math.ceil(n / 5))}`.split(' ').slice(0, n).join(' ');

function wllamaVersion() {
  try {
    return JSON.parse(fs.readFileSync(path.join(wllamaDir, '..', 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}

const loadStart = loadAverage();
log(`load average at start: ${loadStart}`);
const wllamaDir = path.join(REPO_ROOT, 'tests', 'browser', 'node_modules', '@wllama', 'wllama', 'esm');
const ctx = await isolatedPage({ webgpu: true, mounts: { '/models/': path.dirname(model), '/wllama/': wllamaDir } });
const promptSets = { p64: [0, 1, 2, 3, 4, 5, 6, 7].map((s) => prompt(64, s)), p512: [0, 1, 2, 3, 4, 5, 6, 7].map((s) => prompt(512, s)) };
ctx.cores = (await ctx.page.evaluate(() => navigator.hardwareConcurrency)) || 1;
let browser;
let cpu;
let wllama;
try {
  browser = await ctx.page.evaluate(
    async ({ url, rounds, prompts }) => {
      const { createEngine, listCachedModels, deleteCachedModel } = await import('/tpsmeter/dist/engine/index.js');
      for (const m of await listCachedModels()) await deleteCachedModel(m.name);
      const t0 = performance.now();
      // WebGPU even on SwiftShader, where `auto` would take the CPU backend.
      let engine = await createEngine({ model: url, backend: 'webgpu' });
      const coldMs = performance.now() - t0;
      await engine.dispose();
      const t1 = performance.now();
      engine = await createEngine({ model: url, backend: 'webgpu' });
      const warmMs = performance.now() - t1;
      const fromCache = engine.fromCache;
      const probe = await engine.probe();
      const runs = { p64: [], p512: [] };
      let salt = 0;
      for (let r = 0; r < rounds; r++) {
        for (const key of ['p64', 'p512']) {
          const res = await engine.completions.create({ prompt: prompts[key][salt++ % prompts[key].length], max_tokens: 32, temperature: 0, ignore_eos: true });
          runs[key].push(res.timings);
        }
      }
      // A 1-token prompt: every step is one token, so the GPU counters divide evenly.
      const one = await engine.completions.create({ prompt: 'A', max_tokens: 32, temperature: 0, ignore_eos: true });
      const perToken = { ...one.timings.gpu, tokens: one.timings.tokens.length };
      const info = engine.info;
      await engine.dispose();
      return { coldMs, warmMs, fromCache, probe, runs, info, perToken, name: engine.name };
    },
    {
      url: `/models/${path.basename(model)}`,
      rounds,
      prompts: promptSets,
    },
  );
  // The CPU backend (WebAssembly SIMD), from the model cache the runs above filled: on one
  // thread (the single-threaded build) and on one per core (wasm threads: the page is
  // cross-origin isolated), each as the build the browser gets (relaxed SIMD where it has it)
  // and as the plain SIMD build, alternated.
  cpu = [];
  for (const threads of [...new Set([1, ctx.cores])]) {
    for (const relaxedSimd of [true, false]) {
      cpu.push(
        await ctx.page.evaluate(
          async ({ url, rounds, prompts, threads, relaxedSimd }) => {
            const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
            const t0 = performance.now();
            const engine = await createEngine({ model: url, backend: 'cpu', threads, relaxedSimd });
            const loadMs = performance.now() - t0;
            const runs = { p64: [], p512: [] };
            let salt = 3;
            for (let r = 0; r < rounds; r++) {
              for (const key of ['p64', 'p512']) {
                const res = await engine.completions.create({ prompt: prompts[key][salt++ % prompts[key].length], max_tokens: 32, temperature: 0, ignore_eos: true });
                runs[key].push(res.timings);
              }
            }
            const info = engine.info;
            await engine.dispose();
            return { loadMs, runs, info };
          },
          { url: `/models/${path.basename(model)}`, rounds, prompts: promptSets, threads, relaxedSimd },
        ),
      );
    }
  }
  wllama = [];
  if (fs.existsSync(wllamaDir)) {
    for (const threads of [1, undefined, ctx.cores]) {
      wllama.push(
        await ctx.page.evaluate(
          async ({ url, rounds, prompts, threads }) => {
            const { Wllama } = await import('/wllama/index.js');
            const lines = [];
            const keep = (...a) => lines.push(a.join(' '));
            const w = new Wllama({ default: '/wllama/wasm/wllama.wasm' }, { logger: { debug: keep, log: keep, warn: keep, error: keep } });
            const t0 = performance.now();
            await w.loadModelFromUrl(url, { n_ctx: 1024, useCache: false, ...(threads ? { n_threads: threads } : {}) });
            const loadMs = performance.now() - t0;
            const runs = { p64: [], p512: [] };
            let salt = 0;
            for (let r = 0; r < rounds; r++) {
              for (const key of ['p64', 'p512']) {
                const start = performance.now();
                const res = await w.createCompletion({ prompt: prompts[key][salt++ % prompts[key].length], max_tokens: 32, temperature: 0, ignore_eos: true });
                const wall = performance.now() - start;
                const t = res.timings;
                // llama.cpp's own figures (as llama-server reports them), like our engine's timings:
                // the first token is sampled from the prompt's logits, so TTFT is prompt_ms.
                runs[key].push({
                  ttft_ms: t.prompt_ms,
                  prefill_tokens_per_second: t.prompt_per_second,
                  decode_tokens_per_second: t.predicted_per_second,
                  prompt_tokens_evaluated: t.prompt_n,
                  wall_ms: wall,
                });
              }
            }
            await w.exit();
            const threadLine = lines.find((l) => l.includes('Multithread enabled')) ?? '';
            const buffer = lines.find((l) => /model buffer size/.test(l)) ?? '';
            return { loadMs, runs, threads: threads ?? 'default', threadLine, buffer: buffer.replace(/^.*load_tensors:\s*/, '') };
          },
          { url: `/models/${path.basename(model)}`, rounds, prompts: promptSets, threads },
        ),
      );
    }
  }
} finally {
  await ctx.close();
}

const figures = (runs) => ({
  ttft: median(runs.map((t) => t.ttft_ms)),
  prefill: median(runs.map((t) => t.prefill_tokens_per_second)),
  decode: median(runs.map((t) => t.decode_tokens_per_second)),
  promptTokens: median(runs.map((t) => t.prompt_tokens_evaluated)),
  // Median CPU ms per decoded token from the step's start until submit returned.
  encode: median(runs.map((t) => t.encode_ms ?? t.perTokenCost?.encodeMs)),
});
const b64 = figures(browser.runs.p64);
const b512 = figures(browser.runs.p512);

// The native engine, same prompts, same generation length: on the machine's Vulkan adapter
// (lavapipe here), and on the browser's own adapter where its Vulkan driver can be loaded
// natively: Chromium ships SwiftShader as a Vulkan ICD, so the same library (same JIT, same
// threads) runs our kernels through wgpu, and browser / native isolates WebGPU's own cost.
const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
function nativeRuns(env) {
  const runs = { p64: [], p512: [] };
  let salt = 0;
  let adapter = '';
  for (let r = 0; r < rounds; r++) {
    for (const [key, n] of [['p64', 64], ['p512', 512]]) {
      // The GPU engine natively (`auto` would take the CPU backend on a software adapter).
      const out = spawnSync(cli, ['run', '--backend', 'gpu', '--model', model, '--prompt', prompt(n, salt++ % 8), '--max-tokens', '32', '--json'], { encoding: 'utf8', env: { ...process.env, ...env } });
      if (out.status !== 0) throw new Error(`tpsmeter run failed: ${out.stderr}`);
      const j = JSON.parse(out.stdout);
      const f = j.figures;
      adapter = j.adapter ?? adapter;
      runs[key].push({ ttft_ms: f.ttft_s * 1e3, prefill_tokens_per_second: f.prefill_tps, decode_tokens_per_second: f.decode_tps, prompt_tokens_evaluated: f.prompt_tokens, encode_ms: j.per_token_cost?.encode_ms });
    }
  }
  return { runs, adapter };
}
const nativeAvailable = fs.existsSync(cli);
const native = nativeAvailable ? nativeRuns({}).runs : { p64: [], p512: [] };
const sameAdapter = nativeAvailable && fs.existsSync(SWIFTSHADER_ICD) && /swiftshader/i.test(browser.info.adapter) ? nativeRuns({ VK_ICD_FILENAMES: SWIFTSHADER_ICD }) : undefined;
const n64 = figures(native.p64);
const n512 = figures(native.p512);

const f1 = (v) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
const f2 = (v) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');
console.log(`model ${browser.name}; ${rounds} rounds; load average ${loadStart} at start, ${loadAverage()} at end (2 cores)`);
console.log(`browser: Chromium, adapter ${browser.info.adapter} (${browser.info.profile} kernels, shader-f16 ${browser.info.shaderF16})`);
console.log(`  load, cold (download + upload + pipelines)  ${f1(browser.coldMs)} ms`);
console.log(`  load, warm (model cache: ${browser.fromCache})          ${f1(browser.warmMs)} ms`);
const g = browser.perToken;
console.log(
  `  per generated token (1-token prompt)       ${f2(g.submits / g.tokens)} submits, ${f2(g.readback_bytes / g.tokens)} bytes read back, ${f1(g.dispatches / g.tokens)} dispatches`,
);
// The engine's own counters per decoded token (timings.perTokenCost), medians over the
// context-64 runs: what sets decode speed on a real GPU (docs/performance.md).
const costs = browser.runs.p64.map((t) => t.perTokenCost).filter(Boolean);
if (costs.length) {
  const m = (k) => median(costs.map((c) => c[k]));
  console.log(
    `  per decoded token (engine counters, @64)   ${f1(m('dispatches'))} dispatches, ${f1(m('passes'))} passes, ${f1(m('submits'))} submits, ${f1(m('pipelineChanges'))} pipeline / ${f1(m('bindGroupChanges'))} bind-group changes, ${f1(m('bytesWritten'))} B written, ${f1(m('bytesRead'))} B read; encode+submit median ${f2(m('encodeMs'))} ms`,
  );
}
console.log(`  weights read per token                     ${f1(browser.info.weightBytesPerToken / 1e6)} MB`);
const ceiling = (browser.probe.read_gb_per_s * 1e9) / browser.info.weightBytesPerToken;
console.log(
  `  probe: ${f2(browser.probe.read_gb_per_s)} GB/s (${browser.probe.read_pattern}), ${f1(browser.probe.dispatch_us)} µs/dispatch, ${f2(browser.probe.submit_readback_ms)} ms submit+readback; ceiling ${f1(ceiling)} tok/s`,
);
console.log('');
console.log('                      browser    native   browser/native');
const row = (label, b, n) => console.log(`  ${label.padEnd(20)}${f2(b).padStart(8)}  ${f2(n).padStart(8)}   ${f2(b / n).padStart(8)}`);
row(`TTFT ms (${b64.promptTokens} tok)`, b64.ttft, n64.ttft);
row('prefill tok/s @64', b64.prefill, n64.prefill);
row('decode tok/s @64', b64.decode, n64.decode);
row('decode tok/s @512', b512.decode, n512.decode);
row('encode ms/token @64', b64.encode, n64.encode);
console.log(`  decode @64 as a share of the probed ceiling: ${f1((100 * b64.decode) / ceiling)} %`);
if (sameAdapter) {
  const s64 = figures(sameAdapter.runs.p64);
  const s512 = figures(sameAdapter.runs.p512);
  console.log(`\nsame adapter: the browser against our native engine on SwiftShader (Chromium's Vulkan ICD${sameAdapter.adapter ? `: ${sameAdapter.adapter}` : ''})`);
  console.log('                      browser    native   browser/native');
  row(`TTFT ms (${b64.promptTokens} tok)`, b64.ttft, s64.ttft);
  row('prefill tok/s @64', b64.prefill, s64.prefill);
  row('decode tok/s @64', b64.decode, s64.decode);
  row('decode tok/s @512', b512.decode, s512.decode);
}
if (!nativeAvailable) console.log(`  (native: no ${cli}; build it with cargo build --release -p tpsmeter-cli)`);

for (const run of cpu) {
  const c64 = figures(run.runs.p64);
  const c512 = figures(run.runs.p512);
  console.log(`\nour CPU backend in the browser: ${run.info.threads} thread(s), ${run.info.simd}; load from the model cache ${f1(run.loadMs)} ms; resident ${f1(run.info.residentBytes / 1e6)} MB${run.info.threadsWhy ? ` (${run.info.threadsWhy})` : ''}`);
  console.log('                      CPU       WebGPU   CPU/WebGPU');
  row(`TTFT ms (${c64.promptTokens} tok)`, c64.ttft, b64.ttft);
  row('prefill tok/s @64', c64.prefill, b64.prefill);
  row('decode tok/s @64', c64.decode, b64.decode);
  row('decode tok/s @512', c512.decode, b512.decode);
}
// The relaxed-SIMD build against the plain one, at each thread count, where both ran.
for (const relaxed of cpu.filter((run) => run.info.simd.includes('relaxed'))) {
  const plain = cpu.find((run) => run.info.threads === relaxed.info.threads && !run.info.simd.includes('relaxed'));
  if (!plain) continue;
  const [r64, p64] = [figures(relaxed.runs.p64), figures(plain.runs.p64)];
  const [r512, p512] = [figures(relaxed.runs.p512), figures(plain.runs.p512)];
  console.log(`
our CPU backend, ${relaxed.info.threads} thread(s): relaxed SIMD against plain SIMD`);
  console.log('                      relaxed    plain    relaxed/plain');
  row(`TTFT ms (${r64.promptTokens} tok)`, r64.ttft, p64.ttft);
  row('prefill tok/s @64', r64.prefill, p64.prefill);
  row('decode tok/s @64', r64.decode, p64.decode);
  row('decode tok/s @512', r512.decode, p512.decode);
}

if (wllama.length === 0) console.log(`\nwllama: not installed (npm ci in tests/browser installs @wllama/wllama)`);
for (const wl of wllama) {
  const w64 = figures(wl.runs.p64);
  const w512 = figures(wl.runs.p512);
  console.log(`\nwllama ${wllamaVersion()} (llama.cpp in wasm), threads ${wl.threads}: ${wl.threadLine.trim()}; ${wl.buffer.trim()}`);
  console.log(`  load (download + init, no cache)           ${f1(wl.loadMs)} ms`);
  console.log('                      ours       wllama   ours/wllama');
  row(`TTFT ms (${b64.promptTokens}/${w64.promptTokens} tok)`, b64.ttft, w64.ttft);
  row('prefill tok/s @64', b64.prefill, w64.prefill);
  row('decode tok/s @64', b64.decode, w64.decode);
  row('decode tok/s @512', b512.decode, w512.decode);
  const winner = b64.decode >= w64.decode ? 'ours' : 'wllama';
  console.log(`  decode @64: ${winner} wins by ${f2(Math.max(b64.decode / w64.decode, w64.decode / b64.decode))}x`);
  // Our CPU backend on as many threads (wllama's default: against ours on one per core).
  const threads = typeof wl.threads === 'number' ? wl.threads : ctx.cores;
  // The build this browser gets by default (relaxed SIMD where it validates).
  const ours = cpu.find((run) => run.info.threads === threads && run.info.simd.includes('relaxed')) ?? cpu.find((run) => run.info.threads === threads);
  if (!ours) continue;
  const c64 = figures(ours.runs.p64);
  const c512 = figures(ours.runs.p512);
  console.log(`                      our CPU ${threads}t  wllama   CPU/wllama`);
  row(`TTFT ms (${c64.promptTokens}/${w64.promptTokens} tok)`, c64.ttft, w64.ttft);
  row('prefill tok/s @64', c64.prefill, w64.prefill);
  row('decode tok/s @64', c64.decode, w64.decode);
  row('decode tok/s @512', c512.decode, w512.decode);
}

// The package the page ran (installed from the tarball or directory chosen above), not the
// repository's pkg/: an A/B against another build must report that build's sizes.
console.log(`\nsizes, gzip -9, bytes (${ctx.source}):`);
const pkgDir = ctx.pkgDir;
for (const f of [
  'wasm/tpsmeter_engine_bg.wasm',
  'wasm/tpsmeter_engine.js',
  'wasm/tpsmeter_engine_cpu_bg.wasm',
  'wasm/tpsmeter_engine_cpu.js',
  'wasm/tpsmeter_engine_cpu_mt_bg.wasm',
  'wasm/tpsmeter_engine_cpu_mt.js',
  'wasm/tpsmeter_engine_cpu_relaxed_bg.wasm',
  'wasm/tpsmeter_engine_cpu_mt_relaxed_bg.wasm',
  'dist/engine/index.js',
  'dist/engine/worker.js',
  'dist/engine/cache.js',
  'dist/raw-engine.js',
  'dist/raw-engine-cpu.js',
  'dist/raw-engine-cpu-mt.js',
]) {
  const file = path.join(pkgDir, f);
  if (!fs.existsSync(file)) continue;
  const buf = fs.readFileSync(file);
  console.log(`  ${String(zlib.gzipSync(buf, { level: 9 }).length).padStart(9)}  ${f}  (${buf.length} raw)`);
}
