// The browser half of the timing-accuracy benchmark (run by
// `cargo bench -p tpsmeter-cli --bench timing -- browser`, which starts the emulator with
// send records and compares; see crates/tpsmeter-cli/benches/timing/browser.rs):
//
//   node tests/browser/bench/timing.mjs <emulator base url> <concurrency> <requests> [render] [page] [floor] [floor-worker] [engine=NAME]
//
// Opens a cross-origin-isolated page (COOP same-origin + COEP require-corp), runs the packed
// package's `bench()` there against the emulator (openai-chat, `concurrency` requests in
// flight, `requests` measured after `concurrency` warm-ups, 64 tokens), and prints one JSON
// object on stdout:
//
//   { crossOriginIsolated, timerResolutionMs: { min, median, samples }, userAgent,
//     clock: { offsetMs, beforeMs, afterMs, reads }, httpVersions, warnings, notes, records }
//
// `render`: the text goes on screen as it arrives (`render: element`, perceived TPS), so the
// page's main thread lays out and paints while the streams run, as a chat UI's does.
// `page`: the streams are read and stamped on the page's main thread (`worker: false`)
// instead of bench()'s reader Worker. `notes` is the report's `environment.notes`.
// `floor`: no library at all, the floor any client in this page has: the same requests made
// with fetch() and read with a plain reader loop on the main thread, each read stamped with
// performance.now() at once, records of the same shape. `floor-worker`: the same plain loop
// in a Worker of its own (stamps moved onto the page's clock by the two time origins), with
// the page's main thread idle: what reading in a Worker costs by itself in this engine, apart
// from anything the package does. `engine=firefox|webkit`: that
// browser instead of Chromium (support/engines.mjs).
//
// `records` are the RequestRecords `onRecord` received (warm-ups included, flagged), times
// in ms on the page's performance.now() clock. `clock` maps that clock onto the emulator's
// CLOCK_MONOTONIC for pairing records with the server's only: before and after the run the
// page reads one fast paced stream from the emulator and takes min(read stamp − x_sent_ns)
// over its events (performance.now() − CLOCK_MONOTONIC, up to the smallest delivery delay).
// Progress goes to stderr. The package is found as common.mjs says.

import { isolatedPage, loadAverage, log, timerResolutionInPage } from './common.mjs';

const [base, concurrencyArg, requestsArg, ...flags] = process.argv.slice(2);
const concurrency = Number(concurrencyArg);
const requests = Number(requestsArg);
const render = flags.includes('render');
const worker = !flags.includes('page');
const floorWorker = flags.includes('floor-worker');
const floor = flags.includes('floor') || floorWorker;
const engine = flags.find((f) => f.startsWith('engine='))?.slice('engine='.length) ?? 'chromium';
const known = (f) => ['render', 'page', 'floor', 'floor-worker'].includes(f) || /^engine=(chromium|firefox|webkit)$/.test(f);
if (!base || !(concurrency >= 1) || !(requests >= 1) || !flags.every(known)) {
  console.error('usage: node tests/browser/bench/timing.mjs <emulator base url> <concurrency> <requests> [render] [page] [floor] [floor-worker] [engine=chromium|firefox|webkit]');
  process.exit(2);
}

const ctx = await isolatedPage({ engine });
try {
  log(`  package: ${ctx.source}; ${engine}; load average ${loadAverage()}`);
  const resolution = await ctx.page.evaluate(timerResolutionInPage);
  const out = await ctx.page.evaluate(
    async ({ base, concurrency, requests, resolution, render, worker, floor, floorWorker }) => {
      // The clock map: a stream of 64 one-token chunks 1 ms apart, each event stamped with
      // its CLOCK_MONOTONIC send time by the emulator.
      const clockSync = async () => {
        const res = await fetch(`${base}/pace/1,1,64/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'emu',
            stream: true,
            max_tokens: 64,
            messages: [{ role: 'user', content: 'clock' }],
          }),
          cache: 'no-store',
        });
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buf = '';
        let best = Infinity;
        let reads = 0;
        for (;;) {
          const r = await reader.read();
          const t = performance.now();
          if (r.done) break;
          buf += decoder.decode(r.value, { stream: true });
          const cut = buf.lastIndexOf('\n\n');
          if (cut < 0) continue;
          for (const m of buf.slice(0, cut).matchAll(/"x_sent_ns":(\d+)/g)) {
            best = Math.min(best, t - Number(m[1]) / 1e6);
            reads++;
          }
          buf = buf.slice(cut + 2);
        }
        return { best, reads };
      };

      // The floor: `concurrency` plain reader loops, `requests` measured after as many
      // warm-ups as loops; a record per request with a stamp per read that carried text.
      // In a Worker of its own when `floorWorker`: the loop below as its source, its records'
      // stamps moved onto this page's clock by the difference of the two time origins.
      const plainInWorker = () =>
        new Promise((resolve, reject) => {
          const src = `const plain = ${plainLoop.toString()};
            onmessage = async (e) => postMessage({ timeOrigin: performance.timeOrigin, records: await plain(e.data) });`;
          const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
          w.onerror = (e) => reject(new Error(`floor worker: ${e.message}`));
          w.onmessage = (e) => {
            w.terminate();
            const shift = e.data.timeOrigin - performance.timeOrigin;
            resolve(e.data.records.map((r) => ({ ...r, start_ms: r.start_ms + shift, chunk_times_ms: r.chunk_times_ms.map((t) => t + shift) })));
          };
          w.postMessage({ base, requests, concurrency });
        });
      const plain = async () => {
        const out = floorWorker ? await plainInWorker() : await plainLoop({ base, requests, concurrency });
        return { records: out, report: { warnings: [], environment: { notes: { stamp_thread: floorWorker ? 'worker (no library)' : 'main (no library)' } } } };
      };
      async function plainLoop({ base, requests, concurrency }) {
        const out = [];
        const body = JSON.stringify({ model: 'emu', stream: true, max_tokens: 64, messages: [{ role: 'user', content: 'floor' }] });
        let next = 0;
        const total = requests + concurrency;
        const one = async (warmup) => {
          const start_ms = performance.now();
          const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, cache: 'no-store' });
          const reader = res.body.getReader();
          const decoder = new TextDecoder();
          const chunk_times_ms = [];
          for (;;) {
            const r = await reader.read();
            const t = performance.now();
            if (r.done) break;
            if (/"content":"[^"]/.test(decoder.decode(r.value, { stream: true }))) chunk_times_ms.push(t);
          }
          out.push({ warmup, error: null, start_ms, chunk_times_ms });
        };
        await Promise.all(Array.from({ length: concurrency }, async () => {
          while (next < total) {
            const i = next++;
            await one(i < concurrency);
          }
        }));
        return out;
      }

      const { bench } = await import('/tpsmeter/dist/index.js');
      const before = await clockSync();
      let records = [];
      let view;
      if (render) {
        view = document.createElement('div');
        view.style.cssText = 'white-space: pre-wrap; font: 14px/1.4 sans-serif; width: 40em';
        document.body.append(view);
      }
      const floorRun = floor ? await plain() : undefined;
      if (floorRun) records = floorRun.records;
      const report = floorRun?.report ?? await bench({
        api: 'openai-chat',
        url: base,
        model: 'emu',
        concurrency: [concurrency],
        requests,
        warmup: concurrency,
        maxTokens: 64,
        onRecord: (r) => records.push(r),
        render: view,
        worker,
      });
      const after = await clockSync();
      const http = new Set(records.map((r) => r.http_version).filter(Boolean));
      return {
        crossOriginIsolated: self.crossOriginIsolated,
        timerResolutionMs: resolution,
        userAgent: navigator.userAgent,
        clock: {
          offsetMs: Math.min(before.best, after.best),
          beforeMs: before.best,
          afterMs: after.best,
          reads: before.reads + after.reads,
        },
        httpVersions: [...http],
        warnings: report.warnings ?? [],
        notes: report.environment.notes,
        records,
      };
    },
    { base, concurrency, requests, resolution, render, worker, floor, floorWorker },
  );
  const measured = out.records.filter((r) => !r.warmup);
  const failed = measured.filter((r) => r.error).length;
  log(
    `  ${engine} c=${concurrency}${render ? ' render' : ''}${floor ? ' floor' : ''} read on ${out.notes.stamp_thread}: ${measured.length} measured records (${failed} failed), crossOriginIsolated=${out.crossOriginIsolated}, load average ${loadAverage()}`,
  );
  process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
  await ctx.close();
}
