// The real-user Meter's cost on the page's main thread, and the package's download sizes
// against their budgets (a benchmark that prints figures; it fails only on a size budget):
//
//   cargo xtask pkg                     # the packed package (target/npm/tpsmeter-*.tgz)
//   node tests/browser/bench/meter.mjs  # [--streams N] [--chunks N] [--batch N]
//
// The package is found as common.mjs says (TPSMETER_PKG_TARBALL / TPSMETER_PKG_DIR, else the
// newest target/npm tarball, else a built pkg/); Chromium from TPSMETER_CHROMIUM.
//
// 1. Per chunk, on a cross-origin-isolated page (performance.now() in 5 µs steps): chunks of
//    a synthetic OpenAI chat SSE stream are fed one at a time, as a network delivers them
//    (enqueue one chunk into the source ReadableStream, await the consumer's read, next), in
//    batches of `batch` chunks timed as a whole; the same loop reads the source directly
//    (plain) and through `meter.wrap(stream)` (wrapped), batch for batch alternately. The
//    wrapper's main-thread cost per chunk is (wrapped − plain) / batch; p50 and p99 over all
//    batches of all streams (the first streams are JIT warm-up, not counted).
// 2. Per stream: `new Meter(...)` and `meter.wrap(stream)` (each timed over a batch of
//    `batch` calls, per call), and the report build (`await meter.report()` right after a
//    stream of `chunks` chunks ended: the lazy part, which the Meter itself runs at idle
//    time after a stream, off the hot path): the first (cold: dynamic import, wasm fetch and
//    compile) apart from the rest.
// 3. Sizes, gzip level 9 (node zlib) of what a page downloads: each entry's eager JavaScript
//    (the entry and its static imports, transitively; targets of dynamic `import()`
//    excluded), each of the meter's lazy wasm parsers (one build per wire family:
//    wasm/tpsmeter_meter_<family>_bg.wasm and its glue wasm/tpsmeter_meter_<family>.js; a
//    page loads the one of its meter's API) and, for reference, the benchmark build bench()
//    loads. Budgets: meter eager JS <= 5 KiB gz; the OTLP exporter's entry <= 2 KB gz; each
//    meter wasm parser (.wasm + glue) <= 60 KiB gz. A missed budget (or a wrong report) exits 1.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { isolatedPage, loadAverage, log, pct, TIMER_RESOLUTION_IN_PAGE } from './common.mjs';

const KIB = 1024;
const METER_EAGER_BUDGET = 5 * KIB;
const WASM_PARSER_BUDGET = 60 * KIB;
const OTLP_EAGER_BUDGET = 2000;

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!(v >= 1)) throw new Error(`--${name} needs a positive number`);
  return Math.floor(v);
}
const STREAMS = arg('streams', 120);
const CHUNKS = arg('chunks', 512);
const BATCH = arg('batch', 64);
/** Streams run first and not counted (JIT warm-up). */
const WARMUP_STREAMS = Math.min(20, Math.max(1, Math.floor(STREAMS / 5)));

/**
 * The files statically imported from `entry`, transitively: `import ... from '...'`,
 * `import '...'` and `export ... from '...'` at a statement start; `import('...')` (dynamic)
 * and `import.meta` are not imports. Written for tsc's and wasm-bindgen's ES2022 output.
 */
function eagerGraph(entry) {
  const seen = [];
  const visit = (file) => {
    if (seen.includes(file)) return;
    seen.push(file);
    const src = fs
      .readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    const re = /(?:^|[;}])\s*(?:import|export)\s*(?:[\w$*{}\s,]+?\s*from\s*)?(['"])([^'"\n]+)\1/gm;
    for (const m of src.matchAll(re)) {
      if (m[2].startsWith('.')) visit(path.resolve(path.dirname(file), m[2]));
    }
  };
  visit(entry);
  return seen;
}

const gzip = (buf) => zlib.gzipSync(buf, { level: 9 }).length;

function sizes(pkgDir) {
  const rel = (f) => path.relative(pkgDir, f);
  const rows = [];
  for (const [name, entry, budget] of [
    ["'tpsmeter' (bench)", 'dist/index.js', undefined],
    ["'tpsmeter/meter'", 'dist/meter/index.js', METER_EAGER_BUDGET],
    ["'tpsmeter/raw'", 'dist/raw.js', undefined],
    // What an app adds to the meter to send its figures (the exporter itself loads when one
    // is created), and the bridge to an app's own OpenTelemetry SDK.
    ["'tpsmeter/otlp'", 'dist/otel/otlp.js', OTLP_EAGER_BUDGET],
    ["'tpsmeter/otel'", 'dist/otel/index.js', undefined],
  ]) {
    const files = eagerGraph(path.join(pkgDir, entry));
    const bytes = Buffer.concat(files.map((f) => fs.readFileSync(f)));
    rows.push({ name: `${name} eager JS`, gz: gzip(bytes), raw: bytes.length, budget, files: files.map(rel) });
  }
  // The benchmark build (what `bench()` loads) and the meter's own lazy parser build.
  const meters = fs
    .readdirSync(path.join(pkgDir, 'wasm'))
    .filter((f) => /^tpsmeter_meter_\w+_bg\.wasm$/.test(f))
    .sort()
    .map((f) => {
      const stem = f.replace(/_bg\.wasm$/, '');
      return [stem, `meter (${stem.slice('tpsmeter_meter_'.length)})`];
    });
  if (meters.length === 0) throw new Error(`no meter builds (tpsmeter_meter_*_bg.wasm) in ${pkgDir}/wasm`);
  for (const [stem, label] of [['tpsmeter_wasm', 'bench()'], ...meters]) {
    const wasm = fs.readFileSync(path.join(pkgDir, `wasm/${stem}_bg.wasm`));
    const glue = fs.readFileSync(path.join(pkgDir, `wasm/${stem}.js`));
    rows.push({ name: `wasm/${stem}_bg.wasm`, gz: gzip(wasm), raw: wasm.length });
    rows.push({ name: `wasm/${stem}.js (glue)`, gz: gzip(glue), raw: glue.length });
    rows.push({
      name: `${label} wasm, lazy (.wasm + glue)`,
      gz: gzip(wasm) + gzip(glue),
      raw: wasm.length + glue.length,
      budget: stem === 'tpsmeter_wasm' ? undefined : WASM_PARSER_BUDGET,
    });
  }
  return rows;
}

/** Runs in the page: the per-chunk and per-stream measurements. */
async function measureInPage({ streams, chunks, batch, warmupStreams }) {
  const { Meter } = await import('/tpsmeter/dist/meter/index.js');
  const enc = new TextEncoder();
  const sse = (obj) => enc.encode(`data: ${JSON.stringify(obj)}\n\n`);
  const chunk = (i) =>
    sse({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'emu',
      choices: [{ index: 0, delta: { content: ` token${i}` }, logprobs: null, finish_reason: null }],
    });
  const body = Array.from({ length: chunks }, (_, i) => chunk(i));
  const tail = [
    sse({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'emu', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
    enc.encode('data: [DONE]\n\n'),
  ];
  /** A source the test pushes into one chunk at a time. */
  const source = () => {
    let ctl;
    const stream = new ReadableStream({ start: (c) => void (ctl = c) }, { highWaterMark: 0 });
    return { stream, ctl };
  };
  const feed = async (ctl, reader, from, n) => {
    const t0 = performance.now();
    for (let i = from; i < from + n; i++) {
      ctl.enqueue(body[i]);
      const r = await reader.read();
      if (r.done) throw new Error('stream ended early');
    }
    return performance.now() - t0;
  };
  const breathe = () => new Promise((r) => setTimeout(r, 0));

  // 1. Per chunk: plain vs wrapped, batch for batch.
  const overheadUs = [];
  const plainUs = [];
  const wrappedUs = [];
  for (let s = 0; s < streams + warmupStreams; s++) {
    const plain = source();
    const plainReader = plain.stream.getReader();
    const meter = new Meter({ api: 'openai-chat', model: 'emu' });
    const wrapped = source();
    const wrappedReader = meter.wrap(wrapped.stream).getReader();
    for (let from = 0; from + batch <= chunks; from += batch) {
      // Alternate which goes first, so neither always follows the other's garbage.
      const first = (from / batch + s) % 2 === 0;
      let tp, tw;
      if (first) {
        tp = await feed(plain.ctl, plainReader, from, batch);
        tw = await feed(wrapped.ctl, wrappedReader, from, batch);
      } else {
        tw = await feed(wrapped.ctl, wrappedReader, from, batch);
        tp = await feed(plain.ctl, plainReader, from, batch);
      }
      if (s >= warmupStreams) {
        plainUs.push((tp * 1000) / batch);
        wrappedUs.push((tw * 1000) / batch);
        overheadUs.push(((tw - tp) * 1000) / batch);
      }
    }
    // Unfinished on purpose: no report is built for these streams.
    meter.dispose();
    await breathe();
  }

  // 2a. new Meter() and wrap(), per call, over batches.
  const createUs = [];
  const wrapUs = [];
  for (let s = 0; s < streams + warmupStreams; s++) {
    const sources = Array.from({ length: batch }, () => source().stream);
    let t0 = performance.now();
    const meters = [];
    for (let i = 0; i < batch; i++) meters.push(new Meter({ api: 'openai-chat', model: 'emu' }));
    const tCreate = performance.now() - t0;
    t0 = performance.now();
    for (let i = 0; i < batch; i++) meters[i].wrap(sources[i]);
    const tWrap = performance.now() - t0;
    for (const m of meters) m.dispose();
    if (s >= warmupStreams) {
      createUs.push((tCreate * 1000) / batch);
      wrapUs.push((tWrap * 1000) / batch);
    }
    await breathe();
  }

  // 2b. The report build after a whole stream (cold first, then warm).
  const buildMs = [];
  let coldMs;
  let reportOk = true;
  const reportStreams = Math.max(10, Math.floor(streams / 4));
  for (let s = 0; s < reportStreams; s++) {
    const meter = new Meter({ api: 'openai-chat', model: 'emu' });
    const src = source();
    const reader = meter.wrap(src.stream).getReader();
    await feed(src.ctl, reader, 0, chunks);
    for (const c of tail) {
      src.ctl.enqueue(c);
      await reader.read();
    }
    src.ctl.close();
    if (!(await reader.read()).done) throw new Error('stream did not end');
    const t0 = performance.now();
    const report = await meter.report();
    const t = performance.now() - t0;
    reportOk &&= report.record.output_tokens === chunks && !report.partial && !report.record.error;
    if (s === 0) coldMs = t;
    else buildMs.push(t);
    meter.dispose();
    // Let the Meter's own idle-time build of this stream run before the next one.
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    crossOriginIsolated: self.crossOriginIsolated,
    userAgent: navigator.userAgent,
    overheadUs,
    plainUs,
    wrappedUs,
    createUs,
    wrapUs,
    coldMs,
    buildMs,
    reportOk,
  };
}

const ctx = await isolatedPage();
let failed = false;
try {
  const loadStart = loadAverage();
  const resolution = await ctx.page.evaluate(TIMER_RESOLUTION_IN_PAGE);
  const m = await ctx.page.evaluate(measureInPage, {
    streams: STREAMS,
    chunks: CHUNKS,
    batch: BATCH,
    warmupStreams: WARMUP_STREAMS,
  });
  const loadEnd = loadAverage();
  const f = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : String(v));
  const pp = (v, d = 2) => `${f(pct(v, 50), d)} / ${f(pct(v, 99), d)}`;

  console.log(`tpsmeter Meter benchmark (package: ${ctx.source})`);
  console.log(`browser: ${m.userAgent}`);
  console.log(
    `crossOriginIsolated: ${m.crossOriginIsolated}; performance.now() step: min ${f(resolution.min * 1000, 1)} µs, median ${f(resolution.median * 1000, 1)} µs`,
  );
  console.log(`load average (1, 5, 15 min): ${loadStart} at start, ${loadEnd} at end (${os.availableParallelism()} cores)`);
  console.log('');
  console.log(
    `per chunk (${STREAMS} streams × ${Math.floor(CHUNKS / BATCH)} batches of ${BATCH} chunks fed one at a time; ${WARMUP_STREAMS} warm-up streams not counted), µs per chunk, p50 / p99:`,
  );
  console.log(`  plain read loop            ${pp(m.plainUs)}`);
  console.log(`  through meter.wrap()       ${pp(m.wrappedUs)}`);
  console.log(`  wrapper cost (wrapped − plain, same batch) ${pp(m.overheadUs)}   (${m.overheadUs.length} batches)`);
  console.log('');
  console.log(`per stream, µs per call, p50 / p99 (batches of ${BATCH} calls):`);
  console.log(`  new Meter(...)             ${pp(m.createUs)}`);
  console.log(`  meter.wrap(stream)         ${pp(m.wrapUs)}`);
  console.log(`report build after a ${CHUNKS}-chunk stream (lazy: run at idle time, off the hot path), ms:`);
  console.log(`  first (cold: import + wasm load)  ${f(m.coldMs)}`);
  console.log(`  later, p50 / p99                  ${pp(m.buildMs)}   (${m.buildMs.length} streams)`);
  console.log(`  reports correct (${CHUNKS} output tokens, complete, no error): ${m.reportOk ? 'yes' : 'NO'}`);
  console.log('');
  console.log('sizes, gzip -9 (node zlib), bytes:');
  for (const r of sizes(ctx.pkgDir)) {
    const limit = r.budget % KIB === 0 ? `${r.budget / KIB} KiB` : `${r.budget} B`;
    const ok = r.budget === undefined ? '' : r.gz <= r.budget ? `  <= ${limit}: ok` : `  > ${limit}: OVER BUDGET`;
    if (r.budget !== undefined && r.gz > r.budget) failed = true;
    console.log(`  ${r.name.padEnd(36)} ${String(r.gz).padStart(8)} gz ${String(r.raw).padStart(9)} raw${ok}`);
    if (r.files) console.log(`      ${r.files.join(', ')}`);
  }
  if (!m.crossOriginIsolated) log('warning: the page was not cross-origin isolated (coarser timer)');
  if (!m.reportOk) failed = true;
  console.log(failed ? '\nFAILED: a size budget was missed or a report was wrong' : '\nsize budgets met');
} finally {
  await ctx.close();
}
process.exit(failed ? 1 : 0);
