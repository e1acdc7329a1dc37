// Steps in flight (decode chaining, `crates/tpsmeter-gpu/src/runtime/chain.rs`): each setting
// of `inFlight` against the others, alternated round by round in one run, in headless
// Chromium (WebGPU in the engine Worker: SwiftShader here) and natively (`tpsmeter run
// --in-flight K --backend gpu`: lavapipe here).
//
//   cargo xtask pkg && cargo build --release -p tpsmeter-cli
//   TPSMETER_MODEL=... node tests/browser/bench/in-flight.mjs [rounds] [K,K,...]
//
// Prints per K: decode tok/s (64 tokens after a 64-token prompt), the Worker's host wait per
// decoded token (median ms blocked on the token's `mapAsync`), mean steps in flight at each
// read, and the encode+submit ms per token; medians of `rounds` (default 5), with the load
// average beside them. One engine per K is loaded once (from the model cache after the
// first) and they take turns, so a drift in the machine's load hits every K alike.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, benchModel, isolatedPage, loadAverage, log, median } from './common.mjs';

const rounds = Number(process.argv[2] ?? 5);
const depths = (process.argv[3] ?? '1,2,3').split(',').map(Number);
const model = benchModel();
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(REPO_ROOT, 'target');
const cli = process.env.TPSMETER_CLI_RELEASE ?? path.join(targetDir, 'release', 'tpsmeter');
const words = (salt) => `Round ${salt} ${'the sea and the sky '.repeat(13)}`.split(' ').slice(0, 64).join(' ');

const loadStart = loadAverage();
log(`load average at start: ${loadStart}`);
const ctx = await isolatedPage({ webgpu: true, mounts: { '/models/': path.dirname(model) } });
let browser;
try {
  browser = await ctx.page.evaluate(
    async ({ url, rounds, depths, prompts }) => {
      const { createEngine } = await import('/tpsmeter/dist/engine/index.js');
      const engines = [];
      for (const inFlight of depths) engines.push(await createEngine({ model: url, backend: 'webgpu', inFlight }));
      const runs = depths.map(() => []);
      let salt = 0;
      // One warm-up generation each: pipelines and caches, not measured.
      for (const e of engines) await e.completions.create({ prompt: prompts[salt++ % prompts.length], max_tokens: 8, temperature: 0, ignore_eos: true });
      for (let r = 0; r < rounds; r++) {
        for (let i = 0; i < engines.length; i++) {
          const res = await engines[i].completions.create({ prompt: prompts[salt++ % prompts.length], max_tokens: 64, temperature: 0, ignore_eos: true });
          const c = res.timings.perTokenCost ?? {};
          runs[i].push({ decode: res.timings.decode_tokens_per_second, wait: c.hostWaitMs, flight: c.inFlight, encode: c.encodeMs, text: res.choices[0].text });
        }
      }
      const infos = engines.map((e) => e.info);
      for (const e of engines) await e.dispose();
      return { runs, infos };
    },
    { url: `/models/${path.basename(model)}`, rounds, depths, prompts: [0, 1, 2, 3, 4, 5, 6, 7].map(words) },
  );
} finally {
  await ctx.close();
}

const native = depths.map(() => []);
if (fs.existsSync(cli)) {
  let salt = 0;
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < depths.length; i++) {
      const out = spawnSync(cli, ['run', '--backend', 'gpu', '--model', model, '--prompt', words(salt++ % 8), '--max-tokens', '64', '--ignore-eos', '--in-flight', String(depths[i]), '--json'], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`tpsmeter run failed: ${out.stderr}`);
      const j = JSON.parse(out.stdout);
      const c = j.per_token_cost ?? {};
      native[i].push({ decode: j.figures.decode_tps, wait: c.host_wait_ms, flight: c.in_flight, encode: c.encode_ms, adapter: j.adapter });
    }
  }
}

const f2 = (v) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');
const f3 = (v) => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');
console.log(`steps in flight; ${rounds} rounds alternated; load average ${loadStart} at start, ${loadAverage()} at end`);
const table = (label, runs) => {
  console.log(`${label}`);
  console.log('  K   decode tok/s   host wait ms/token   in flight   encode ms/token   decode / K=1');
  const base = median(runs[0].map((x) => x.decode));
  runs.forEach((rs, i) => {
    const d = median(rs.map((x) => x.decode));
    console.log(
      `  ${String(depths[i]).padEnd(3)} ${f2(d).padStart(12)}   ${f3(median(rs.map((x) => x.wait))).padStart(18)}   ${f2(median(rs.map((x) => x.flight))).padStart(9)}   ${f3(median(rs.map((x) => x.encode))).padStart(15)}   ${f2(d / base).padStart(12)}`,
    );
  });
};
table(`browser: Chromium Worker, ${browser.infos[0].adapter} (info.inFlight ${browser.infos.map((i) => i.inFlight).join('/')})`, browser.runs);
// Same tokens whatever K: the texts of each round's prompt must agree across settings.
const texts = new Set(browser.runs.map((rs) => rs.map((x) => x.text).join('\u0000')));
if (texts.size !== 1) console.log('  WARNING: the settings generated different texts');
if (native[0].length) table(`native: tpsmeter run --backend gpu, ${native[0][0].adapter}`, native);
