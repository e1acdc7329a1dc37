// bench() from the browser against real servers running SmolLM2: llama.cpp's llama-server
// (it sends CORS headers by default) and our own `tpsmeter serve` (told to allow the page's
// origin with --allowed-origin).

import assert from 'node:assert/strict';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { benchInPage, errorClasses, fixture } from './support/fixture.mjs';
import { freePort, startServer } from './support/servers.mjs';

const MAX_TOKENS = 16;

/** Each server: its binary's variable, its arguments, its readiness path, the levels run. */
const SERVERS = [
  {
    name: 'llama-server (SmolLM2)',
    bin: 'TPSMETER_LLAMA_SERVER',
    args: (model, port) => ['-m', model, '--host', '127.0.0.1', '--port', String(port), '-c', '2048', '-np', '2'],
    ready: '/health',
    concurrency: [1, 2],
  },
  {
    name: 'tpsmeter serve (SmolLM2 on our engine)',
    bin: 'TPSMETER_CLI_BIN',
    // The page is on the test fixture's origin, which the server must be told to allow.
    args: (model, port, origin) => ['serve', '--model', model, '--port', String(port), '--allowed-origin', origin],
    ready: '/v1/models',
    // One GPU request at a time: the engine serves a queue.
    concurrency: [1],
    // It sends Timing-Allow-Origin, so this cross-origin page sees the requests' timings.
    timingAllowed: true,
  },
];

for (const s of SERVERS) {
  test(`bench() against ${s.name}`, async (t) => {
    const bin = asset(t, s.bin);
    const model = bin && asset(t, 'TPSMETER_MODEL');
    if (!model) return;
    const fx = await fixture(t, { emulator: false });
    if (!fx) return;
    t.after(() => fx.close());
    const port = await freePort();
    const server = await startServer(bin, s.args(model, port, fx.origin), port, s.ready);
    t.after(() => server.stop());
    const page = await fx.page();
    const requests = 2;
    const report = await benchInPage(page, {
      api: 'openai-chat',
      url: server.base,
      model: 'smollm2',
      concurrency: s.concurrency,
      requests,
      maxTokens: MAX_TOKENS,
      prompt: 'Write a sentence about the sea.',
    });
    const total = requests * s.concurrency.length;
    assert.deepEqual(
      errorClasses(report),
      Array(total).fill('ok'),
      JSON.stringify(report.requests.map((r) => r.error)),
    );
    if (s.timingAllowed) {
      const codes = (report.warnings ?? []).map((w) => w.code);
      assert.ok(!codes.includes('timing_opaque'), `warnings: ${codes}`);
    }
    for (const r of report.requests) {
      assert.ok(r.output_tokens > 0 && r.output_tokens <= MAX_TOKENS, `tokens: ${r.output_tokens}`);
      assert.ok(r.metrics.ttft_ms > 0);
    }
    await assertClean(page);
  });
}
