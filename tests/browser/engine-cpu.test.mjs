// The local engine on its CPU backend in headless Chromium (WebAssembly SIMD: what `auto`
// takes without WebGPU or on a software adapter): it says why it runs there, fetches only the
// CPU wasm, and gives the native CPU engine's tokens on each of its four builds (relaxed SIMD
// and plain, wasm threads and one thread). The WebGPU engine's tests are in engine.test.mjs.

import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { assertForced, FORCED_PROMPTS, FORCED_TOKENS, MAX_TOKENS, nativeTokens, PROMPTS, TIE_GAP } from './support/engine.mjs';
import { fixture } from './support/fixture.mjs';
import { freePort, startServer } from './support/servers.mjs';

// One seeded, sampled request (no top_k, min_p or penalty: the defaults decide them), sent
// to `tpsmeter serve` and to the browser engine: one request reader, so one text.
const SAMPLED = { prompt: 'The old lighthouse keeper', max_tokens: 24, temperature: 1, seed: 11 };
// The same with the browser engine's former defaults spelled out: another text, so the
// comparison of the first would see two sets of defaults.
const SAMPLED_OTHER = { ...SAMPLED, top_k: 0, min_p: 0 };

test('without WebGPU createEngine runs on the CPU: it says why, loads only the CPU wasm, and gives the native tokens', async (t) => {
  const model = asset(t, 'TPSMETER_MODEL');
  const cli = model && asset(t, 'TPSMETER_CLI_BIN');
  if (!cli) return;
  // The native CPU engine with its portable kernels: the browser's arithmetic step for step
  // (the AVX2 kernels sum in another order, which 8-bit activations can turn into logit
  // differences of a few tenths: a code rounds the other way and the next layer sees it).
  const portable = ['--backend', 'cpu', '--portable-kernels'];
  const expected = PROMPTS.map((p) => nativeTokens(cli, model, p, MAX_TOKENS, portable));
  const forcedNative = FORCED_PROMPTS.map((p) => nativeTokens(cli, model, p, FORCED_TOKENS, portable));
  // The server on the browser's arithmetic (portable kernels, as above), started while the
  // page loads.
  const servePort = await freePort();
  const serving = startServer(cli, ['serve', '--model', model, '--backend', 'cpu', '--portable-kernels', '--port', String(servePort)], servePort, '/health');
  // (Awaited below; a failed start fails the test there, not as an unhandled rejection.)
  serving.catch(() => {});
  t.after(async () => (await serving.catch(() => undefined))?.stop());
  const fx = await fixture(t, { emulator: false, webgpu: false, mounts: { '/models/': path.dirname(model) } });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();
  const out = await page.evaluate(
    async ({ url, prompts, maxTokens, forcedPrompts, forcedNative, expected, sampledRequests }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const failure = (p) => p.then(() => 'resolved', (e) => `${e.name}: ${e.message}`);
      // Asked for WebGPU where there is none: a named error, no fallback.
      const webgpu = await failure(createEngine({ model: url, backend: 'webgpu', cache: false }));
      const badBackend = await failure(createEngine({ model: url, backend: 'gpu' }));
      const progress = [];
      const engine = await createEngine({ model: url, threads: 2, onProgress: (p) => progress.push(p) });
      const runs = [];
      for (const prompt of prompts) {
        const r = await engine.completions.create({ prompt, max_tokens: maxTokens, temperature: 0 });
        runs.push({ tokens: r.timings.tokens, text: r.choices[0].text, timings: r.timings });
      }
      const chat = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'What is the capital of France?' }], max_tokens: 12, temperature: 0 });
      const sampled = [];
      for (const r of sampledRequests) {
        const c = await engine.completions.create(r);
        sampled.push({ text: c.choices[0].text, finish: c.choices[0].finish_reason, tokens: c.usage.completion_tokens });
      }
      const forced = [];
      for (const [i, prompt] of forcedPrompts.entries()) forced.push(await engine.teacherForced(prompt, forcedNative[i]));
      // The native greedy run fed back: where the two greedy runs part, how near a tie it is.
      for (const [i, prompt] of prompts.entries()) runs[i].forced = await engine.teacherForced(prompt, expected[i]);
      await engine.dispose();
      // Threads off: the single-threaded build, the same arithmetic.
      const single = await createEngine({ model: url, threads: 1 });
      const forcedSingle = [];
      for (const [i, prompt] of forcedPrompts.entries()) forcedSingle.push(await single.teacherForced(prompt, forcedNative[i]));
      await single.dispose();
      // The plain SIMD builds (what browsers without relaxed SIMD get) where the default is
      // the relaxed one, threaded and not: the same arithmetic too.
      const plainInfo = [];
      const forcedPlain = [];
      for (const threads of [2, 1]) {
        const plainSimd = await createEngine({ model: url, threads, relaxedSimd: false });
        for (const [i, prompt] of forcedPrompts.entries()) forcedPlain.push(await plainSimd.teacherForced(prompt, forcedNative[i]));
        await plainSimd.dispose();
        plainInfo.push(plainSimd.info);
      }
      const badRelaxed = await failure(createEngine({ model: url, relaxedSimd: 'no' }));
      return {
        webgpu,
        badBackend,
        badRelaxed,
        info: engine.info,
        fromCache: engine.fromCache,
        progress: progress.map((p) => (p.phase === 'start' ? `${p.step}${p.threads ? `:${p.threads}` : ''}` : p.phase)),
        runs,
        chat: chat.choices[0].message.content,
        sampled,
        forced,
        singleInfo: single.info,
        forcedSingle,
        plainInfo,
        forcedPlain,
      };
    },
    { url: `/models/${path.basename(model)}`, prompts: PROMPTS, maxTokens: MAX_TOKENS, forcedPrompts: FORCED_PROMPTS, forcedNative, expected, sampledRequests: [SAMPLED, SAMPLED_OTHER] },
  );
  // The same request to `tpsmeter serve`: the same text for the seed.
  await serving;
  const served = [];
  for (const r of [SAMPLED, SAMPLED_OTHER]) {
    const res = await fetch(`http://127.0.0.1:${servePort}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(r) });
    assert.equal(res.status, 200, await res.clone().text());
    const body = await res.json();
    served.push({ text: body.choices[0].text, finish: body.choices[0].finish_reason, tokens: body.usage.completion_tokens });
  }
  t.diagnostic(`sampled: ${JSON.stringify(out.sampled)} served: ${JSON.stringify(served)}`);
  assert.deepEqual(out.sampled[0], served[0], 'a seeded request samples the same text from serve and from the browser engine');
  // The defaults decide the text: the same seed without the top-k and min-p cuts samples
  // another, in the browser and from serve. (Those two are not compared with each other:
  // sampling the whole vocabulary walks its tail, where wasm's and glibc's `exp`, an ulp
  // apart, can move a draw across a boundary.)
  assert.notEqual(out.sampled[1].text, out.sampled[0].text, 'top_k and min_p change what a seed samples in the browser');
  assert.notEqual(served[1].text, served[0].text, 'top_k and min_p change what a seed samples from serve');
  t.diagnostic(JSON.stringify(out.info));
  assert.match(out.webgpu, /^(WebGpuUnavailable|NoAdapter): /);
  assert.match(out.badBackend, /^InvalidRequest: backend must be/);
  assert.equal(out.info.backend, 'cpu');
  assert.match(out.info.why, /WebGPU/, 'the reason names what was missing');
  // Chromium validates relaxed SIMD: its build by default, the plain one when asked.
  assert.equal(out.info.simd, 'simd128+relaxed');
  assert.equal(out.singleInfo.simd, 'simd128+relaxed');
  assert.deepEqual(out.plainInfo.map((i) => [i.simd, i.threads]), [['simd128', 2], ['simd128', 1]]);
  assert.match(out.badRelaxed, /^InvalidRequest: relaxedSimd must be/);
  // The page is cross-origin isolated: two threads on shared memory, and one when asked.
  assert.equal(out.info.threads, 2, JSON.stringify(out.info));
  // Each step before the first byte is named as it begins (a start that hangs says where).
  const firstByte = out.progress.indexOf('download');
  const steps = out.progress.slice(0, firstByte);
  assert.deepEqual(steps, out.fromCache ? ['wasm', 'threads:2', 'cache'] : ['wasm', 'threads:2', 'cache', 'connect', 'cache'], JSON.stringify(out.progress));
  assert.ok(out.progress.slice(firstByte).every((p) => p === 'download'), JSON.stringify(out.progress));
  assert.equal(out.info.threadsWhy, undefined);
  assert.equal(out.singleInfo.threads, 1);
  assert.ok(out.info.residentBytes > 90e6, `resident ${out.info.residentBytes}`);
  // Its wasm only: a page on the CPU downloads no WebGPU kernels, and the other way round.
  for (const build of ['cpu_mt_relaxed', 'cpu_relaxed', 'cpu_mt', 'cpu']) {
    assert.ok(fx.requests.some((r) => r.includes(`/wasm/tpsmeter_engine_${build}_bg.wasm`)), `the ${build} wasm was fetched`);
  }
  assert.ok(!fx.requests.some((r) => r.includes('/wasm/tpsmeter_engine_bg.wasm')), 'the WebGPU wasm was fetched as well');
  for (const [i, run] of out.runs.entries()) {
    t.diagnostic(
      `prompt ${i}: TTFT ${run.timings.ttft_ms.toFixed(0)} ms, prefill ${run.timings.prefill_tokens_per_second.toFixed(1)} tok/s, decode ${run.timings.decode_tokens_per_second.toFixed(2)} tok/s (${run.timings.cold ? 'cold' : 'warm'})`,
    );
    // The same greedy tokens as the native CPU engine, up to where both stand at a near-tie
    // (libm's exp and sin differ by an ulp between wasm and glibc), after which the texts
    // share nothing.
    const parted = run.tokens.findIndex((id, k) => id !== expected[i][k]);
    if (parted >= 0) {
      const at = run.forced[parted];
      t.diagnostic(`prompt ${i}: greedy parts from the native run at token ${parted} (${run.tokens[parted]} vs ${expected[i][parted]}), top-2 gap ${at.top2_gap}`);
      assert.equal(at.argmax, run.tokens[parted], 'the run and its forced replay agree');
      assert.ok(at.gap_to_forced < TIE_GAP, `prompt ${i} parts at token ${parted} by ${at.gap_to_forced}: no near-tie`);
    }
    assert.equal(run.tokens.length, expected[i].length);
    assert.equal(run.timings.backend, 'cpu');
    assert.equal(run.timings.cpu.passes, 1 + run.tokens.length - 1, 'one pass for the prompt, one per later token');
    assert.equal(run.timings.gpu.dispatches, 0);
  }
  // (SmolLM2 on the CPU, natively as here, answers this with Paris' landmarks rather than its
  // name: the 8-bit activations move the first token's near-tie; llama.cpp's CPU backend
  // quantizes them the same way.)
  assert.ok(out.chat.trim().length > 0, 'the chat answered');
  assertForced(t, out.forced, forcedNative);
  assertForced(t, out.forcedSingle, forcedNative);
  assertForced(t, out.forcedPlain.slice(0, forcedNative.length), forcedNative);
  assertForced(t, out.forcedPlain.slice(forcedNative.length), forcedNative);
  await assertClean(page);

  // A page that is not cross-origin isolated has no shared memory: one thread, and why.
  const plain = await fx.page('/plain/index.html');
  const plainInfo = await plain.evaluate(async (url) => {
    const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
    const engine = await createEngine({ model: url, threads: 2 });
    await engine.dispose();
    return engine.info;
  }, `/models/${path.basename(model)}`);
  assert.equal(plainInfo.threads, 1);
  assert.match(plainInfo.threadsWhy, /cross-origin isolated/);
  await assertClean(plain);

  // Where the relaxed-SIMD builds do not load (`cargo xtask demo` serves the page before it
  // has compiled them; a host that lacks the files): the plain builds, threaded and not, the
  // same greedy tokens, and the reason.
  const missing = await fx.page();
  await missing.route(/tpsmeter_engine_cpu(_mt)?_relaxed_bg\.wasm/, (r) => r.fulfill({ status: 404, body: 'not built' }));
  const fallback = await missing.evaluate(
    async ({ url, prompt }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const infos = [];
      for (const threads of [2, 1]) {
        const engine = await createEngine({ model: url, threads });
        const r = await engine.completions.create({ prompt, max_tokens: 8, temperature: 0 });
        infos.push({ ...engine.info, tokens: r.timings.tokens });
        await engine.dispose();
      }
      return infos;
    },
    { url: `/models/${path.basename(model)}`, prompt: PROMPTS[0] },
  );
  assert.deepEqual(
    fallback.map((i) => [i.simd, i.threads]),
    [
      ['simd128', 2],
      ['simd128', 1],
    ],
  );
  for (const info of fallback) {
    assert.match(info.simdWhy, /^plain SIMD: the relaxed-SIMD build did not load \(.+\)$/, JSON.stringify(info));
    assert.deepEqual(info.tokens, out.runs[0].tokens.slice(0, 8));
  }
});
