// Warm from the first answer (`crates/tpsmeter-gpu/src/runtime/warm.rs`): a model's first
// answer after its load against its second, each round in a fresh engine, with the load's
// phases beside them.
//
//   cargo xtask pkg && cargo build --release -p tpsmeter-cli
//   TPSMETER_MODEL=... [TPSMETER_GEMMA_MODEL=...] node tests/browser/bench/first-answer.mjs [rounds] [native|browser]
//
// Natively (`tpsmeter run --backend gpu`: lavapipe here) a round is two processes, one
// reporting its first generation (`--warmup 0`) and one its second (`--warmup 1`, the first
// thrown away and the cache forgotten), alternated. In the browser (the engine Worker on
// WebGPU: SwiftShader here) a round is a fresh Chromium (its GPU process and shader caches
// new) loading the model and answering twice, two 64-token prompts that differ in their
// first word (so the second reuses no cache), swapped every other round. Prints medians of
// `rounds` (default 5) with the load average: TTFT, prefill and decode of the first and the
// second answer and their ratios, and the load's phases (ms).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, benchModel, isolatedPage, loadAverage, log, median } from './common.mjs';

const rounds = Number(process.argv[2] ?? 5);
const only = process.argv[3];
const models = [benchModel(), process.env.TPSMETER_GEMMA_MODEL].filter((m) => m && fs.existsSync(m));
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(REPO_ROOT, 'target');
const cli = process.env.TPSMETER_CLI_RELEASE ?? path.join(targetDir, 'release', 'tpsmeter');
const words = (first) => `${first} ${'the sea and the sky were grey that morning and the boats stayed in '.repeat(6)}`.split(' ').slice(0, 60).join(' ');
const PROMPTS = [words('Yesterday'), words('Tomorrow')];
const MAX_TOKENS = 64;

log(`load average at start: ${loadAverage()}`);
const rows = [];

function nativeRound(model, warmup) {
  const out = spawnSync(
    cli,
    ['run', '--backend', 'gpu', '--model', model, '--prompt', PROMPTS[0], '--max-tokens', String(MAX_TOKENS), '--ignore-eos', '--json', '--warmup', String(warmup)],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  if (out.status !== 0) throw new Error(`tpsmeter run failed: ${out.stderr}`);
  const v = JSON.parse(out.stdout);
  return { ttft: v.figures.ttft_s * 1e3, prefill: v.figures.prefill_tps, decode: v.figures.decode_tps, load: v.load };
}

if (only !== 'browser' && fs.existsSync(cli)) {
  for (const model of models) {
    const first = [];
    const second = [];
    for (let r = 0; r < rounds; r++) {
      // Alternated, so a drift in the machine's load hits both alike.
      if (r % 2 === 0) {
        first.push(nativeRound(model, 0));
        second.push(nativeRound(model, 1));
      } else {
        second.push(nativeRound(model, 1));
        first.push(nativeRound(model, 0));
      }
    }
    rows.push(summary('native, lavapipe', model, first, second, (l) => ({ read: l.read_ms, upload: l.upload_ms, compile: l.compile_ms, prime: l.prime_ms, pipelines: l.pipelines })));
  }
} else if (only !== 'browser') {
  log(`no release CLI at ${cli}: native rounds skipped (cargo build --release -p tpsmeter-cli)`);
}

if (only !== 'native') {
  const ctx = await isolatedPage({ webgpu: true, mounts: Object.fromEntries(models.map((m, i) => [`/models${i}/`, path.dirname(m)])) });
  for (const [i, model] of models.entries()) {
    const first = [];
    const second = [];
    for (let r = 0; r < rounds; r++) {
      const fresh = await ctx.freshBrowser();
      try {
        const got = await fresh.page.evaluate(
          async ({ url, prompts, maxTokens }) => {
            const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
            const engine = await createEngine({ model: url, backend: 'webgpu', cache: false });
            const answers = [];
            for (const prompt of prompts) {
              const res = await engine.completions.create({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true });
              answers.push({
                ttft: res.timings.ttft_ms,
                prefill: res.timings.prefill_tokens_per_second,
                decode: res.timings.decode_tokens_per_second,
                evaluated: res.timings.prompt_tokens_evaluated,
                compiled: res.timings.gpu.pipelines_compiled,
              });
            }
            const load = engine.info.load;
            await engine.dispose();
            return { answers, load };
          },
          { url: `/models${i}/${path.basename(model)}`, prompts: r % 2 ? [...PROMPTS].reverse() : PROMPTS, maxTokens: MAX_TOKENS },
        );
        const [a, b] = got.answers;
        if (a.evaluated !== b.evaluated) log(`round ${r}: prompts of ${a.evaluated} and ${b.evaluated} tokens run`);
        first.push({ ...a, load: got.load });
        second.push({ ...b, load: got.load });
      } finally {
        await fresh.close();
      }
    }
    rows.push(summary('Chromium Worker, SwiftShader', model, first, second, (l) => ({ download: l.downloadMs, upload: l.uploadMs, compile: l.compileMs, prime: l.primeMs, pipelines: l.pipelines })));
  }
  await ctx.close();
}

log(`load average at end: ${loadAverage()}`);
console.log('| where | model | TTFT 1st / 2nd ms | ratio | prefill 1st / 2nd tok/s | decode 1st / 2nd tok/s | ratio | load phases, ms (median) |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const phases = Object.entries(r.load)
    .map(([k, v]) => `${k} ${k === 'pipelines' ? v : v.toFixed(0)}`)
    .join(', ');
  console.log(
    `| ${r.where} | ${r.model} | ${r.ttft[0].toFixed(0)} / ${r.ttft[1].toFixed(0)} | ${(r.ttft[0] / r.ttft[1]).toFixed(2)} | ${r.prefill[0].toFixed(1)} / ${r.prefill[1].toFixed(1)} | ${r.decode[0].toFixed(2)} / ${r.decode[1].toFixed(2)} | ${(r.decode[0] / r.decode[1]).toFixed(3)} | ${phases} |`,
  );
  if (r.compiled.some((c) => c > 0)) console.log(`  (pipelines compiled during answers: ${r.compiled.join(', ')})`);
}

/** Medians of the first and second answers of `model`'s rounds, and of its load phases. */
function summary(where, model, first, second, phasesOf) {
  const med = (runs, key) => median(runs.map((x) => x[key]));
  const phases = first.map((x) => phasesOf(x.load));
  const load = Object.fromEntries(Object.keys(phases[0]).map((k) => [k, median(phases.map((p) => p[k]))]));
  return {
    where,
    model: path.basename(model),
    ttft: [med(first, 'ttft'), med(second, 'ttft')],
    prefill: [med(first, 'prefill'), med(second, 'prefill')],
    decode: [med(first, 'decode'), med(second, 'decode')],
    compiled: [...first, ...second].map((x) => x.compiled ?? 0),
    load,
  };
}
