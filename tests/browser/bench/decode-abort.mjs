// One package's engine in headless Chromium (WebGPU on SwiftShader here), quickly, for A/B
// runs of two builds: decode tok/s after a 64-token prompt (64 tokens generated), the
// engine's encode+submit ms per decoded token (`timings.perTokenCost.encodeMs`), and how long
// an abort takes to end a generation that is still prefilling a long prompt (the abort is
// sent `after_ms` (1500) into a prompt of `prompt_words` (400) words, about as many tokens: the time from `abort()` to the stream's end),
// beside the time that prompt takes to its first token unaborted (so a chunk's time).
//
//   TPSMETER_PKG_TARBALL=a.tgz TPSMETER_MODEL=... node tests/browser/bench/decode-abort.mjs [rounds] [after_ms] [prompt_words]
//
// Alternate packages by running this once per package per round (the harness installs one
// package per process) and compare medians from the same session, with the load beside them.

import fs from 'node:fs';
import path from 'node:path';
import { isolatedPage, loadAverage, log } from './common.mjs';

const rounds = Number(process.argv[2] ?? 2);
const afterMs = Number(process.argv[3] ?? 1500);
const longWords = Number(process.argv[4] ?? 400);
const model = process.env.TPSMETER_MODEL;
if (!model || !fs.existsSync(model)) {
  console.error('set TPSMETER_MODEL to SmolLM2-135M-Instruct.Q4_1.gguf (cargo xtask setup caches it)');
  process.exit(2);
}
const median = (v) => {
  const s = v.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

const loadStart = loadAverage();
const ctx = await isolatedPage({ webgpu: true, mounts: { '/models/': path.dirname(model) } });
let out;
try {
  out = await ctx.page.evaluate(
    async ({ url, rounds, afterMs, longWords }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const engine = await createEngine({ model: url });
      const words = 'the sea and the sky '.repeat(Math.ceil(longWords / 5)).split(' ').slice(0, longWords);
      const decode = [];
      const encode = [];
      const abort = [];
      for (let r = 0; r < rounds; r++) {
        // A new first word each time: no cached prefix.
        const short = `Round ${r} ${words.slice(0, 60).join(' ')}`;
        const res = await engine.completions.create({ prompt: short, max_tokens: 64, temperature: 0, ignore_eos: true });
        decode.push(res.timings.decode_tokens_per_second);
        encode.push(res.timings.perTokenCost?.encodeMs ?? NaN);

        const stop = new AbortController();
        const stream = await engine.completions.create({
          prompt: `Turn ${r} ${words.join(' ')}`,
          max_tokens: 16,
          temperature: 0,
          stream: true,
          signal: stop.signal,
        });
        let abortedAt = 0;
        let firstChunkAt = 0;
        const started = performance.now();
        const timer = setTimeout(() => {
          abortedAt = performance.now();
          stop.abort();
        }, afterMs);
        let finish = null;
        for await (const c of stream) {
          firstChunkAt ||= performance.now();
          finish = c.choices?.[0]?.finish_reason ?? finish;
        }
        const ended = performance.now();
        clearTimeout(timer);
        abort.push({
          stopMs: abortedAt ? ended - abortedAt : NaN,
          firstChunkMs: firstChunkAt ? firstChunkAt - started : NaN,
          abortedBeforeFirstToken: abortedAt > 0 && (!firstChunkAt || firstChunkAt >= abortedAt),
          finish,
        });
      }
      // The same long prompt run to its first token: its prefill rate gives a chunk's time.
      const full = await engine.completions.create({ prompt: `Whole ${words.join(' ')}`, max_tokens: 1, temperature: 0 });
      await engine.dispose();
      return { decode, encode, abort, longPrompt: { tokens: full.usage.prompt_tokens, ttftMs: full.timings.ttft_ms, prefillTps: full.timings.prefill_tokens_per_second } };
    },
    { url: `/models/${path.basename(model)}`, rounds, afterMs, longWords },
  );
} finally {
  await ctx.close();
}
const stops = out.abort.map((a) => a.stopMs);
console.log(`package: ${ctx.source}`);
console.log(`load average: ${loadStart} -> ${loadAverage()}`);
console.log(`decode at context 64: median ${median(out.decode).toFixed(2)} tok/s (${out.decode.map((v) => v.toFixed(2)).join(', ')})`);
console.log(`encode+submit per token: median ${median(out.encode).toFixed(3)} ms (${out.encode.map((v) => v.toFixed(3)).join(', ')})`);
console.log(
  `abort ${afterMs} ms into a ${out.longPrompt.tokens}-token prompt: stream ended a median ${median(stops).toFixed(0)} ms later (${stops.map((v) => v.toFixed(0)).join(', ')} ms; finish ${out.abort.map((a) => a.finish).join(', ')}; before the first token: ${out.abort.map((a) => a.abortedBeforeFirstToken).join(', ')})`,
);
const lp = out.longPrompt;
console.log(`the same prompt unaborted: ${lp.tokens} tokens, TTFT ${lp.ttftMs.toFixed(0)} ms, prefill ${lp.prefillTps.toFixed(1)} tok/s: a 64-token chunk takes ~${((64 / lp.prefillTps) * 1000).toFixed(0)} ms`);
log(JSON.stringify(out));
