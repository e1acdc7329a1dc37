// The package as apps load it: unbundled from a plain <script type="module"> page (an
// import map names the package), and bundled by Vite 7 (the wasm emitted as an asset).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { fixture } from './support/fixture.mjs';
import { serveStatic } from './support/server.mjs';

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

const APP_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>vite app</title></head>
<body><div id="out"></div><script type="module" src="./main.js"></script></body></html>
`;

function checkResult(result) {
  const { report, meter } = result;
  assert.equal(report.requests.length, 2);
  assert.ok(report.requests.every((r) => !r.error && r.output_tokens === 8), JSON.stringify(report.requests.map((r) => r.error)));
  assert.equal(meter.record.output_tokens, 8);
  assert.equal(meter.partial, false);
}

test('the package loads', async (t) => {
  const fx = await fixture(t, { emulator: { ttftMs: 5, itlMs: 2, tokens: 64 } });
  if (!fx) return;
  t.after(() => fx.close());

  await t.test('from a plain <script type="module"> page', async () => {
    const page = await fx.page(`/module.html?api=${encodeURIComponent(fx.emulator.base)}`);
    checkResult(await page.evaluate(() => window.__result));
    await assertClean(page);
  });

  await t.test('from a Vite 7 build', async () => {
    const { build } = await import('vite');
    let project = fx.pkg.project;
    if (!project) {
      project = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-vite-'));
      fs.mkdirSync(path.join(project, 'node_modules'));
      fs.symlinkSync(fx.pkg.dir, path.join(project, 'node_modules', 'tpsmeter'));
    }
    const app = path.join(project, 'vite-app');
    fs.mkdirSync(app, { recursive: true });
    fs.writeFileSync(path.join(app, 'index.html'), APP_HTML);
    fs.writeFileSync(path.join(app, 'main.js'), APP_JS);
    const outDir = path.join(app, 'dist');
    await build({ root: app, configFile: false, logLevel: 'error', build: { outDir, emptyOutDir: true } });
    const assets = fs.readdirSync(path.join(outDir, 'assets'));
    assert.ok(assets.some((f) => f.endsWith('.wasm')), `the wasm is emitted: ${assets}`);
    const server = await serveStatic({ '/': outDir });
    t.after(() => server.close());
    const page = await fx.browser.newPage(`${server.origin}/index.html?api=${encodeURIComponent(fx.emulator.base)}`);
    checkResult(await page.evaluate(() => window.__result));
    await assertClean(page);
  });
});
