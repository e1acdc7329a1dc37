// Imports of real size and hostile imports on the benchmark page (www/): a report of many
// requests × many chunks imports and draws; ten hostile files are each refused naming the cap
// they break, or imported and drawn, and History (the earlier runs, their permalinks, Delete)
// keeps working; runs that an older version stored in IndexedDB without these checks still
// list, open (or say why not) and delete. The files are generated once, into a temporary
// folder, and every step uses one page.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import zlib from 'node:zlib';
import { assertClean } from './support/browser.mjs';
import { assertNoConsoleErrors, chartInk, ready, staticSite } from './support/site.mjs';

/** A summary statistic of the report schema. */
function stat(v) {
  return { count: 1, mean: v, stddev: 0, min: v, max: v, p50: v, p90: v, p95: v, p99: v };
}

/**
 * A report of schema version 2, as `tpsmeter bench --json` writes it: `requests` records of
 * `chunks` chunks each (chunk times and gaps), `failed` of them failed, over `levels` levels.
 */
function report({ requests = 4, chunks = 8, levels = 1, failed = 0, model = 'm', warnings = 0 } = {}) {
  const levelList = Array.from({ length: levels }, (_, i) => ({ concurrency: i + 1 }));
  const records = [];
  for (let id = 0; id < requests; id++) {
    const start = id * 10;
    if (id < failed) {
      records.push({
        id,
        level: levelList[id % levels],
        warmup: false,
        start_ms: start,
        end_ms: start + 5,
        output_tokens: 0,
        token_source: 'chunks',
        http_status: 500,
        error: { class: 'http_5xx', message: `HTTP 500 for request ${id}`, http_status: 500 },
        metrics: { output_tokens: 0, token_source: 'chunks', chunk_tokens: 0, output_chunks: 0, itl_chunk_ms: [], e2e_ms: 5 },
      });
      continue;
    }
    const times = new Array(chunks);
    const gaps = new Array(Math.max(0, chunks - 1));
    for (let k = 0; k < chunks; k++) {
      // Each request its own pace, so that the timelines do not hide one another.
      times[k] = start + 20 + k * (1 + (id % 8) * 0.5) + ((id * 7 + k) % 5) * 0.25;
      if (k > 0) gaps[k - 1] = times[k] - times[k - 1];
    }
    const e2e = times[chunks - 1] - start + 1;
    records.push({
      id,
      level: levelList[id % levels],
      warmup: false,
      start_ms: start,
      first_byte_ms: start + 20,
      first_token_ms: start + 20,
      end_ms: start + e2e,
      chunk_times_ms: times,
      output_tokens: chunks,
      token_source: 'chunks',
      http_status: 200,
      error: null,
      metrics: {
        ttfb_ms: 20,
        ttft_ms: 20 + (id % 7),
        e2e_ms: e2e,
        output_tokens: chunks,
        token_source: 'chunks',
        chunk_tokens: chunks,
        output_chunks: chunks,
        itl_chunk_ms: gaps,
        output_tps: chunks / (e2e / 1000),
      },
    });
  }
  const ok = requests - failed;
  return {
    schema_version: 2,
    tool: { name: 'tpsmeter', version: '0.1.0' },
    config: { api: 'openai-chat', url: 'http://127.0.0.1:8080', model, levels: levelList, requests, duration_s: null, rate_per_s: null, max_tokens: chunks, prompt: { kind: 'text', chars: 12 }, warmup: 0, timeout_s: null, slo: null },
    environment: { os: 'linux', arch: 'x86_64', cpu_count: 2, tool_version: '0.1.0', notes: {} },
    levels: levelList.map((level, i) => ({
      level,
      summary: i > 0 ? { start_ms: 0, end_ms: 1, completed: 0, succeeded: 0, failed: 0, output_tokens: 0, token_sources: {}, errors: {}, aggregate_output_tps: i % 97 } : {
        start_ms: 0,
        end_ms: requests * 10 + 100,
        completed: requests,
        succeeded: ok,
        failed,
        output_tokens: ok * chunks,
        token_sources: { chunks: ok },
        errors: failed ? { http_5xx: failed } : {},
        ttft_ms: stat(23),
        output_tps: stat(400),
        aggregate_output_tps: 1000,
      },
    })),
    requests: records,
    warnings: Array.from({ length: warnings }, (_, i) => ({ code: 'tab_hidden', message: `warning ${i}` })),
  };
}

/** Every chart drew its first series (one level is one point: a few pixels). */
function assertInk(ink) {
  for (const c of ink) assert.ok(c.pixels > (c.caption.startsWith('Output tokens') ? 5 : 40), `${c.caption} drew ${c.pixels} pixels of its series`);
}

/** Writes `text` (a string or a Buffer) as `name` in `dir`; its path. */
function write(dir, name, text) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

/**
 * A report of `bytes` or more, as the CLI writes one (pretty-printed): requests of 2000
 * chunks, as many as it takes. Written in pieces, never one string of the whole.
 */
function bigReport(dir, name, bytes) {
  const one = report({ requests: 1, chunks: 2000 });
  const record = JSON.stringify(one.requests[0], null, 2).replace(/\n/g, '\n    ');
  const count = Math.ceil(bytes / (record.length + 6));
  const head = JSON.stringify({ ...one, requests: [] }, null, 2).replace('"requests": []', '"requests": [\n    @@\n  ]');
  const [before, after] = head.split('@@');
  const file = path.join(dir, name);
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, before.replace(/"requests": 1,/, `"requests": ${count},`));
  for (let id = 0; id < count; id++) fs.writeSync(fd, (id > 0 ? ',\n    ' : '') + record.replace(/"id": 0,/, `"id": ${id},`));
  fs.writeSync(fd, after);
  fs.closeSync(fd);
  return { file, requests: count, bytes: fs.statSync(file).size };
}

/**
 * Imports `file` through the page's file input; resolves to what the page says of it
 * (`Imported NAME.` or `Could not import NAME: why`) once it has finished with it.
 */
async function importFile(page, file) {
  const mark = await page.evaluate(() => {
    document.querySelector('#import-status')?.replaceChildren();
    for (const n of document.querySelectorAll('.notice.bad')) if (n.textContent.startsWith('Could not import')) n.remove();
    const n = document.querySelectorAll('.notice.bad').length;
    return { shown: document.querySelector('#results')?.dataset.shown ?? '', n };
  });
  mark.name = path.basename(file);
  await page.locator('#import').setInputFiles(file);
  const said = await page.waitForFunction(
    // The status line; else (an older page) a new "Could not import" notice, or the run shown.
    (mark) => {
      const status = document.querySelector('#import-status')?.textContent ?? '';
      if (status && !status.startsWith('Reading')) return status;
      const bad = [...document.querySelectorAll('.notice.bad')].map((n) => n.textContent).filter((t) => t.startsWith('Could not import'));
      if (document.querySelectorAll('.notice.bad').length > mark.n && bad.length > 0) return bad[0];
      // A page without the status line (an older version): the run it shows says it all.
      if ((document.querySelector('#results')?.dataset.shown ?? '') !== mark.shown) return `Imported ${mark.name} (shown)`;
      return false;
    },
    mark,
    { timeout: 20_000 },
  );
  return said.jsonValue();
}

/** The history rows as { id, title, status, problem }. */
function historyRows(page) {
  return page.$$eval('#history-table tbody tr', (rows) =>
    rows.map((r) => ({ id: r.dataset.run, title: r.querySelector('td:nth-child(2) button')?.textContent ?? '', status: r.dataset.status, problem: r.dataset.problem === 'true' })),
  );
}

/** Whether the page answers within `ms` (not frozen by a parse or a layout). */
async function responsive(page, ms = 2000) {
  const started = Date.now();
  await Promise.race([page.evaluate(() => 1), new Promise((_, reject) => setTimeout(() => reject(new Error(`the page did not answer within ${ms} ms`)), ms))]);
  return Date.now() - started;
}

/** Opens the history row whose title includes `text`, and waits for the results of that run. */
async function openRun(page, text) {
  const row = page.locator('#history-table tbody tr', { hasText: text }).first();
  const id = await row.getAttribute('data-run');
  await row.locator('td:nth-child(2) button').click();
  await page.waitForFunction((id) => document.querySelector('#results')?.dataset.shown === id, id);
  return id;
}

/** Puts `runs` into the page's IndexedDB as an older version of the page could have stored them. */
function inject(page, runs) {
  return page.evaluate(async (runs) => {
    const db = await new Promise((res, rej) => {
      const r = indexedDB.open('tpsmeter');
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const tx = db.transaction('runs', 'readwrite');
    for (const run of runs) {
      if (run.titleChars) run.title = 'x'.repeat(run.titleChars);
      if (run.levelCount) run.report.levels = Array.from({ length: run.levelCount }, (_, i) => ({ level: { concurrency: i + 1 }, summary: { succeeded: 1, failed: 0, aggregate_output_tps: i, output_tps: { p50: 10 } } }));
      delete run.titleChars;
      delete run.levelCount;
      tx.objectStore('runs').put(run);
    }
    await new Promise((res, rej) => {
      tx.oncomplete = res;
      tx.onerror = () => rej(tx.error);
    });
    db.close();
  }, runs);
}

test('reports of real size import and draw; hostile imports leave History usable', async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-import-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const page = await site.page('/');
  await ready(page);

  // Good runs first: History must keep them, their permalinks and Delete, whatever comes after.
  const good = write(dir, 'good.json', JSON.stringify(report({ requests: 6, chunks: 16, model: 'good-model' }), null, 2));
  assert.match(await importFile(page, good), /Imported good\.json/);
  await page.waitForSelector('#results [data-status=done]');
  const doomed = write(dir, 'doomed.json', JSON.stringify(report({ requests: 2, chunks: 4, model: 'doomed-model' })));
  assert.match(await importFile(page, doomed), /Imported doomed\.json/);

  await t.test('300 requests × 600 chunks (180,000 gaps: past what an argument spread takes) import and draw', async () => {
    const file = write(dir, 'cli-300x600.json', JSON.stringify(report({ requests: 300, chunks: 600, model: 'cli-300x600' }), null, 2));
    const started = Date.now();
    assert.match(await importFile(page, file), /Imported cli-300x600\.json/);
    await page.waitForSelector('#results [data-status=done] #summary-cards');
    const ms = Date.now() - started;
    t.diagnostic(`300 × 600 (${(fs.statSync(file).size / 2 ** 20).toFixed(1)} MB): imported and drawn in ${ms} ms`);
    assert.ok(ms < 10_000, `${ms} ms`);
    const ink = await chartInk(page);
    assert.deepEqual(ink.map((c) => c.caption.split(':')[0]), ['Output tokens per second against load', 'Time to first token', 'Inter-token latency (gaps between chunks)', 'Token timelines']);
    assertInk(ink);
    // The distribution counts every gap: 300 × 599.
    assert.match(await page.locator('#results figure.chart', { hasText: 'Inter-token' }).locator('.plot').getAttribute('aria-label'), /179,700 values/);
  });

  // Ten hostile files: each is refused with a message that names the cap it breaks, or
  // imported and drawn; none is stored half-way, and the page answers throughout.
  const hostile = [
    {
      name: 'chunks-240k.json',
      make: () => JSON.stringify(report({ requests: 4, chunks: 60_000, model: 'long-answers' })),
      imported: true,
      check: async () => {
        assert.match(await page.locator('#results figure.chart', { hasText: 'Token timelines' }).locator('.chart-note').innerText(), /drawn through 2,000 evenly spaced chunks each/);
        assertInk(await chartInk(page));
      },
    },
    { name: 'levels-200k.json', make: () => JSON.stringify(report({ requests: 1, chunks: 2, levels: 200_000 })), refused: /200,000 load levels: over the cap of 1,024/ },
    { name: 'model-50mb.json', make: () => JSON.stringify(report({ model: 'm'.repeat(50 * 2 ** 20) })), refused: /string longer than 16 KB .*over the cap/ },
    { name: 'brackets-10mb.json', make: () => '['.repeat(5 * 2 ** 20) + ']'.repeat(5 * 2 ** 20), refused: /more than 32 deep .*over the cap/ },
    {
      name: 'values-11m.json',
      make: () => {
        const r = report({ requests: 1, chunks: 2 });
        r.requests[0].metrics.itl_chunk_ms = '@@';
        return JSON.stringify(r).replace('"@@"', `[${'0,'.repeat(11_000_000)}0]`);
      },
      refused: /11,000,00\d per-chunk values: over the cap of 10,000,000/,
    },
    { name: 'size-65mb.json', make: () => Buffer.alloc(65 * 2 ** 20, 0x20), refused: /65 MB: over the cap of 64 MB/ },
    { name: 'field-20mb.csv', make: () => `id,ttft_ms,e2e_ms,output_tokens\r\n1,2,3,${'9'.repeat(20 * 2 ** 20)}\r\n`, refused: /CSV field is longer than 16 KB: over the cap/ },
    {
      name: 'errors-20k.json',
      make: () => JSON.stringify(report({ requests: 20_010, chunks: 3, failed: 20_000, warnings: 5_000 })),
      imported: true,
      check: async () => {
        assert.match(await page.locator('#error-table caption').innerText(), /Errors \(20,000\) \(the first 200/);
        assert.equal(await page.locator('#error-table tbody tr').count(), 200);
        assert.equal(await page.locator('#warnings [data-warning]').count(), 20);
        assert.match(await page.locator('#warnings').innerText(), /4,980 more warnings/);
      },
    },
    { name: 'shape.json', make: () => JSON.stringify({ schema_version: 2, levels: 'all of them', requests: {} }), refused: /not import shape\.json: .+/ },
    { name: 'not-json.json', make: () => 'this is { not JSON', refused: /not JSON/ },
  ];

  await t.test('ten hostile files: each refused naming its cap, or imported and drawn', async () => {
    // Every file is tried, and what went wrong with each is said at the end.
    const problems = [];
    for (const h of hostile) {
      const file = write(dir, h.name, h.make());
      try {
        const before = (await historyRows(page)).length;
        const started = Date.now();
        const status = await importFile(page, file);
        const ms = Date.now() - started;
        t.diagnostic(`${h.name} (${(fs.statSync(file).size / 2 ** 20).toFixed(1)} MB): ${ms} ms: ${status.slice(0, 160)}`);
        await responsive(page);
        const rows = await historyRows(page);
        if (!h.imported) {
          assert.match(status, /^Could not import /);
          assert.match(status, h.refused);
          assert.equal(rows.length, before, 'refused, yet stored');
        } else {
          assert.match(status, /^Imported /);
          assert.equal(rows.length, before + 1);
          await page.waitForSelector('#results [data-status=done] #summary-cards', { timeout: 10_000 });
          assert.equal(await page.locator('#results [data-render-error]').count(), 0);
          await h.check();
        }
        assert.ok(ms < 10_000, `${ms} ms`);
      } catch (e) {
        problems.push(`${h.name}: ${String(e.message).split('\n').slice(0, 3).join(' ')}`);
      } finally {
        fs.rmSync(file);
      }
    }
    assert.deepEqual(problems, []);
  });

  await t.test('a report over the size cap (100 MB, as the CLI writes it) is refused before it is read', async () => {
    const big = bigReport(dir, 'cli-100mb.json', 100 * 2 ** 20);
    const started = Date.now();
    const status = await importFile(page, big.file);
    t.diagnostic(`${big.requests} requests × 2000 chunks, ${(big.bytes / 2 ** 20).toFixed(0)} MB: ${Date.now() - started} ms: ${status}`);
    fs.rmSync(big.file);
    assert.match(status, /cli-100mb\.json is 10\d(\.\d)? MB: over the cap of 64 MB/);
    assert.ok(Date.now() - started < 10_000);
  });

  if (process.env.TPSMETER_IMPORT_LARGE) {
    // Just under the cap (TPSMETER_IMPORT_LARGE=1: 60 MB; or that many MB): tens of seconds
    // of CI for one number, so only on demand.
    const mb = Number(process.env.TPSMETER_IMPORT_LARGE) > 1 ? Number(process.env.TPSMETER_IMPORT_LARGE) : 60;
    await t.test(`a report of ${mb} MB imports and draws within 10 s`, async () => {
      const big = bigReport(dir, `cli-${mb}mb.json`, mb * 2 ** 20);
      const started = Date.now();
      const status = await importFile(page, big.file);
      await page.waitForSelector('#results [data-status=done] #summary-cards', { timeout: 60_000 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const ms = Date.now() - started;
      t.diagnostic(`${big.requests} requests × 2000 chunks, ${(big.bytes / 2 ** 20).toFixed(1)} MB: ${status} in ${ms} ms`);
      fs.rmSync(big.file);
      assert.match(status, /^Imported /, status);
      assert.ok(ms < 10_000, `${ms} ms`);
      // Its requests are copies of one: their timelines coincide, and the last drawn hides the rest.
      assertInk((await chartInk(page)).filter((c) => !c.caption.startsWith('Token timelines')));
    });
  }

  await t.test('runs stored by an older version without these checks still list, open and delete', async () => {
    const valid = report({ requests: 2, chunks: 4 });
    await inject(page, [
      // What an older page stored from a 30 MB import: it bricked History on every load.
      { id: 'old-levels', createdAt: Date.now() - 1000, title: 'old-levels', source: 'import', status: 'done', report: valid, levelCount: 200_000 },
      // A 50 MB title (the model name of an import), once laid out on every load.
      { id: 'old-title', createdAt: Date.now() - 2000, source: 'import', status: 'done', report: valid, titleChars: 50 * 2 ** 20 },
      // A shape no version wrote: nothing can be drawn from it.
      { id: 'old-garbage', createdAt: Date.now() - 3000, title: 'old-garbage', source: 'import', status: 'done', report: { levels: 5, requests: 7 } },
      // No valid createdAt: in no index.
      { id: 'old-undated', createdAt: 'yesterday', title: 'old-undated', source: 'import', status: 'done', rows: [{ id: '1', ttft_ms: '5', e2e_ms: '9', output_tokens: '3' }] },
    ]);
    const started = Date.now();
    await page.reload();
    await ready(page);
    t.diagnostic(`reload with them stored: ${Date.now() - started} ms`);
    assert.ok(Date.now() - started < 10_000);
    const rows = await historyRows(page);
    const ids = rows.map((r) => r.id);
    for (const id of ['old-levels', 'old-title', 'old-garbage', 'old-undated']) assert.ok(ids.includes(id), `${id} is not listed: ${ids.join(', ')}`);
    assert.ok(rows.find((r) => r.id === 'old-title').title.length <= 200, 'the 50 MB title is cut for display');
    assert.ok(rows.find((r) => r.id === 'old-garbage').problem, 'the unreadable run says so');
    assert.ok(!rows.find((r) => r.id === 'old-levels').problem);

    // 200,000 levels: the table and the curve show a stated part.
    await openRun(page, 'old-levels');
    assert.match(await page.locator('#results table caption').first().innerText(), /the first 200 of 200,000/);
    assert.match(await page.locator('#results figure.chart .chart-note').first().innerText(), /500 evenly spaced levels of the 200,000/);

    // The unreadable one opens to say why, with Delete beside the exports.
    await openRun(page, 'old-garbage');
    assert.match(await page.locator('#results [data-render-error]').innerText(), /could not be shown/);
    await page.getByRole('button', { name: 'Delete this run' }).click();
    await page.waitForFunction(() => !document.querySelector('#history-table tr[data-run="old-garbage"]'));

    for (const id of ['old-levels', 'old-title', 'old-undated']) {
      await page.locator(`#history-table tr[data-run="${id}"]`).getByRole('button', { name: /^Delete/ }).click();
      await page.waitForFunction((id) => !document.querySelector(`#history-table tr[data-run="${id}"]`), id);
    }
  });

  await t.test('the earlier runs still open, their permalink works, Delete works', async () => {
    await openRun(page, 'good.json');
    assert.match(await page.locator('#results .hint').first().innerText(), /good-model/);
    await page.getByRole('button', { name: 'Copy permalink' }).click();
    await page.waitForFunction(() => document.querySelector('#permalink')?.value);
    const link = await page.locator('#permalink').inputValue();
    const other = await site.browser.newPage(link);
    await ready(other);
    await other.waitForSelector('#results [data-status=done] #summary-cards');
    assert.match(await other.locator('#results .hint').first().innerText(), /good-model · .*opened from a permalink/);
    await assertClean(other);

    // A permalink is held to the caps of an import: one over them says which.
    const hostileLink = `${site.origin}/#r=${zlib.deflateRawSync(JSON.stringify(report({ requests: 1, chunks: 2, levels: 2000 }))).toString('base64url')}`;
    await other.goto('about:blank');
    await other.goto(hostileLink);
    await ready(other);
    assert.match(await other.locator('#results-body').innerText(), /permalink could not be opened: the permalink has 2,000 load levels: over the cap of 1,024/);
    await assertClean(other);
    await other.close();

    const before = (await historyRows(page)).length;
    await page.locator('#history-table tbody tr', { hasText: 'doomed.json' }).getByRole('button', { name: /^Delete/ }).click();
    await page.waitForFunction((n) => document.querySelectorAll('#history-table tbody tr').length === n - 1, before);
    assert.ok(!(await historyRows(page)).some((r) => r.title.includes('doomed')));
    assertNoConsoleErrors(page);
    await assertClean(page);
  });
});
