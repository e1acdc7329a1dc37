// The local engine (`tpsmeter/engine`) in headless Chromium on SwiftShader's WebGPU: SmolLM2
// downloaded from a local URL into the engine's Worker gives the native engine's greedy
// tokens (`tpsmeter run`, our engine on lavapipe), streams OpenAI-shaped chunks with usage
// and timings, stops within one token when aborted, and names each failure (a cut or foreign
// file, a missing URL, a cancelled download, no WebGPU) without breaking the engine. The CPU
// backend's tests are in engine-cpu.test.mjs.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { assertForced, FORCED_PROMPTS, FORCED_TOKENS, MAX_TOKENS, modelPage, nativeTokens, PROMPTS } from './support/engine.mjs';
import { fixture } from './support/fixture.mjs';

test('createEngine: SmolLM2 in a Worker on WebGPU gives the native greedy tokens', async (t) => {
  const model = asset(t, 'TPSMETER_MODEL');
  const cli = model && asset(t, 'TPSMETER_CLI_BIN');
  if (!cli) return;
  const expected = PROMPTS.map((p) => nativeTokens(cli, model, p));
  const forcedNative = FORCED_PROMPTS.map((p) => nativeTokens(cli, model, p, FORCED_TOKENS));
  const fx = await fixture(t, { emulator: false, webgpu: true, mounts: { '/models/': path.dirname(model) } });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();
  const out = await page.evaluate(
    async ({ url, prompts, maxTokens, forcedPrompts, forcedNative }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const progress = [];
      // SwiftShader is a software adapter, where `auto` takes the CPU backend.
      const engine = await createEngine({ model: url, backend: 'webgpu', onProgress: (p) => progress.push(p) });
      const runs = [];
      for (const prompt of prompts) {
        const chunks = [];
        const stream = await engine.completions.create({ prompt, max_tokens: maxTokens, temperature: 0, stream: true });
        for await (const c of stream) chunks.push(c);
        runs.push(chunks);
      }
      const chat = await engine.chat.completions.create({
        messages: [{ role: 'user', content: 'Say hello.' }],
        max_tokens: 8,
        temperature: 0,
      });
      const forced = [];
      for (const [i, prompt] of forcedPrompts.entries()) forced.push(await engine.teacherForced(prompt, forcedNative[i]));
      await engine.dispose();
      // A synthetic model (SmolLM2's shapes, random weights) built in the Worker, one decode
      // step at a time and with two in flight: the same ids.
      const synthetic = [];
      for (const inFlight of [1, 2]) {
        const e = await createEngine({ model: { synthetic: 'SmolLM2-135M:Q4_1', seed: 3 }, backend: 'webgpu', inFlight });
        const r = await e.completions.create({ prompt: 'synthetic', max_tokens: 12, temperature: 0, ignore_eos: true });
        synthetic.push({ name: e.name, info: e.info, tokens: r.timings.tokens, cost: r.timings.perTokenCost });
        await e.dispose();
      }
      const badSynthetic = await createEngine({ model: { synthetic: 'GPT-9' }, backend: 'webgpu' }).then(
        () => 'resolved',
        (e) => `${e.name}: ${e.message}`,
      );
      return { name: engine.name, info: engine.info, progress, runs, chat, forced, synthetic, badSynthetic };
    },
    { url: `/models/${path.basename(model)}`, prompts: PROMPTS, maxTokens: MAX_TOKENS, forcedPrompts: FORCED_PROMPTS, forcedNative },
  );
  t.diagnostic(`adapter ${out.info.adapter} (${out.info.profile}), f16 ${out.info.shaderF16}`);
  assert.equal(out.info.backend, 'webgpu');
  assert.equal(out.info.why, 'WebGPU was asked for');
  assert.ok(!fx.requests.some((r) => r.includes('/wasm/tpsmeter_engine_cpu')), 'a WebGPU engine fetched the CPU wasm');
  // WebGPU's start: its wasm, then the device, then the cache, before the first byte.
  const steps = out.progress.slice(0, out.progress.findIndex((p) => p.phase === 'download')).map((p) => p.step);
  assert.deepEqual(steps.slice(0, 3), ['wasm', 'device', 'cache'], JSON.stringify(steps));
  const downloads = out.progress.filter((p) => p.phase === 'download');
  const last = downloads.at(-1);
  assert.ok(last.total > 0 && last.loaded === last.total && last.percent === 100, JSON.stringify(last));
  // Then the kernels compile, graph by graph, before createEngine resolves.
  const compiling = out.progress.slice(out.progress.indexOf(last) + 1);
  assert.ok(compiling.length > 0 && compiling.every((p) => p.phase === 'compile'), JSON.stringify(compiling.slice(0, 3)));
  for (let i = 1; i < compiling.length; i++) {
    const [a, b] = [compiling[i - 1].compile, compiling[i].compile];
    assert.ok(a.graphsDone <= b.graphsDone && a.pipelines <= b.pipelines, JSON.stringify([a, b]));
  }
  const load = out.info.load;
  t.diagnostic(`load phases: ${JSON.stringify(load)}`);
  assert.deepEqual(compiling.at(-1).compile, { graphsDone: load.graphs, graphs: load.graphs, pipelines: load.pipelines });
  assert.equal(load.graphs, 8, 'the decode step and every prompt-chunk size, 64 down to 1');
  assert.ok(load.pipelines > 10 && load.shaderModules > 0 && load.shaderModules <= load.pipelines, JSON.stringify(load));
  assert.ok(load.downloadMs > 0 && load.uploadMs > 0 && load.uploadMs <= load.downloadMs, JSON.stringify(load));
  assert.ok(load.compileMs > 0 && load.primeMs > 0, JSON.stringify(load));
  for (const [i, chunks] of out.runs.entries()) {
    const final = chunks.at(-1);
    assert.ok(final.usage && final.timings, 'the last chunk carries usage and timings');
    assert.equal(final.timings.gpu.pipelines_compiled, 0, 'the load compiled every pipeline an answer runs');
    assert.deepEqual(final.timings.tokens, expected[i], `prompt ${JSON.stringify(PROMPTS[i])}`);
    assert.equal(final.usage.completion_tokens, expected[i].length);
    const text = chunks.map((c) => c.choices[0].text).join('');
    assert.ok(text.length > 0);
    assert.ok(final.timings.decode_tokens_per_second > 0 && final.timings.ttft_ms > 0);
    // The host's cost per decoded token, from the engine's counters: the decode graph's
    // dispatches in one pass and one submit, one 4-byte id read back, the step timed on
    // the Worker's clock.
    const c = final.timings.perTokenCost;
    assert.ok(c, 'timings carry perTokenCost');
    assert.equal(c.steps, expected[i].length - 1, 'every token after the first is a decode step');
    assert.equal(c.dispatches, out.info.dispatchesPerToken);
    assert.equal(c.passes, 1);
    assert.equal(c.submits, 1);
    assert.equal(c.bytesRead, 4);
    // The position pair, and the token id on the steps the Worker starts itself; a chained
    // step (out.info.inFlight of them in flight) takes its id from the sampler on the GPU.
    assert.ok(c.bytesWritten >= 8 && c.bytesWritten <= 12, JSON.stringify(c));
    assert.ok(c.inFlight >= 1 && c.inFlight <= out.info.inFlight, JSON.stringify(c));
    assert.ok(c.hostWaitMs >= 0, JSON.stringify(c));
    assert.equal(c.bindGroupChanges, c.dispatches);
    assert.ok(c.pipelineChanges >= 1 && c.pipelineChanges <= c.dispatches, JSON.stringify(c));
    assert.ok(c.encodeMs > 0 && c.encodeMs < 10_000, JSON.stringify(c));
    const p = final.timings.prefillCost;
    assert.ok(p && p.steps >= 1 && p.submits === 1 && p.dispatches > 0 && p.encodeMs > 0, JSON.stringify(p));
    t.diagnostic(
      `prompt ${i}: TTFT ${final.timings.ttft_ms.toFixed(0)} ms, prefill ${final.timings.prefill_tokens_per_second.toFixed(1)} tok/s, decode ${final.timings.decode_tokens_per_second.toFixed(2)} tok/s (${final.timings.cold ? 'cold' : 'warm'}); per token ${JSON.stringify(c)}`,
    );
  }
  assert.equal(out.chat.object, 'chat.completion');
  assert.ok(out.chat.choices[0].message.content.length > 0);
  assertForced(t, out.forced, forcedNative);
  assert.equal(out.info.inFlight, 2, 'SwiftShader runs apart from the Worker: two decode steps in flight by default');
  assert.equal(out.info.synthetic, false);
  const [one, two] = out.synthetic;
  assert.match(one.name, /^synthetic SmolLM2-135M:Q4_1/);
  assert.equal(one.info.synthetic, true);
  assert.deepEqual([one.info.inFlight, two.info.inFlight], [1, 2]);
  assert.equal(one.tokens.length, 12);
  assert.deepEqual(two.tokens, one.tokens, 'chained decode gives the ids one step at a time gives');
  assert.equal(one.cost.inFlight, 1);
  assert.ok(two.cost.inFlight > 1.5, JSON.stringify(two.cost));
  assert.match(out.badSynthetic, /^InvalidRequest: synthetic: no synthetic model "GPT-9"/);
  await assertClean(page);
});

test('createEngine: bad files, a cancelled download and an aborted generation give named errors and leave the engine usable', async (t) => {
  const model = asset(t, 'TPSMETER_MODEL');
  if (!model) return;
  const bad = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-bad-models-'));
  t.after(() => fs.rmSync(bad, { recursive: true, force: true }));
  const bytes = fs.readFileSync(model);
  // Cut inside the tensor data: the header parses, the file ends early.
  fs.writeFileSync(path.join(bad, 'truncated.gguf'), bytes.subarray(0, Math.floor(bytes.length * 0.6)));
  fs.writeFileSync(path.join(bad, 'not-a-model.gguf'), 'this is a text file, not GGUF\n'.repeat(200));
  const fx = await fixture(t, {
    emulator: false,
    webgpu: true,
    mounts: { '/models/': path.dirname(model), '/early/': path.dirname(model), '/bad/': bad },
  });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();
  const out = await page.evaluate(
    async ({ url }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const failure = async (p) => {
        try {
          await p;
          return 'resolved';
        } catch (e) {
          return `${e.name}: ${e.message}`;
        }
      };
      const errors = {
        truncated: await failure(createEngine({ model: '/bad/truncated.gguf' })),
        notGguf: await failure(createEngine({ model: '/bad/not-a-model.gguf' })),
        missing: await failure(createEngine({ model: '/bad/no-such-file.gguf' })),
      };
      // Cancel the download once it is under way.
      const abort = new AbortController();
      errors.cancelled = await failure(
        createEngine({ model: url, signal: abort.signal, onProgress: (p) => p.loaded > 0 && abort.abort() }),
      );
      // Cancel before the download starts (the Worker is still compiling the wasm and
      // opening the device): the load stops there, and the model is never requested.
      const early = new AbortController();
      const earlyLoad = createEngine({ model: url.replace('/models/', '/early/'), signal: early.signal });
      early.abort();
      errors.cancelledEarly = await failure(earlyLoad);
      // After all that, a good load works, and an abort stops a generation within one token.
      const engine = await createEngine({ model: url });
      const stop = new AbortController();
      const chunks = [];
      const stream = await engine.completions.create({
        prompt: 'Once upon a time',
        max_tokens: 200,
        temperature: 0,
        ignore_eos: true,
        stream: true,
        signal: stop.signal,
      });
      for await (const c of stream) {
        chunks.push(c);
        if (chunks.length === 3) stop.abort();
      }
      const final = chunks.at(-1);
      // The engine still serves the next request.
      const after = await engine.completions.create({ prompt: 'Hello', max_tokens: 4, temperature: 0 });
      const badRequest = await failure(engine.completions.create({ prompt: 'x', max_tokens: 0 }));
      await engine.dispose();
      return { errors, aborted: { tokens: final.usage.completion_tokens, finish: final.choices[0].finish_reason }, after: after.usage, badRequest };
    },
    { url: `/models/${path.basename(model)}` },
  );
  t.diagnostic(JSON.stringify(out));
  assert.match(out.errors.truncated, /^InvalidModel: /);
  assert.match(out.errors.notGguf, /^InvalidModel: not a GGUF file/);
  assert.match(out.errors.missing, /^DownloadError: .*404/);
  assert.match(out.errors.cancelled, /^AbortError: /);
  assert.match(out.errors.cancelledEarly, /^AbortError: /);
  assert.ok(!fx.requests.some((r) => r.startsWith('GET /early/')), 'the early-cancelled model was downloaded');
  assert.equal(out.aborted.finish, 'cancelled');
  // Aborted after the third streamed token: at most one more was generated.
  assert.ok(out.aborted.tokens >= 3 && out.aborted.tokens <= 4, `${out.aborted.tokens} tokens`);
  assert.equal(out.after.completion_tokens, 4);
  assert.match(out.badRequest, /^InvalidRequest: `max_tokens`/);
  await assertClean(page);
});

/** Listens on a free port of 127.0.0.1 with `handler`; resolves to { origin, close() }. */
async function listen(handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}

test('a model download that cannot happen says why: server down, no CORS, a cut connection, a web page', async (t) => {
  const fx = await fixture(t, { emulator: false, webgpu: true });
  if (!fx) return;
  t.after(() => fx.close());
  // A GGUF header that wants more: magic, version 3, one tensor, one metadata pair.
  const head = Buffer.alloc(24);
  head.write('GGUF', 0, 'latin1');
  head.writeUInt32LE(3, 4);
  head.writeBigUInt64LE(1n, 8);
  head.writeBigUInt64LE(1n, 16);
  const cors = await listen((req, res) => {
    res.setHeader('access-control-allow-origin', '*');
    if (req.url === '/page') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>app</title>');
      return;
    }
    // /cut: a million bytes promised, the header sent, then the connection dropped.
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '1000000' });
    res.write(head, () => setTimeout(() => res.socket?.destroy(), 50));
  });
  t.after(() => cors.close());
  const noCors = await listen((req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(head);
  });
  t.after(() => noCors.close());
  // A port nothing listens on.
  const gone = await listen(() => {});
  await gone.close();

  const loads = async (page, prefix, urls) =>
    page.evaluate(async ([prefix, urls]) => {
      const { createEngine } = await import(`${prefix}/tpsmeter/dist/engine/index.js`);
      const result = {};
      for (const [name, model] of Object.entries(urls)) {
        result[name] = await createEngine({ model, cache: false }).then(
          () => ({ name: 'resolved' }),
          (e) => ({ name: e.name, reason: e.reason, message: e.message }),
        );
      }
      return result;
    }, [prefix, urls]);
  const kinds = (out) => Object.fromEntries(Object.entries(out).map(([k, v]) => [k, `${v.name}/${v.reason}`]));
  const urls = { down: `${gone.origin}/m.gguf`, cors: `${noCors.origin}/m.gguf`, cut: `${cors.origin}/cut`, page: `${cors.origin}/page` };

  // A page that is not cross-origin isolated: a no-cors probe tells "down" from "no CORS".
  const plain = await fx.page('/plain/index.html');
  const out = await loads(plain, '/plain', urls);
  t.diagnostic(JSON.stringify(out));
  assert.deepEqual(kinds(out), {
    down: 'DownloadError/unreachable',
    cors: 'DownloadError/cors',
    cut: 'DownloadError/cut',
    page: 'DownloadError/web-page',
  });
  assert.match(out.down.message, /could not connect to http:\/\/127\.0\.0\.1:\d+/);
  assert.match(out.cors.message, /answered, but without CORS headers/);
  assert.match(out.cut.message, /broke after 24 of 1000000 bytes/);
  assert.match(out.page.message, /web page \(text\/html\), not a GGUF file/);
  await assertClean(plain);

  // An isolated page (COEP) cannot tell them apart, and says so rather than guess.
  const isolated = await fx.page();
  const both = await loads(isolated, '', { down: urls.down, cors: urls.cors });
  assert.deepEqual(kinds(both), { down: 'DownloadError/unreachable-or-cors', cors: 'DownloadError/unreachable-or-cors' });
  assert.match(both.cors.message, /cross-origin isolated/);
  await assertClean(isolated);
});

test('probeAdapter measures the WebGPU adapter, and a probed engine states decode against the roofline', async (t) => {
  const setup = await modelPage(t);
  if (!setup) return;
  const { model, page } = setup;
  const out = await page.evaluate(async (url) => {
    const { createEngine, probeAdapter } = await import('/tpsmeter/dist/engine/index.js');
    const standalone = await probeAdapter({ mib: 16 });
    const engine = await createEngine({ model: url, cache: false, backend: 'webgpu' });
    await engine.probe({ mib: 16 });
    const r = await engine.completions.create({ prompt: 'The sea is', max_tokens: 8, temperature: 0, ignore_eos: true });
    await engine.dispose();
    return { standalone, timings: r.timings, info: engine.info };
  }, `/models/${path.basename(model)}`);
  t.diagnostic(JSON.stringify(out.standalone));
  const p = out.standalone;
  for (const v of [p.read_gb_per_s, p.contiguous_gb_per_s, p.strided_gb_per_s, p.submit_readback_ms]) assert.ok(Number.isFinite(v) && v > 0, JSON.stringify(p));
  assert.ok(p.dispatch_us >= 0);
  assert.equal(p.read_bytes, 16 << 20);
  assert.ok(p.adapter.length > 0);
  const roof = out.timings.roofline;
  assert.ok(roof, 'timings carry the roofline after probe()');
  assert.ok(Math.abs(roof.ceiling_tokens_per_second - (roof.read_gb_per_s * 1e9) / out.info.weightBytesPerToken) < 1e-6 * roof.ceiling_tokens_per_second);
  assert.ok(Math.abs(roof.share - out.timings.decode_tokens_per_second / roof.ceiling_tokens_per_second) < 1e-9);
  t.diagnostic(`decode ${out.timings.decode_tokens_per_second.toFixed(2)} tok/s = ${(100 * roof.share).toFixed(1)} % of ${roof.ceiling_tokens_per_second.toFixed(1)} tok/s`);
  await assertClean(page);
});

test("bench({ api: 'local', engine }) measures the engine into the remote runs' report, paint included", async (t) => {
  const setup = await modelPage(t);
  if (!setup) return;
  const { model, page } = setup;
  const out = await page.evaluate(
    async ({ url }) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const engine = await createEngine({ model: url });
      const el = document.createElement('div');
      document.body.append(el);
      const records = [];
      const report = await bench({
        api: 'local',
        engine,
        concurrency: [1, 2],
        requests: 2,
        maxTokens: 6,
        ignoreEos: true,
        temperature: 0,
        prompt: 'The capital of France is',
        render: el,
        onRecord: (r) => records.push(r.id),
      });
      // A request aborted while it waits its turn leaves the line at once; the one running
      // is not disturbed.
      const stop = new AbortController();
      const first = engine.completions.create({ prompt: 'One', max_tokens: 3, temperature: 0, ignore_eos: true });
      const queued = engine.completions.create({ prompt: 'Two', max_tokens: 3, signal: stop.signal });
      stop.abort();
      let queuedError = 'resolved';
      try {
        await queued;
      } catch (e) {
        queuedError = `${e.name}: ${e.message}`;
      }
      const firstDone = await first;
      let missing = 'resolved';
      try {
        await bench({ api: 'local', requests: 1 });
      } catch (e) {
        missing = `${e.name}: ${e.message}`;
      }
      // Disposed with one generation running and one waiting: both settle (none hangs on
      // the stopped Worker), and the engine refuses new work.
      const outcome = (p) => p.then(() => 'resolved', (e) => e.name);
      const stream = await engine.completions.create({ prompt: 'Long', max_tokens: 500, ignore_eos: true, stream: true });
      const it = stream[Symbol.asyncIterator]();
      await it.next(); // generating now
      const rest = (async () => {
        for (let r = await it.next(); !r.done; r = await it.next());
      })();
      const waiting = engine.completions.create({ prompt: 'Wait', max_tokens: 3 });
      await engine.dispose();
      // The running one may end as cancelled or be cut off by the Worker's end: it settles.
      const afterDispose = [await outcome(rest), await outcome(waiting), await outcome(engine.completions.create({ prompt: 'x', max_tokens: 1 }))];
      return { report, records, shown: el.textContent.length, queuedError, firstTokens: firstDone.usage.completion_tokens, missing, name: engine.name, afterDispose };
    },
    { url: `/models/${path.basename(model)}` },
  );
  const r = out.report;
  assert.equal(r.config.api, 'local');
  assert.equal(r.config.model, out.name);
  assert.equal(r.environment.notes.engine_model, out.name);
  assert.ok(r.environment.notes.engine_adapter, 'the adapter is named');
  assert.equal(r.levels.length, 2);
  assert.equal(r.requests.length, 4);
  assert.equal(out.records.length, 4);
  for (const rec of r.requests) {
    assert.ok(!rec.error, JSON.stringify(rec.error));
    assert.equal(rec.output_tokens, 6, 'usage from the engine');
    assert.ok(rec.metrics.ttft_ms > 0 && rec.metrics.output_tps > 0, JSON.stringify(rec.metrics));
    assert.ok(rec.metrics.paint, `record ${rec.id} has paint metrics`);
    assert.equal(rec.metrics.paint.unpainted_chars, 0);
  }
  assert.ok(out.shown > 0, 'the text was rendered');
  // At concurrency 2 one request waits for the other's whole generation: its TTFT holds the
  // other's end-to-end time.
  const c2 = r.requests.filter((rec) => rec.level?.concurrency === 2);
  assert.equal(c2.length, 2);
  const [a, b] = c2.sort((x, y) => x.metrics.ttft_ms - y.metrics.ttft_ms);
  assert.ok(b.metrics.ttft_ms >= a.metrics.e2e_ms * 0.9, `queued TTFT ${b.metrics.ttft_ms} vs the other's e2e ${a.metrics.e2e_ms}`);
  assert.ok(r.warnings.some((w) => w.code === 'local_serial'), JSON.stringify(r.warnings));
  t.diagnostic(`local c=1 TTFT ${r.requests[0].metrics.ttft_ms.toFixed(0)} ms, output ${r.requests[0].metrics.output_tps.toFixed(2)} tok/s`);
  assert.match(out.queuedError, /^AbortError: /);
  assert.equal(out.firstTokens, 3);
  assert.match(out.missing, /^TypeError: .*engine/);
  assert.ok(['resolved', 'InvalidState'].includes(out.afterDispose[0]), `the running one settled: ${out.afterDispose[0]}`);
  assert.deepEqual(out.afterDispose.slice(1), ['InvalidState', 'InvalidState']);
  await assertClean(page);
});

test('while kernels compile: a cancel is an AbortError that keeps the downloaded copy, a lost device is DeviceLost', async (t) => {
  const setup = await modelPage(t);
  if (!setup) return;
  const { model, page } = setup;
  const url = `/models/${path.basename(model)}`;
  const cancel = await page.evaluate(async ({ url }) => {
    const { createEngine, listCachedModels } = await import('/tpsmeter/dist/engine/index.js');
    const abort = new AbortController();
    const phases = [];
    let outcome;
    try {
      const e = await createEngine({
        model: url,
        backend: 'webgpu',
        signal: abort.signal,
        onProgress: (p) => {
          phases.push(p.compile ? `compile ${p.compile.graphsDone}/${p.compile.graphs}` : p.phase);
          // Two graphs of eight in: the rest must not be made.
          if (p.compile && p.compile.graphsDone >= 2) abort.abort();
        },
      });
      outcome = `loaded (${e.info.load.graphs} graphs)`;
      await e.dispose();
    } catch (e) {
      outcome = `${e.name}: ${e.message}`;
    }
    const cached = (await listCachedModels()).map((m) => m.sourceUrl);
    // From the copy: it compiles in full and answers.
    const again = await createEngine({ model: url, backend: 'webgpu' });
    const r = await again.completions.create({ prompt: 'Hello', max_tokens: 3, temperature: 0 });
    const fromCache = again.fromCache;
    await again.dispose();
    return { outcome, phases: phases.filter((p) => p.startsWith('compile')), cached, fromCache, tokens: r.usage.completion_tokens };
  }, { url });
  t.diagnostic(JSON.stringify(cancel));
  assert.match(cancel.outcome, /^AbortError: /);
  assert.ok(!cancel.phases.includes('compile 8/8'), `the compilation stopped: ${cancel.phases.join(', ')}`);
  assert.ok(cancel.cached.some((u) => u.endsWith(url)), 'the downloaded bytes were kept');
  assert.equal(cancel.fromCache, true);
  assert.equal(cancel.tokens, 3);

  // The GPU process killed once the kernels begin to compile, as a driver reset would.
  await page.evaluate(async ({ url }) => {
    const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
    window.compiling = false;
    window.outcome = createEngine({
      model: url,
      backend: 'webgpu',
      onProgress: (p) => {
        if (p.phase === 'compile') window.compiling = true;
      },
    }).then(
      async (e) => {
        await e.dispose().catch(() => {});
        return 'loaded';
      },
      (e) => `${e.name}: ${e.message}`,
    );
  }, { url });
  await page.waitForFunction(() => window.compiling, null, { timeout: 300_000 });
  const browser = page.context().browser();
  const cdp = browser ? await browser.newBrowserCDPSession() : await page.context().newCDPSession(page);
  await cdp.send('Browser.crashGpuProcess');
  const lost = await page.evaluate(() => window.outcome);
  t.diagnostic(lost);
  assert.match(lost, /^DeviceLost: /);
});

test('a lost GPU device rejects the pending generation with DeviceLost, never a hang; a new engine works', async (t) => {
  const setup = await modelPage(t);
  if (!setup) return;
  const { model, page } = setup;
  const url = `/models/${path.basename(model)}`;
  await page.evaluate(async ({ url }) => {
    const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
    window.engine = await createEngine({ model: url, backend: 'webgpu' });
    window.tokens = 0;
    window.outcome = (async () => {
      try {
        const stream = await window.engine.completions.create({ prompt: 'Once', max_tokens: 3000, ignore_eos: true, temperature: 0, stream: true });
        for await (const _ of stream) window.tokens++;
        return 'completed';
      } catch (e) {
        return `${e.name}: ${e.message}`;
      }
    })();
  }, { url });
  await page.waitForFunction(() => window.tokens >= 2, null, { timeout: 300_000 });
  // A real device loss: Chromium's GPU process (where WebGPU runs) is killed, as a driver
  // crash or reset would; 3000 tokens leave even a fast GPU seconds of work to interrupt.
  const browser = page.context().browser();
  const cdp = browser ? await browser.newBrowserCDPSession() : await page.context().newCDPSession(page);
  await cdp.send('Browser.crashGpuProcess');
  const out = await page.evaluate(
    async ({ url }) => {
      const outcome = await window.outcome;
      const tokens = window.tokens;
      const failure = window.engine.failure ? `${window.engine.failure.name}` : 'none';
      let later = 'resolved';
      try {
        await window.engine.completions.create({ prompt: 'x', max_tokens: 2 });
      } catch (e) {
        later = `${e.name}: ${e.message}`;
      }
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const fresh = await createEngine({ model: url, backend: 'webgpu' });
      const again = await fresh.completions.create({ prompt: 'Hello', max_tokens: 4, temperature: 0 });
      const freshFailure = fresh.failure ? fresh.failure.name : 'none';
      await fresh.dispose();
      const disposedFailure = fresh.failure ? fresh.failure.name : 'none';
      return { outcome, tokens, later, failure, freshFailure, disposedFailure, again: again.usage.completion_tokens, fromCache: fresh.fromCache };
    },
    { url },
  );
  t.diagnostic(JSON.stringify(out));
  assert.match(out.outcome, /^DeviceLost: .*create the engine again/);
  assert.ok(out.tokens < 3000, 'the generation stopped');
  assert.match(out.later, /^DeviceLost: /, 'the lost engine keeps saying why');
  assert.equal(out.failure, 'DeviceLost', 'engine.failure says the engine cannot run');
  assert.equal(out.freshFailure, 'none');
  assert.equal(out.disposedFailure, 'InvalidState', 'a disposed engine cannot run either');
  assert.equal(out.again, 4, 'a new engine generates');
});
