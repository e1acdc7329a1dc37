// The local engine (`tpsmeter/engine`) in headless Chromium on SwiftShader's WebGPU: SmolLM2
// downloaded from a local URL into the engine's Worker gives the native engine's greedy
// tokens (`tpsmeter run`, our engine on lavapipe), streams OpenAI-shaped chunks with usage
// and timings, stops within one token when aborted, and names a bad file's error.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { asset } from './support/env.mjs';
import { fixture } from './support/fixture.mjs';

const PROMPTS = ['The capital of France is', 'def fibonacci(n):\n'];
const MAX_TOKENS = 12;

/** Greedy ids from the native engine (`tpsmeter run --json`). */
function nativeTokens(cli, model, prompt) {
  const r = spawnSync(cli, ['run', '--model', model, '--prompt', prompt, '--max-tokens', String(MAX_TOKENS), '--json'], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(r.status, 0, `tpsmeter run failed: ${r.stderr}`);
  return JSON.parse(r.stdout).tokens;
}

test('createEngine: SmolLM2 in a Worker on WebGPU gives the native greedy tokens', async (t) => {
  const model = asset(t, 'TPSMETER_MODEL');
  const cli = model && asset(t, 'TPSMETER_CLI_BIN');
  if (!cli) return;
  const expected = PROMPTS.map((p) => nativeTokens(cli, model, p));
  const fx = await fixture(t, { emulator: false, webgpu: true, mounts: { '/models/': path.dirname(model) } });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();
  const out = await page.evaluate(
    async ({ url, prompts, maxTokens }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const progress = [];
      const engine = await createEngine({ model: url, onProgress: (p) => progress.push(p) });
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
      await engine.dispose();
      return { name: engine.name, info: engine.info, progress, runs, chat };
    },
    { url: `/models/${path.basename(model)}`, prompts: PROMPTS, maxTokens: MAX_TOKENS },
  );
  t.diagnostic(`adapter ${out.info.adapter} (${out.info.profile}), f16 ${out.info.shaderF16}`);
  const last = out.progress.at(-1);
  assert.ok(last.total > 0 && last.loaded === last.total && last.percent === 100, JSON.stringify(last));
  for (const [i, chunks] of out.runs.entries()) {
    const final = chunks.at(-1);
    assert.ok(final.usage && final.timings, 'the last chunk carries usage and timings');
    assert.deepEqual(final.timings.tokens, expected[i], `prompt ${JSON.stringify(PROMPTS[i])}`);
    assert.equal(final.usage.completion_tokens, expected[i].length);
    const text = chunks.map((c) => c.choices[0].text).join('');
    assert.ok(text.length > 0);
    assert.ok(final.timings.decode_tokens_per_second > 0 && final.timings.ttft_ms > 0);
    t.diagnostic(
      `prompt ${i}: TTFT ${final.timings.ttft_ms.toFixed(0)} ms, prefill ${final.timings.prefill_tokens_per_second.toFixed(1)} tok/s, decode ${final.timings.decode_tokens_per_second.toFixed(2)} tok/s (${final.timings.cold ? 'cold' : 'warm'})`,
    );
  }
  assert.equal(out.chat.object, 'chat.completion');
  assert.ok(out.chat.choices[0].message.content.length > 0);
  await assertClean(page);
});
