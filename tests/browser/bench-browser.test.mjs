// What only a browser run has: queueing behind HTTP/1.1's ~6 connections per host, hidden
// tabs, and perceived TPS (when the text was painted). The request bodies bench() sends and
// its tokenizer files are in bench-bodies.test.mjs.

import assert from 'node:assert/strict';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { benchInPage, errorClasses, fixture } from './support/fixture.mjs';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : NaN;
};


test('bench() in the browser', async (t) => {
  const fx = await fixture(t, { emulator: { ttftMs: 5, itlMs: 2, tokens: 64 } });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();

  await t.test('HTTP/1.1 queueing at concurrency 10 is detected', async () => {
    const report = await benchInPage(page, {
      api: 'openai-chat',
      url: fx.emulator.prefixed('pace/20,10,20'),
      model: 'emulator',
      concurrency: [10],
      requests: 20,
      maxTokens: 20,
    });
    assert.deepEqual(errorClasses(report), Array(20).fill('ok'));
    const warning = report.warnings.find((w) => w.code === 'http1_queueing');
    assert.ok(warning, `http1_queueing warning among ${JSON.stringify(report.warnings)}`);
    assert.match(warning.message, /6 connections per host/);
    const queued = report.requests.filter((r) => r.queue_ms > 0);
    assert.ok(queued.length >= 4, `queued records: ${report.requests.map((r) => r.queue_ms)}`);
    assert.ok(report.requests.every((r) => r.http_version === 'http/1.1'));
    assert.match(report.environment.notes.http_versions, /http\/1\.1/);
  });

  await t.test('ramp-up spreads the starts, and Resource Timing splits the wait before the response', async () => {
    // The emulator holds each response's head 150 ms (the server's wait); four streams open
    // over 0.6 s, 150 ms apart, each lasting ~1 s so all four are open at once.
    const report = await benchInPage(page, {
      api: 'openai-chat',
      url: fx.emulator.prefixed('fault/slow-headers:150/pace/5,40,20'),
      model: 'emulator',
      concurrency: [4],
      requests: 4,
      maxTokens: 20,
      rampUpS: 0.6,
    });
    assert.deepEqual(errorClasses(report), Array(4).fill('ok'));
    assert.equal(report.config.ramp_up_s, 0.6);
    const starts = report.requests.map((r) => r.start_ms).sort((a, b) => a - b);
    assert.ok(starts[3] - starts[0] >= 400, `starts ${starts.map((t) => t - starts[0])}`);
    for (const r of report.requests) {
      // The head came 150 ms after the request went out: the server's wait, apart from the
      // connection's set-up (plain http: no TLS).
      assert.ok(r.wait_ms >= 140, `server wait ${r.wait_ms}`);
      assert.ok(r.connect_ms >= 0 && r.connect_ms < 100 && r.dns_ms >= 0, JSON.stringify(r));
      assert.equal(r.tls_ms, undefined);
    }
    const s = report.levels[0].summary;
    assert.ok(s.wait_ms.p50 >= 140 && s.connect_ms.count === 4, JSON.stringify(s));
  });

  await t.test('no http1_queueing warning when fewer requests than connections were in flight', async () => {
    // Concurrency 10 over HTTP/1.1, but 3 requests: never more than 3 in flight, so nothing
    // waited for a connection, whatever the first request's CORS preflight took.
    const report = await benchInPage(page, {
      api: 'openai-chat',
      url: fx.emulator.prefixed('pace/20,10,20'),
      model: 'emulator',
      concurrency: [10],
      requests: 3,
      maxTokens: 20,
    });
    assert.deepEqual(errorClasses(report), Array(3).fill('ok'));
    assert.deepEqual(
      report.warnings.filter((w) => w.code === 'http1_queueing'),
      [],
      `warnings: ${JSON.stringify(report.warnings)}`,
    );
  });

  await t.test('a same-origin path is a URL, resolved against the page', async () => {
    // The page's own server has no API at this path: the run goes out and gets a 404, which
    // is a record, not a rejection of the URL.
    const out = await page.evaluate(async () => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const report = await bench({ api: 'vercel-ui', url: '/api/chat', model: 'm', concurrency: 1, requests: 1 });
      return { url: report.config.url, classes: report.requests.map((r) => r.error?.class ?? 'ok'), origin: location.origin };
    });
    assert.equal(out.url, `${out.origin}/api/chat`);
    assert.deepEqual(out.classes, ['http_4xx']);
  });

  await t.test('options are checked by the run spec (the CLI\'s rules, bench()\'s names) before anything starts', async () => {
    const base = { api: 'openai-chat', url: fx.emulator.prefixed('pace/5,2,5'), model: 'emulator', requests: 2 };
    const outcomes = await page.evaluate(async (cases) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const out = [];
      for (const o of cases) {
        out.push(
          await bench(o).then(
            (r) => ({ ran: true, levels: r.levels.map((l) => l.level) }),
            (e) => ({ ran: false, name: e.name, message: e.message }),
          ),
        );
      }
      return out;
    }, [
      { ...base, max_tokens: 4 },
      { ...base, maxTokens: -5 },
      { ...base, api: 'openai' },
      { ...base, concurrency: [2], rate: [1] },
      { ...base, concurrncy: [2] },
      { ...base, concurrency: 1, maxTokens: 4 },
      { ...base, rate: [1], rampUpS: 2 },
    ]);
    const [snake, negative, api, conflict, typo, single, ramp] = outcomes;
    assert.match(ramp.message, /^bench\(\): `rampUpS` spreads the start of closed-loop streams/);
    assert.deepEqual([snake.ran, snake.name], [false, 'TypeError'], JSON.stringify(snake));
    assert.match(snake.message, /unknown option `max_tokens` \(did you mean `maxTokens`\?\)/);
    assert.match(negative.message, /`maxTokens` expects a whole number from 0, got -5/);
    assert.match(api.message, /`api` expects one of 'openai-chat', .*'ollama-chat'.*got "openai"/);
    assert.doesNotMatch(api.message, /'ollama'/);
    assert.match(conflict.message, /`concurrency` and `rate` conflict/);
    assert.match(typo.message, /unknown option `concurrncy` \(did you mean `concurrency`\?\)/);
    // One number is one level, and the run honours the options it was given.
    assert.equal(single.ran, true, JSON.stringify(single));
    assert.deepEqual(single.levels, [{ concurrency: 1 }]);
  });

  await t.test('findMax finds the highest concurrency within the SLO: the server\'s 2 slots', async () => {
    // Beyond 2 streams a request waits for a whole answer (~250 ms), far past the 150 ms
    // TTFT limit: c=1 and 2 meet the SLO, 4 misses, and bisection tries 3.
    const base = { api: 'openai-chat', url: fx.emulator.prefixed('max-streams/2/pace/10,20,12'), model: 'emulator', requests: 4, maxTokens: 12 };
    const [report, noSlo] = await page.evaluate(async (o) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const refused = await bench({ ...o, findMax: true }).then(() => 'ran', (e) => `${e.name}: ${e.message}`);
      return [await bench({ ...o, slo: 'ttft=150ms', findMax: { maxLevels: 6 } }), refused];
    }, base);
    assert.match(noSlo, /TypeError: .*`findMax` needs `slo`/);
    const v = report.find_max;
    assert.deepEqual(report.levels.map((l) => l.level.concurrency), [1, 2, 4, 3], v.message);
    assert.deepEqual(v.max_load, { concurrency: 2 }, v.message);
    assert.equal(v.stop, 'slo_broken');
    assert.deepEqual(v.steps.map((s) => s.passed), [true, true, false, false]);
    assert.deepEqual(report.config.find_max.start, { concurrency: 1 });
    assert.equal(report.config.find_max.max_levels, 6);
    assert.deepEqual(report.config.levels, report.levels.map((l) => l.level));
  });

  await t.test('a hidden tab is flagged', async () => {
    // Headless Chromium keeps every page visible (minimising or switching tabs changes
    // nothing), so the page is told it is hidden the way a browser would tell it.
    const report = await page.evaluate(async (opts) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const setVisibility = (state) => {
        Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => state });
        Object.defineProperty(document, 'hidden', { configurable: true, get: () => state === 'hidden' });
        document.dispatchEvent(new Event('visibilitychange'));
      };
      let n = 0;
      try {
        return await bench({
          ...opts,
          onRecord: () => {
            n++;
            if (n === 2) setVisibility('hidden');
            if (n === 4) setVisibility('visible');
          },
        });
      } finally {
        delete document.visibilityState;
        delete document.hidden;
      }
    }, {
      api: 'openai-chat',
      url: fx.emulator.prefixed('pace/5,5,10'),
      model: 'emulator',
      concurrency: [1],
      requests: 6,
      maxTokens: 10,
      render: undefined,
    });
    assert.deepEqual(errorClasses(report), Array(6).fill('ok'));
    assert.ok(report.warnings.some((w) => w.code === 'tab_hidden'), JSON.stringify(report.warnings));
    const hidden = report.requests.map((r) => r.tab_hidden === true);
    assert.deepEqual(hidden, [false, false, true, true, false, false]);
    assert.ok(Number(report.environment.notes.hidden_ms) > 0);
  });

  // Frames come every ~16.7 ms: at ITL 2 ms a frame shows ~8 tokens, at ITL 50 ms one.
  for (const [itl, tokens, lo, hi] of [
    [2, 200, 3, 16],
    [50, 20, 1, 1.5],
  ]) {
    const check = (tpf) => {
      const m = median(tpf);
      t.diagnostic(`ITL ${itl} ms: median ${m} tokens per frame over ${tpf.length} frames`);
      assert.ok(m >= lo && m <= hi, `tokens per frame at ITL ${itl} ms in [${lo}, ${hi}]: ${tpf}`);
    };
    await t.test(`perceived TPS at ITL ${itl} ms into an element`, async () => {
      const report = await page.evaluate(async (opts) => {
        const { bench } = await import('/tpsmeter/dist/index.js');
        const out = document.getElementById('out');
        out.textContent = '';
        const r = await bench({ ...opts, render: out });
        return { ...r, shown: out.textContent.length };
      }, {
        api: 'openai-chat',
        url: fx.emulator.prefixed(`pace/20,${itl},${tokens}`),
        model: 'emulator',
        concurrency: [1],
        requests: 3,
        maxTokens: tokens,
      });
      assert.deepEqual(errorClasses(report), Array(3).fill('ok'));
      assert.ok(report.shown > 0, 'the text was shown');
      for (const r of report.requests) {
        const p = r.metrics.paint;
        assert.ok(p, `record ${r.id} has paint metrics`);
        assert.ok(p.lag_ms.length > 0);
        assert.ok(p.lag_ms.every((x) => x >= 0), `paint never before arrival: ${p.lag_ms}`);
        assert.equal(p.unpainted_chars, 0, 'all text painted');
        check(p.tokens_per_frame);
      }
    });
  }

  await t.test('a long animation frame moves the paint to its end (LoAF)', async () => {
    const report = await page.evaluate(async (opts) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const out = document.getElementById('out');
      out.textContent = '';
      // The app blocks one frame for 120 ms, 200 ms into the stream: the text painted by
      // that frame is on screen only when it ends, not at its requestAnimationFrame.
      setTimeout(() => {
        requestAnimationFrame(() => {
          const until = performance.now() + 120;
          while (performance.now() < until);
        });
      }, 200);
      return bench({ ...opts, render: out });
    }, {
      api: 'openai-chat',
      url: fx.emulator.prefixed('pace/20,10,60'),
      model: 'emulator',
      concurrency: [1],
      requests: 1,
      maxTokens: 60,
    });
    assert.deepEqual(errorClasses(report), ['ok']);
    const lags = report.requests[0].metrics.paint.lag_ms;
    t.diagnostic(`largest paint lag with a 120 ms frame: ${Math.max(...lags).toFixed(1)} ms`);
    assert.ok(lags.every((x) => x >= 0));
    assert.ok(Math.max(...lags) >= 100, `a paint at the long frame's end: ${lags}`);
  });

  await t.test('perceived TPS with a lazy render callback', async () => {
    const report = await page.evaluate(async (opts) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const out = document.getElementById('out');
      out.textContent = '';
      return bench({
        ...opts,
        // Renders 40 ms late, as a framework batching its updates might.
        render: (delta, info) => {
          setTimeout(() => {
            out.append(delta);
            info.rendered();
          }, 40);
        },
      });
    }, {
      api: 'openai-chat',
      url: fx.emulator.prefixed('pace/20,10,30'),
      model: 'emulator',
      concurrency: [1],
      requests: 2,
      maxTokens: 30,
    });
    assert.deepEqual(errorClasses(report), ['ok', 'ok']);
    for (const r of report.requests) {
      assert.ok(r.metrics.paint.lag_ms.every((x) => x >= 40), `lag includes the 40 ms render delay: ${r.metrics.paint.lag_ms}`);
      assert.ok(r.metrics.paint.empty_frames > 0, 'frames with text waiting');
    }
  });

  await t.test('a busy page does not delay the arrival stamps (the reader Worker)', async () => {
    // The server sends a token every 20 ms; the app's render callback holds the main thread
    // for 45 ms per piece of text. Read on the page, the reads that resolve meanwhile are
    // stamped together when it is free again (gaps of ~0 and ~45 ms); read in the Worker,
    // each is stamped when it resolved, and the gaps stay the server's.
    const run = (worker) =>
      page.evaluate(async (opts) => {
        const { bench } = await import('/tpsmeter/dist/index.js');
        return bench({
          ...opts,
          render: (_delta, info) => {
            const until = performance.now() + 45;
            while (performance.now() < until);
            info.rendered();
          },
        });
      }, {
        api: 'openai-chat',
        url: fx.emulator.prefixed('pace/20,20,24'),
        model: 'emulator',
        concurrency: [1],
        requests: 2,
        maxTokens: 24,
        worker,
      });
    // How far the stamped gaps are from the server's 20 ms (median over both requests).
    const offPace = (report) => median(report.requests.flatMap((r) => r.metrics.itl_chunk_ms.map((g) => Math.abs(g - 20))));
    const inWorker = await run(true);
    const onPage = await run(false);
    assert.deepEqual(errorClasses(inWorker), ['ok', 'ok']);
    assert.deepEqual(errorClasses(onPage), ['ok', 'ok']);
    assert.equal(inWorker.environment.notes.stamp_thread, 'worker');
    assert.equal(onPage.environment.notes.stamp_thread, 'main (worker: false)');
    t.diagnostic(`median |gap − 20 ms|: worker ${offPace(inWorker).toFixed(2)} ms, page ${offPace(onPage).toFixed(2)} ms`);
    // The page's stamps show the busy thread (the set-up works), the Worker's do not.
    assert.ok(offPace(onPage) > 10, `read on a busy page, stamps bunch: ${offPace(onPage)} ms`);
    assert.ok(offPace(inWorker) < 5, `read in the Worker, stamps keep the server's pace: ${offPace(inWorker)} ms`);
    // The Worker's clock maps onto the page's: no stamp before its request started.
    for (const r of inWorker.requests) assert.ok(r.first_token_ms > r.start_ms && r.end_ms >= r.first_token_ms);
  });

  await assertClean(page);
});
