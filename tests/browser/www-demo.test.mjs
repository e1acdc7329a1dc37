// The site's local-inference demo (www/demo.html) in Chromium on WebGPU (SwiftShader here):
// served by `tpsmeter serve --www`, it loads SmolLM2 from that server's URL, streams a chat
// and shows the meter; Stop ends an answer; every view passes axe-core at desktop and phone
// width, light and dark (screenshots saved). The demo on the CPU backend, in all three
// engines, is engines.test.mjs's.

import assert from 'node:assert/strict';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { assertNoConsoleErrors, cards, checkView, fillForm, runAndWait, servedSite } from './support/site.mjs';

function metric(page, name) {
  return page.locator(`[data-metric="${name}"]`).first().innerText();
}

async function numberOf(page, name) {
  const text = await metric(page, name);
  const v = Number.parseFloat(text);
  assert.ok(Number.isFinite(v), `${name} shows ${JSON.stringify(text)}`);
  return v;
}

test('the demo loads SmolLM2 from the server, streams a chat and meters it', async (t) => {
  const served = await servedSite(t, { webgpu: true });
  if (!served) return;
  const { server, browser } = served;
  const page = await browser.newPage(`${server.base}/demo.html`);
  await page.waitForSelector('body[data-ready=true]', { timeout: 60_000 });
  // Served by tpsmeter serve: its own model is offered first, from this origin.
  assert.equal(await page.getByLabel('Model', { exact: true }).inputValue(), 'same-origin');
  // SwiftShader is a software adapter, where Automatic would take the CPU backend.
  await page.getByLabel('Run on').selectOption('webgpu');
  // Every status line the load shows, to see its kernels compile.
  await page.evaluate(() => {
    const status = document.querySelector('#load-status');
    window.statuses = [];
    new MutationObserver(() => window.statuses.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
  });
  await page.getByRole('button', { name: 'Load model' }).click();
  await page.waitForFunction(() => /Loaded/.test(document.querySelector('#engine-info')?.textContent ?? ''), null, { timeout: 180_000 });
  assert.match(await page.locator('#engine-info').innerText(), /SmolLM2/i);
  const statuses = await page.evaluate(() => window.statuses);
  assert.ok(
    statuses.some((s) => /^Compiling GPU kernels: \d+ compiled · graph \d+\/8…$/.test(s)),
    `the load said it compiled kernels: ${statuses.filter((s) => /ompil/.test(s)).join(' | ')}`,
  );
  assert.match(await page.locator('#load-status').innerText(), /Done: .* \d+ GPU kernels compiled in [\d.]+ s\./);

  await page.getByText('Sampling').click();
  await page.getByLabel('Max tokens').fill('16');
  await page.getByLabel('Temperature').fill('0');
  await page.getByLabel('Message').fill('What is the capital of France?');
  await page.getByRole('button', { name: 'Send' }).click();
  // The engine's own figures appear when the answer is complete.
  await page.waitForFunction(() => Number.isFinite(Number.parseFloat(document.querySelector('[data-metric="engine-decode-tps"]')?.textContent ?? '')), null, { timeout: 180_000 });
  const answer = await page.locator('#messages .msg.assistant .text').last().innerText();
  assert.ok(answer.trim().length > 0, 'the answer streamed into the page');
  assert.match(answer, /Paris/, 'greedy SmolLM2 answers the capital');
  assert.ok((await numberOf(page, 'ttft-ms')) > 0);
  assert.ok((await numberOf(page, 'decode-tps')) > 0);
  assert.ok((await numberOf(page, 'tokens-per-frame')) >= 1, 'each painted frame showed at least one token');
  assert.ok((await numberOf(page, 'engine-decode-tps')) > 0);
  assert.ok((await numberOf(page, 'prefill-tps')) > 0);
  assert.ok((await numberOf(page, 'completion-tokens')) > 0);
  // The engine's cost per decoded token (its counters, shown in the stats panel).
  assert.ok((await numberOf(page, 'dispatches-per-token')) > 0);
  assert.equal(await numberOf(page, 'submits-per-token'), 1);
  assert.equal(await numberOf(page, 'bytes-read-per-token'), 4);
  assert.ok((await numberOf(page, 'encode-ms')) > 0);

  await t.test('Stop ends an answer within a token or so', async () => {
    await page.getByLabel('Max tokens').fill('400');
    await page.getByLabel('Message').fill('Write a long story about a lighthouse.');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForFunction(() => (document.querySelector('#messages .msg.assistant:last-child .text')?.textContent ?? '').length > 0, null, { timeout: 120_000 });
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.waitForFunction(() => /Stopped/.test(document.querySelector('#messages .msg.assistant:last-child .msg-note')?.textContent ?? ''), null, { timeout: 60_000 });
    const tokens = await numberOf(page, 'tokens');
    assert.ok(tokens < 400, `${tokens} tokens: the stop did not end the generation`);
  });

  await t.test('after Probe GPU an answer states decode as a share of the probed ceiling', async () => {
    await page.getByRole('button', { name: 'Probe GPU' }).click();
    await page.waitForFunction(() => Number.parseFloat(document.querySelector('[data-metric="read-gbps"]')?.textContent ?? '') > 0, null, { timeout: 120_000 });
    await page.getByLabel('Max tokens').fill('4');
    await page.getByLabel('Message').fill('Hi');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForFunction(() => Number.parseFloat(document.querySelector('[data-metric="ceiling-share"]')?.textContent ?? '') > 0, null, { timeout: 120_000 });
    const share = await numberOf(page, 'ceiling-share');
    assert.ok(share > 0 && share <= 100, `${share} %`);
  });

  await t.test('the cache manager lists the kept model with its size and deletes it', async () => {
    const row = page.locator('.cache-table tbody tr', { hasText: 'SmolLM2-135M-Instruct' });
    await row.first().waitFor();
    assert.match(await row.first().innerText(), /98\.4/, 'its size in MB');
    const name = (await row.first().getByRole('button').getAttribute('aria-label')).replace(/^Delete /, '');
    await row.first().getByRole('button', { name: `Delete ${name}` }).click();
    await page.waitForFunction((name) => ![...document.querySelectorAll('.cache-table tbody tr')].some((r) => r.textContent.includes(name)), name);
    // The list is re-read from storage after a delete (listCachedModels), so the row's
    // absence is the model's.
  });

  await t.test('the demo with a model loaded and a chat: accessible, responsive, light and dark', async () => {
    assert.deepEqual(await checkView(page, 'demo-chat'), []);
  });
  assertNoConsoleErrors(page);
  await assertClean(page);
});

test("the benchmark page measures this browser's GPU and compares it with the server", async (t) => {
  const served = await servedSite(t, { webgpu: true });
  if (!served) return;
  const { server, browser } = served;
  const page = await browser.newPage(`${server.base}/?preset=local`);
  await page.waitForSelector('body[data-ready=true]', { timeout: 60_000 });
  // Served by tpsmeter serve, the local engine loads that server's copy of the model.
  assert.match(await page.getByLabel('GGUF URL').inputValue(), /\/models\/SmolLM2-135M-Instruct\.Q4_1\.gguf$/);
  await fillForm(page, { concurrency: '1', requests: 2, warmup: 0, maxTokens: 8 });
  await runAndWait(page, 300_000);
  const local = await cards(page);
  assert.ok(Number.parseFloat(local['output-tps'].value) > 0, JSON.stringify(local));
  assert.match(local.e2e.detail, /2 ok, 0 failed/);
  // SwiftShader is a software adapter: the engine runs on the CPU backend, and says so.
  assert.match(await page.locator('#results').innerText(), /adapter CPU \(WebAssembly\)/i);

  await page.getByLabel('Provider').selectOption('this-server');
  await runAndWait(page, 300_000);
  const boxes = page.locator('#history-table tbody input[type=checkbox]');
  await boxes.nth(0).check();
  await boxes.nth(1).check();
  await page.getByRole('button', { name: 'Compare selected' }).click();
  await page.waitForSelector('#compare-table');
  const titles = await page.locator('#compare-table thead th').allInnerTexts();
  assert.ok(titles.some((h) => /GPU/.test(h)) && titles.some((h) => /This server/.test(h)), titles.join(' | '));
  assert.equal(await page.locator('#compare-table tbody tr', { hasText: 'vs the first' }).count(), 1);
  assertNoConsoleErrors(page);
  await assertClean(page);
});
