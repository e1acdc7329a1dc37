// The local engine's test pages: a WebGPU page with the model served, and code run first in
// every Worker the page starts (to take a browser feature away, or make one fail); and what
// the engine tests compare with: the prompts, the native engine's greedy ids, and the
// teacher-forced check.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asset } from './env.mjs';
import { fixture } from './fixture.mjs';

/**
 * A WebGPU page of a fresh fixture with the model's folder served at `/models/` (and
 * `mounts`, more folders), closed after the test; undefined (the test skipped) without the
 * model or a browser.
 */
export async function modelPage(t, mounts = {}) {
  const model = asset(t, 'TPSMETER_MODEL');
  if (!model) return undefined;
  const fx = await fixture(t, { emulator: false, webgpu: true, mounts: { '/models/': path.dirname(model), ...mounts } });
  if (!fx) return undefined;
  t.after(() => fx.close());
  return { model, fx, page: await fx.page() };
}

/**
 * Runs `code` (script text) first thing in every Worker this page starts (each runs a module
 * that imports `code` before the real worker script), after setting the Worker's
 * `self.__param` to the page's `window.__param` at the time the Worker is made.
 */
export async function inWorkers(page, code) {
  await page.evaluate((code) => {
    const Original = window.Worker;
    window.Worker = class extends Original {
      constructor(url, options) {
        const real = new URL(url, location.href).href;
        const src = `self.__param = ${JSON.stringify(window.__param ?? null)};\n${code}`;
        const mod = `import ${JSON.stringify(`data:text/javascript,${encodeURIComponent(src)}`)};\nimport ${JSON.stringify(real)};\n`;
        super(URL.createObjectURL(new Blob([mod], { type: 'text/javascript' })), options);
      }
    };
  }, code);
}

export const PROMPTS = ['The capital of France is', 'def fibonacci(n):\n'];
export const MAX_TOKENS = 12;
/** Teacher forcing: longer continuations, more prompts (as the llama.cpp test has them). */
export const FORCED_PROMPTS = [
  'The capital of France is',
  'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
  'Once upon a time, in a small village by the sea,',
  '<|im_start|>user\nWhat is the boiling point of water in Celsius?<|im_end|>\n<|im_start|>assistant\n',
];
export const FORCED_TOKENS = 48;
/** Top-2 logit gap under which two correct engines may pick differently (summation order). */
export const TIE_GAP = 0.1;

/**
 * Greedy ids from the native GPU engine (`tpsmeter run --backend gpu --json`: the same
 * kernels as the browser's; `auto` would take the CPU backend on a software adapter).
 */
export function nativeTokens(cli, model, prompt, maxTokens = MAX_TOKENS, backend = ['--backend', 'gpu']) {
  // Several test files ask for the same ids (engine-cpu and engines both teacher-force the
  // portable kernels' run): kept in the run's TMPDIR, keyed by everything that decides them,
  // the binary's identity included.
  const args = ['run', ...backend, '--model', model, '--prompt', prompt, '--max-tokens', String(maxTokens), '--json'];
  const id = (f) => {
    const st = fs.statSync(f);
    return `${f}:${st.size}:${st.mtimeMs}`;
  };
  const key = createHash('sha256').update(JSON.stringify([id(cli), id(model), args])).digest('hex').slice(0, 32);
  const file = path.join(os.tmpdir(), 'tpsmeter-native-tokens', `${key}.json`);
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8'));
  const r = spawnSync(cli, args, { encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `tpsmeter run failed: ${r.stderr}`);
  const tokens = JSON.parse(r.stdout).tokens;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(tokens));
  return tokens;
}

/**
 * Teacher forcing: fed the native engine's tokens, the browser engine picks each of them,
 * except where its own logit for that token is within TIE_GAP of its top one.
 */
export function assertForced(t, forced, native) {
  let compared = 0;
  let ties = 0;
  const mismatches = [];
  for (const [i, steps] of forced.entries()) {
    assert.equal(steps.length, native[i].length);
    for (const [j, s] of steps.entries()) {
      compared++;
      if (s.argmax === native[i][j]) continue;
      if (s.gap_to_forced < TIE_GAP) ties++;
      else mismatches.push({ prompt: i, position: j, native: native[i][j], ...s });
    }
  }
  t.diagnostic(`teacher-forced: ${compared} positions over ${forced.length} prompts, ${compared - ties - mismatches.length} equal, ${ties} near-ties (gap < ${TIE_GAP})`);
  assert.deepEqual(mismatches, []);
  assert.ok(compared - ties >= FORCED_TOKENS * 2, `too few positions compared: ${compared}`);
}
