// bench() against the emulator in every wire format: the same token counts the emulator
// sent, no errors, a report that validates against the one JSON Schema.

import assert from 'node:assert/strict';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { benchInPage, errorClasses, fixture } from './support/fixture.mjs';

const MAX_TOKENS = 12;
const REQUESTS = 3;

/** Each API and the URL the bench is given (a base URL; Vercel's route is used as is). */
const APIS = [
  ['openai-chat', ''],
  ['openai-completions', ''],
  ['openai-responses', ''],
  ['anthropic', ''],
  ['gemini', ''],
  ['ollama-chat', ''],
  ['ollama-generate', ''],
  ['vercel-ui', '/api/ui-chat'],
];

test('bench() measures every wire format from the browser', async (t) => {
  const fx = await fixture(t, { emulator: { ttftMs: 5, itlMs: 2, tokens: 64 } });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();

  for (const [api, path] of APIS) {
    await t.test(api, async () => {
      const report = await benchInPage(page, {
        api,
        url: fx.emulator.base + path,
        model: 'emulator',
        apiKey: 'sk-test-secret-key-0123456789',
        concurrency: [1, 2],
        requests: REQUESTS,
        maxTokens: MAX_TOKENS,
        prompt: 'Count to twelve.',
      });
      assert.equal(report.levels.length, 2);
      assert.deepEqual(errorClasses(report), Array(2 * REQUESTS).fill('ok'));
      for (const r of report.requests) {
        assert.equal(r.output_tokens, MAX_TOKENS, `${api}: tokens of request ${r.id}`);
        assert.ok(r.first_token_ms >= r.start_ms, 'first token after start');
        assert.ok(r.end_ms >= r.first_token_ms, 'end after first token');
      }
      for (const level of report.levels) assert.ok(level.summary, 'level summary');
      assert.equal(report.environment.os, 'browser');
      assert.equal(report.environment.arch, 'wasm32');
      assert.equal(report.environment.notes.cross_origin_isolated, 'true');
      assert.ok(Number(report.environment.notes.timer_resolution_ms) <= 0.1);
      assert.ok(!JSON.stringify(report).includes('sk-test-secret-key'), 'the API key is not in the report');
    });
  }
  await assertClean(page);
});
