// bench() from the browser against real servers running SmolLM2: llama.cpp's llama-server
// (it sends CORS headers by default) and our own `tpsmeter serve`.

import assert from 'node:assert/strict';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { benchInPage, errorClasses, fixture } from './support/fixture.mjs';
import { freePort, startServer } from './support/servers.mjs';

const MAX_TOKENS = 16;

function checkReport(report, requests) {
  assert.deepEqual(errorClasses(report), Array(requests).fill('ok'), JSON.stringify(report.requests.map((r) => r.error)));
  for (const r of report.requests) {
    assert.ok(r.output_tokens > 0 && r.output_tokens <= MAX_TOKENS, `tokens: ${r.output_tokens}`);
    assert.ok(r.metrics.ttft_ms > 0);
  }
}

test('bench() against llama-server (SmolLM2)', async (t) => {
  const bin = asset(t, 'TPSMETER_LLAMA_SERVER');
  const model = bin && asset(t, 'TPSMETER_MODEL');
  if (!model) return;
  const fx = await fixture(t, { emulator: false });
  if (!fx) return;
  t.after(() => fx.close());
  const port = await freePort();
  const server = await startServer(
    bin,
    ['-m', model, '--host', '127.0.0.1', '--port', String(port), '-c', '2048', '-np', '2'],
    port,
    '/health',
  );
  t.after(() => server.stop());
  const page = await fx.page();
  const report = await benchInPage(page, {
    api: 'openai-chat',
    url: server.base,
    model: 'smollm2',
    concurrency: [1, 2],
    requests: 2,
    maxTokens: MAX_TOKENS,
    prompt: 'Write a sentence about the sea.',
  });
  checkReport(report, 4);
  await assertClean(page);
});

test('bench() against tpsmeter serve (SmolLM2 on our engine)', async (t) => {
  const bin = asset(t, 'TPSMETER_CLI_BIN');
  const model = bin && asset(t, 'TPSMETER_MODEL');
  if (!model) return;
  const fx = await fixture(t, { emulator: false });
  if (!fx) return;
  t.after(() => fx.close());
  const port = await freePort();
  const server = await startServer(bin, ['serve', '--model', model, '--port', String(port)], port, '/v1/models');
  t.after(() => server.stop());
  const page = await fx.page();
  const report = await benchInPage(page, {
    api: 'openai-chat',
    url: server.base,
    model: 'smollm2',
    concurrency: [1],
    requests: 2,
    maxTokens: MAX_TOKENS,
    prompt: 'Write a sentence about the sea.',
    render: undefined,
  });
  checkReport(report, 2);
  await assertClean(page);
});
