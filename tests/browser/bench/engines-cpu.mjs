// The CPU backend's decode and prefill in each browser engine (Chromium, Firefox ESR,
// WebKitGTK: Debian's), beside wllama (npm `@wllama/wllama`: llama.cpp compiled to wasm,
// installed with the browser tests) on the same GGUF in the same browser and run:
//
//   cargo xtask pkg
//   TPSMETER_MODEL=... DISPLAY=:99 node tests/browser/bench/engines-cpu.mjs [rounds] [engines]
//
// For each engine: our engine on one thread and on one per core (`navigator.hardwareConcurrency`
// asked for; what it got, and why not more, is printed), then wllama on one thread and on
// as many. Each run: a 64-token prompt, 32 tokens generated (`ignore_eos`), greedy; medians of
// `rounds` (default 3). Prints decode and prefill tok/s, the thread scaling (N threads over
// one) and ours over wllama at the same threads. The model is served from this process (no
// cache), the page is cross-origin isolated. WebKit needs DISPLAY (an Xvfb).

import fs from 'node:fs';
import path from 'node:path';
import { benchModel, isolatedPage, loadAverage, log, median, REPO_ROOT } from './common.mjs';

const rounds = Number(process.argv[2] ?? 3);
const engines = (process.argv[3] ?? 'chromium,firefox,webkit').split(',');
const model = benchModel();
const wllamaDir = path.join(REPO_ROOT, 'tests', 'browser', 'node_modules', '@wllama', 'wllama', 'esm');
const url = `/models/${path.basename(model)}`;
/** A prompt of about `n` tokens whose first word differs per `salt` (no KV prefix reuse). */
const prompt = (n, salt) => `${['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo', 'Foxtrot', 'Golf', 'Hotel'][salt % 8]} ${'the sea and the sky '.repeat(Math.ceil(n / 5))}`.split(' ').slice(0, n).join(' ');
const prompts = Array.from({ length: 8 }, (_, s) => prompt(64, s));

/** In the page: our engine on `threads`, `rounds` completions; its info and timings. */
async function ours({ url, rounds, prompts, threads }) {
  const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
  const engine = await createEngine({ model: url, backend: 'cpu', threads, cache: false });
  const runs = [];
  for (let r = 0; r < rounds; r++) {
    const res = await engine.completions.create({ prompt: prompts[r % prompts.length], max_tokens: 32, temperature: 0, ignore_eos: true });
    runs.push({ decode: res.timings.decode_tokens_per_second, prefill: res.timings.prefill_tokens_per_second });
  }
  const info = engine.info;
  await engine.dispose();
  return { runs, threads: info.threads, simd: info.simd, why: info.threadsWhy ?? '' };
}

/** In the page: wllama on `threads`, the same completions (llama.cpp's own timings). */
async function theirs({ url, rounds, prompts, threads }) {
  const { Wllama } = await import('/wllama/index.js');
  const lines = [];
  const keep = (...a) => lines.push(a.join(' '));
  const w = new Wllama({ default: '/wllama/wasm/wllama.wasm' }, { logger: { debug: keep, log: keep, warn: keep, error: keep } });
  await w.loadModelFromUrl(url, { n_ctx: 1024, useCache: false, n_threads: threads });
  const runs = [];
  for (let r = 0; r < rounds; r++) {
    const res = await w.createCompletion({ prompt: prompts[(r + 3) % prompts.length], max_tokens: 32, temperature: 0, ignore_eos: true });
    runs.push({ decode: res.timings.predicted_per_second, prefill: res.timings.prompt_per_second });
  }
  const single = w.isMultithread?.() === false;
  await w.exit();
  return { runs, threads: single ? 1 : threads, why: lines.find((l) => /multithread/i.test(l)) ?? '' };
}

const fig = (r) => ({ decode: median(r.runs.map((x) => x.decode)), prefill: median(r.runs.map((x) => x.prefill)) });
const f1 = (v) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
const ratio = (a, b) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : 'n/a');

log(`load average at start: ${loadAverage()}`);
const results = [];
for (const engine of engines) {
  const ctx = await isolatedPage({ engine, mounts: { '/models/': path.dirname(model), '/wllama/': wllamaDir } });
  try {
    const cores = (await ctx.page.evaluate(() => navigator.hardwareConcurrency)) || 1;
    const ua = await ctx.page.evaluate(() => navigator.userAgent);
    const row = { engine, ua, cores, ours: [], wllama: [] };
    for (const threads of [1, cores]) {
      log(`  ${engine}: ours on ${threads} thread(s)`);
      row.ours.push({ asked: threads, ...(await ctx.page.evaluate(ours, { url, rounds, prompts, threads })) });
    }
    if (fs.existsSync(wllamaDir)) {
      for (const threads of [1, cores]) {
        log(`  ${engine}: wllama on ${threads} thread(s)`);
        try {
          row.wllama.push({ asked: threads, ...(await ctx.page.evaluate(theirs, { url, rounds, prompts, threads })) });
        } catch (e) {
          row.wllama.push({ asked: threads, failed: e.message.split('\n')[0] });
        }
      }
    }
    results.push(row);
  } finally {
    await ctx.close();
  }
}

console.log(`\nCPU backend, SmolLM2-135M Q4_1, 64-token prompt, 32 tokens decoded, medians of ${rounds}; load average at end ${loadAverage()}`);
console.log('engine     who     asked got  simd            decode tok/s  prefill tok/s  decode vs 1 thread  ours/wllama decode');
for (const r of results) {
  const one = fig(r.ours[0]);
  for (const o of r.ours) {
    const f = fig(o);
    const w = r.wllama.find((x) => x.asked === o.asked && !x.failed);
    const wf = w ? fig(w) : undefined;
    console.log(
      `${r.engine.padEnd(10)} ours    ${String(o.asked).padStart(5)} ${String(o.threads).padStart(3)}  ${o.simd.padEnd(15)} ${f1(f.decode).padStart(12)} ${f1(f.prefill).padStart(14)} ${ratio(f.decode, one.decode).padStart(19)} ${(wf ? ratio(f.decode, wf.decode) : 'n/a').padStart(19)}`,
    );
  }
  const w1 = r.wllama[0] && !r.wllama[0].failed ? fig(r.wllama[0]) : undefined;
  for (const w of r.wllama) {
    if (w.failed) {
      console.log(`${r.engine.padEnd(10)} wllama  ${String(w.asked).padStart(5)}   -  failed: ${w.failed}`);
      continue;
    }
    const f = fig(w);
    console.log(`${r.engine.padEnd(10)} wllama  ${String(w.asked).padStart(5)} ${String(w.threads).padStart(3)}  ${'llama.cpp wasm'.padEnd(15)} ${f1(f.decode).padStart(12)} ${f1(f.prefill).padStart(14)} ${ratio(f.decode, w1?.decode).padStart(19)}`);
  }
  for (const o of r.ours) if (o.why) console.log(`${r.engine.padEnd(10)} ours on ${o.asked} asked: ${o.why}`);
  console.log(`${r.engine.padEnd(10)} ${r.ua} (${r.cores} cores reported)`);
}
