// The package as apps load it: unbundled from a plain <script type="module"> page (an
// import map names the package), bundled by Vite 7 (the wasm emitted as an asset), and
// under Vite's dev server with no configuration (which pre-bundles the package into
// node_modules/.vite/deps/, away from its wasm and its Worker), Vite 7 and 8 alike,
// bundled by webpack 5 (its Worker built as a chunk), and bundled by esbuild, which emits
// neither the wasm nor the Workers: the app serves the package's files and says where
// (setPackageBase, as pkg/README.md's esbuild section has it).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { fixture } from './support/fixture.mjs';
import { serveStatic } from './support/server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

const APP_JS = `
import { bench } from 'tpsmeter';
import { Meter } from 'tpsmeter/meter';

const url = new URLSearchParams(location.search).get('api');
window.__result = (async () => {
  const report = await bench({ api: 'openai-chat', url, model: 'emulator', concurrency: [1], requests: 2, maxTokens: 8 });
  const meter = new Meter({ api: 'openai-chat' });
  meter.start();
  const res = meter.wrap(await fetch(url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'emulator', stream: true, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
  }));
  await res.text();
  return { report, meter: await meter.report() };
})();
`;

// Under the dev server: the engine's Worker must start (its file sits beside the package's
// modules, which the dev server moved). A model URL that is not there: the Worker's own
// error about the download says it ran.
const DEV_ENGINE_JS = `
import { createEngine } from 'tpsmeter/engine';
window.__result = window.__result.then(async (r) => {
  const engine = await createEngine({ model: location.origin + '/no-such-model.gguf', cache: false }).then(
    () => ({ name: 'loaded' }),
    (e) => ({ name: e.name, message: e.message }),
  );
  return { ...r, engine };
});
`;

// In a build, where the model is served: the engine on the CPU, on two threads.
const ENGINE_JS = `
import { createEngine } from 'tpsmeter/engine';
window.__result = window.__result.then(async (r) => {
  const model = new URLSearchParams(location.search).get('model');
  const engine = await createEngine({ model: location.origin + model, cache: false, threads: 2 }).then(
    async (engine) => {
      const out = await engine.completions.create({ prompt: 'The capital of France is', max_tokens: 4, temperature: 0 });
      await engine.dispose();
      return { name: 'loaded', backend: engine.info.backend, threads: engine.info.threads, threadsWhy: engine.info.threadsWhy, text: out.choices[0].text };
    },
    (e) => ({ name: e.name, message: e.message }),
  );
  return { ...r, engine };
});
`;

// The errors only a running Worker gives: its wasm loaded, then it found no WebGPU adapter
// (a headless browser without the WebGPU flags) or fetched the missing model. A Worker that
// never started is a `WorkerError`.
const WORKER_RAN = ['NoAdapter', 'WebGpuUnavailable', 'DownloadError', 'InvalidModel'];

// The README's openai SDK recipe, against the emulator.
const OPENAI_JS = `
import OpenAI from 'openai';
import { Meter } from 'tpsmeter/meter';

const base = new URLSearchParams(location.search).get('api');
window.__result = (async () => {
  const reports = [];
  const meter = new Meter({ api: 'openai-chat', model: 'emulator', onReport: (r) => reports.push(r) });
  const client = new OpenAI({
    apiKey: 'unused',
    baseURL: base + '/v1',
    dangerouslyAllowBrowser: true,
    // Each request the SDK makes is its own metered stream, started right before it goes out.
    fetch: async (url, init) => meter.start().wrap(await fetch(url, init)),
  });
  const stream = await client.chat.completions.create({
    model: 'emulator',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  const deadline = performance.now() + 5000;
  while (reports.length < 1 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return { text, record: reports[0]?.record, reports: reports.length };
})();
`;

const APP_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>vite app</title></head>
<body><div id="out"></div><script type="module" src="./main.js"></script></body></html>
`;

/** The model ran on the CPU (no WebGPU here) on two threads, and answered. */
function assertEngineOnThreads(engine) {
  assert.equal(engine.name, 'loaded', JSON.stringify(engine));
  assert.equal(engine.backend, 'cpu');
  assert.equal(engine.threads, 2, JSON.stringify(engine));
  assert.ok(engine.text.length > 0);
}

function checkResult(result) {
  const { report, meter } = result;
  assert.equal(report.requests.length, 2);
  assert.ok(report.requests.every((r) => !r.error && r.output_tokens === 8), JSON.stringify(report.requests.map((r) => r.error)));
  // The bundler emitted bench()'s reader Worker and it started (no fallback to the page).
  assert.equal(report.environment.notes.stamp_thread, 'worker');
  assert.equal(meter.record.output_tokens, 8);
  assert.equal(meter.partial, false);
}

test('the package loads', async (t) => {
  const fx = await fixture(t, { emulator: { ttftMs: 5, itlMs: 2, tokens: 64 } });
  if (!fx) return;
  t.after(() => fx.close());

  await t.test('from a plain <script type="module"> page (an import map)', async () => {
    const page = await fx.page(`/module.html?api=${encodeURIComponent(fx.emulator.base)}`);
    checkResult(await page.evaluate(() => window.__result));
    await assertClean(page);
  });

  // Vite 7, and Vite 8, which `npm create vite` scaffolds now (its dependency optimizer is
  // Rolldown's, not esbuild's).
  for (const [label, mod] of [['Vite 7', 'vite'], ['Vite 8', 'vite8']]) {
    await t.test(`under ${label}'s dev server, unconfigured`, async (st) => {
      const project = fx.pkg.project;
      if (!project) {
        st.skip('needs the packed package installed into a project (TPSMETER_PKG_TARBALL)');
        return;
      }
      // The app as `npm create vite` lays it out: index.html at the root, beside
      // node_modules; the dependency cache where Vite puts it (node_modules/.vite), fresh.
      fs.writeFileSync(path.join(project, 'index.html'), APP_HTML);
      fs.writeFileSync(path.join(project, 'main.js'), APP_JS + DEV_ENGINE_JS);
      fs.rmSync(path.join(project, 'node_modules', '.vite'), { recursive: true, force: true });
      const { createServer, version } = await import(mod);
      assert.equal(version.split('.')[0], label.split(' ')[1], `${mod} is ${label}`);
      const server = await createServer({
        root: project,
        configFile: false,
        logLevel: 'error',
        server: { host: '127.0.0.1', port: 0, strictPort: false },
      });
      await server.listen();
      st.after(() => server.close());
      const origin = server.resolvedUrls.local[0].replace(/\/$/, '');
      const page = await fx.browser.newPage(`${origin}/index.html?api=${encodeURIComponent(fx.emulator.base)}`);
      const result = await page.evaluate(() => window.__result);
      checkResult(result);
      // The engine's Worker started and loaded its wasm (see WORKER_RAN).
      assert.ok(WORKER_RAN.includes(result.engine.name), JSON.stringify(result.engine));
      await assertClean(page);
    });

    await t.test(`from a ${label} build`, async () => {
      const { build } = await import(mod);
      let project = fx.pkg.project;
      if (!project) {
        project = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-vite-'));
        fs.mkdirSync(path.join(project, 'node_modules'));
        fs.symlinkSync(fx.pkg.dir, path.join(project, 'node_modules', 'tpsmeter'));
      }
      const app = path.join(project, `${mod}-app`);
      fs.mkdirSync(app, { recursive: true });
      fs.writeFileSync(path.join(app, 'index.html'), APP_HTML);
      // The newest Vite's build also runs the engine on CPU threads (its Worker and theirs).
      const model = mod === 'vite8' ? asset(t, 'TPSMETER_MODEL') : undefined;
      fs.writeFileSync(path.join(app, 'main.js'), APP_JS + (model ? ENGINE_JS : ''));
      const outDir = path.join(app, 'dist');
      await build({ root: app, configFile: false, logLevel: 'error', build: { outDir, emptyOutDir: true } });
      const assets = fs.readdirSync(path.join(outDir, 'assets'));
      assert.ok(assets.some((f) => f.endsWith('.wasm')), `the wasm is emitted: ${assets}`);
      const server = await serveStatic({ '/': outDir, ...(model ? { '/models/': path.dirname(model) } : {}) });
      t.after(() => server.close());
      const page = await fx.browser.newPage(`${server.origin}/index.html?api=${encodeURIComponent(fx.emulator.base)}${model ? `&model=/models/${path.basename(model)}` : ''}`);
      const result = await page.evaluate(() => window.__result);
      checkResult(result);
      if (model) assertEngineOnThreads(result.engine);
      await assertClean(page);
    });
  }

  // pkg/README.md's recipe: the official SDK's stream, metered through its `fetch` option.
  await t.test('the openai SDK, metered through its fetch option (Vite 8 build)', async (st) => {
    const project = fx.pkg.project;
    if (!project) {
      st.skip('needs the packed package installed into a project (TPSMETER_PKG_TARBALL)');
      return;
    }
    const sdk = path.join(project, 'node_modules', 'openai');
    if (!fs.existsSync(sdk)) fs.symlinkSync(path.join(HERE, 'node_modules', 'openai'), sdk);
    const { build } = await import('vite8');
    const app = path.join(project, 'openai-app');
    fs.mkdirSync(app, { recursive: true });
    fs.writeFileSync(path.join(app, 'index.html'), APP_HTML);
    fs.writeFileSync(path.join(app, 'main.js'), OPENAI_JS);
    const outDir = path.join(app, 'dist');
    await build({ root: app, configFile: false, logLevel: 'error', build: { outDir, emptyOutDir: true } });
    const server = await serveStatic({ '/': outDir });
    st.after(() => server.close());
    const page = await fx.browser.newPage(`${server.origin}/index.html?api=${encodeURIComponent(fx.emulator.base)}`);
    const { text, record, reports } = await page.evaluate(() => window.__result);
    assert.equal(reports, 1, 'one report for the one request');
    assert.ok(text.length > 0);
    assert.equal(record.error ?? null, null, JSON.stringify(record.error));
    assert.equal(record.output_tokens, 8);
    assert.ok(record.metrics.ttft_ms > 0, 'TTFT measured from the request');
    await assertClean(page);
  });

  await t.test('from an esbuild bundle, the package files served beside it (setPackageBase)', async (st) => {
    const project = fx.pkg.project;
    if (!project) {
      st.skip('needs the packed package installed into a project (TPSMETER_PKG_TARBALL)');
      return;
    }
    const esbuild = (await import('esbuild')).default;
    const app = path.join(project, 'esbuild-app');
    const outDir = path.join(app, 'public');
    fs.rmSync(app, { recursive: true, force: true });
    fs.mkdirSync(outDir, { recursive: true });
    // As the README says: the package's dist/ and wasm/ copied where the app serves them.
    for (const sub of ['dist', 'wasm']) fs.cpSync(path.join(fx.pkg.dir, sub), path.join(outDir, 'tpsmeter', sub), { recursive: true });
    const base = "import { setPackageBase } from 'tpsmeter';\nsetPackageBase('/tpsmeter/');\n";
    fs.writeFileSync(path.join(app, 'main.js'), base + APP_JS + DEV_ENGINE_JS);
    await esbuild.build({ entryPoints: [path.join(app, 'main.js')], bundle: true, format: 'esm', outdir: outDir, logLevel: 'silent', absWorkingDir: project });
    fs.writeFileSync(path.join(outDir, 'index.html'), APP_HTML);
    const server = await serveStatic({ '/': outDir });
    st.after(() => server.close());
    const page = await fx.browser.newPage(`${server.origin}/index.html?api=${encodeURIComponent(fx.emulator.base)}`);
    const result = await page.evaluate(() => window.__result);
    // The reader Worker (checkResult) and the engine's Worker (WORKER_RAN) started from the base.
    checkResult(result);
    assert.ok(WORKER_RAN.includes(result.engine.name), JSON.stringify(result.engine));
    await assertClean(page);
  });

  await t.test('from a webpack 5 build', async (st) => {
    const project = fx.pkg.project;
    if (!project) {
      st.skip('needs the packed package installed into a project (TPSMETER_PKG_TARBALL)');
      return;
    }
    // Without the model, only that the Worker ran (and the subtest says it skipped the rest).
    const model = asset(st, 'TPSMETER_MODEL');
    const webpack = (await import('webpack')).default;
    const app = path.join(project, 'webpack-app');
    fs.mkdirSync(app, { recursive: true });
    fs.writeFileSync(path.join(app, 'main.js'), APP_JS + (model ? ENGINE_JS : DEV_ENGINE_JS));
    const outDir = path.join(app, 'dist');
    fs.rmSync(outDir, { recursive: true, force: true });
    const stats = await new Promise((resolve, reject) => {
      webpack({
        mode: 'production',
        context: app,
        entry: './main.js',
        output: { path: outDir, filename: 'main.js' },
        performance: { hints: false },
      }).run((err, result) => (err ? reject(err) : resolve(result)));
    });
    assert.ok(!stats.hasErrors(), stats.toString('errors-only'));
    const files = fs.readdirSync(outDir);
    assert.ok(files.some((f) => f.endsWith('.wasm')), `the wasm is emitted: ${files}`);
    fs.writeFileSync(path.join(outDir, 'index.html'), APP_HTML.replace('type="module" src="./main.js"', 'src="./main.js"'));
    const server = await serveStatic({ '/': outDir, ...(model ? { '/models/': path.dirname(model) } : {}) });
    st.after(() => server.close());
    const page = await fx.browser.newPage(`${server.origin}/index.html?api=${encodeURIComponent(fx.emulator.base)}${model ? `&model=/models/${path.basename(model)}` : ''}`);
    const result = await page.evaluate(() => window.__result);
    checkResult(result);
    if (model) {
      // webpack makes the Worker a classic script: the pool's Workers must run it as one too.
      assertEngineOnThreads(result.engine);
    } else {
      // The Worker webpack built ran (see WORKER_RAN).
      assert.ok(WORKER_RAN.includes(result.engine.name), JSON.stringify(result.engine));
    }
    await assertClean(page);
  });
});
