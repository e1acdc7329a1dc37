// The site (www/, built by `cargo xtask www`) in Chromium: the benchmark page end to end
// against the fault-injection emulator, export / import / permalink round trips, a reload
// in the middle of a run, the Content-Security-Policy, and offline use after the first load.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { startEmulator } from './support/emulator.mjs';
import { asset } from './support/env.mjs';
import { assertNoConsoleErrors, cards, checkView, chartInk, downloadText, fillForm, ready, runAndWait, siteDir, staticSite } from './support/site.mjs';

const SECRET = 'sk-tpsmeter-test-SECRET-0123456789';
const run = promisify(execFile);

async function emulator(t, opts) {
  const bin = asset(t, 'TPSMETER_EMULATOR_BIN');
  if (!bin) return undefined;
  return startEmulator(bin, opts);
}

/** The columns of the core's CSV writer, read from its source. */
const CORE_CSV_COLUMNS = [
  ...fs
    .readFileSync(new URL('../../crates/tpsmeter-core/src/report/csv.rs', import.meta.url), 'utf8')
    .match(/pub const COLUMNS[^=]*= \[([^\]]*)\]/)[1]
    .matchAll(/"([a-z_0-9]+)"/g),
].map((m) => m[1]);

/** RFC 4180 records of `text` (quoted fields may hold commas, quotes and line breaks). */
function csvRecords(text) {
  const out = [];
  for (const m of text.matchAll(/((?:"(?:[^"]|"")*"|[^,\n]*)(?:,(?:"(?:[^"]|"")*"|[^,\n]*))*)\n/g)) {
    out.push([...m[1].matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((f) => (f[1].startsWith('"') ? f[1].slice(1, -1).replace(/""/g, '"') : f[1])));
  }
  return out;
}

function figure(text) {
  const v = Number.parseFloat(String(text).replace(/,/g, ''));
  assert.ok(Number.isFinite(v), `not a number: ${text}`);
  return v;
}

/** The reports of the runs the page has kept (its IndexedDB history), oldest first. */
function storedReports(page) {
  return page.evaluate(async () => {
    const db = await new Promise((res, rej) => {
      const r = indexedDB.open('tpsmeter');
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const runs = await new Promise((res, rej) => {
      const r = db.transaction('runs').objectStore('runs').getAll();
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    db.close();
    return runs.filter((run) => run.report).map((run) => run.report);
  });
}

test('the benchmark page against the emulator, with injected faults', async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const emu = await emulator(t, { ttftMs: 20, itlMs: 4, tokens: 64 });
  if (!emu) return;
  t.after(() => emu.stop());

  const page = await site.page('/');
  await ready(page);
  // Every third request of the run gets the emulator's HTTP 500 (its /fault/ path prefix):
  // the run goes on, the failures are classified, the rest are measured. The failing server
  // quotes the key back in its body (/echo-key), as careless servers do: the history, the
  // exports and the permalink below must hold none of it.
  let n = 0;
  await page.route(`${emu.base}/v1/chat/completions`, (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    n += 1;
    if (n % 3 === 0) return route.continue({ url: `${emu.base}/echo-key/fault/status:500/v1/chat/completions` });
    return route.continue();
  });
  await fillForm(page, { preset: 'custom', url: emu.base, model: 'emu', key: SECRET, concurrency: '1,2', requests: 6, warmup: 0, maxTokens: 16 });
  await runAndWait(page);

  const summary = await cards(page);
  assert.ok(figure(summary['output-tps'].value) > 0, JSON.stringify(summary));
  assert.ok(figure(summary.ttft.value) >= 20, 'the emulator waits 20 ms before the first token');
  assert.match(summary['output-tps'].detail, /tok\/s\)/, 'a reading-speed band');
  assert.match(summary['output-tps'].detail, /3,000-word answer takes/);
  const [, ok, failed] = /(\d+) ok, (\d+) failed/.exec(summary.e2e.detail);
  assert.equal(Number(ok) + Number(failed), 12);
  assert.ok(Number(failed) >= 1 && Number(ok) >= 6, summary.e2e.detail);
  const errorRows = await page.locator('#error-table tbody tr').allInnerTexts();
  assert.equal(errorRows.length, Number(failed));
  assert.ok(errorRows.every((r) => r.includes('http_5xx') && r.includes('500')), errorRows.join('\n'));
  assert.equal(await page.locator('#results table').first().locator('tbody tr').count(), 2, 'one row per level');
  const ink = await chartInk(page);
  assert.deepEqual(ink.map((c) => c.caption.split(':')[0]), ['Output tokens per second against load', 'Time to first token', 'Inter-token latency (gaps between chunks)', 'Token timelines']);
  for (const c of ink) assert.ok(c.pixels > 40, `${c.caption} drew ${c.pixels} pixels of its series`);
  assertNoConsoleErrors(page, [/status of 500/]);
  await assertClean(page);

  let exported;
  await t.test('export JSON then import it gives the same report', async () => {
    exported = await downloadText(page, () => page.getByRole('button', { name: 'Export JSON' }).click());
    assert.ok(!exported.text.includes(SECRET), 'the key is in the export');
    const report = JSON.parse(exported.text);
    assert.equal(report.requests.length, 12);
    await page.locator('#import').setInputFiles({ name: exported.name, mimeType: 'application/json', buffer: Buffer.from(exported.text) });
    // The run shown before is done too: wait for the imported one to replace it.
    await page.waitForFunction(() => /import/.test(document.querySelector('#results .hint')?.textContent ?? ''));
    await page.waitForSelector('#results [data-status=done]');
    assert.deepEqual(await cards(page), summary);
    const again = await downloadText(page, () => page.getByRole('button', { name: 'Export JSON' }).click());
    assert.deepEqual(JSON.parse(again.text), report);
  });

  await t.test('export CSV then import it gives the same rows', async () => {
    const csv = await downloadText(page, () => page.getByRole('button', { name: 'Export CSV' }).click());
    assert.ok(!csv.text.includes(SECRET));
    const [header, ...rows] = csvRecords(csv.text);
    // The core's CSV (what `tpsmeter bench --csv` writes), not a page-made one.
    assert.deepEqual(header, CORE_CSV_COLUMNS);
    assert.equal(rows.length, 12, 'a header and 12 requests');
    assert.ok(rows.every((r) => r.length === header.length));
    const error = header.indexOf('error_class');
    assert.ok(rows.filter((r) => r[error] === 'http_5xx').length >= 1);
    assert.ok(rows.some((r) => r[header.indexOf('painted_tps')] !== ''), 'the painted TPS of the rendered run');
    await page.locator('#import').setInputFiles({ name: csv.name, mimeType: 'text/csv', buffer: Buffer.from(csv.text) });
    await page.waitForFunction(() => document.querySelector('#results .hint')?.textContent?.includes('.csv'));
    const again = await downloadText(page, () => page.getByRole('button', { name: 'Export CSV' }).click());
    assert.equal(again.text, csv.text);
  });

  await t.test('a permalink reproduces the view and holds no key', async () => {
    // Open the browser run itself (the newest non-imported row).
    await page.locator('#history-table tbody tr', { hasText: 'done' }).filter({ hasNotText: 'import' }).first().getByRole('button').first().click();
    await page.getByRole('button', { name: 'Copy permalink' }).click();
    await page.waitForFunction(() => document.querySelector('#permalink')?.value);
    const link = await page.locator('#permalink').inputValue();
    assert.match(link, /#r=/);
    assert.ok(!link.includes(SECRET) && !link.includes(encodeURIComponent(SECRET)));
    const decoded = await page.evaluate(async (link) => {
      const b = atob(link.split('#r=')[1].replace(/-/g, '+').replace(/_/g, '/'));
      const bytes = Uint8Array.from(b, (c) => c.charCodeAt(0));
      return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'))).text();
    }, link);
    assert.ok(!decoded.includes(SECRET), 'the key is in the permalink report');
    const other = await site.browser.newPage(link);
    await ready(other);
    await other.waitForSelector('#results [data-status=done]');
    assert.deepEqual(await cards(other), summary);
    const otherInk = await chartInk(other);
    assert.equal(otherInk.length, 4);
    assertNoConsoleErrors(other);
    await other.close();
  });

  await t.test('runs compare side by side', async () => {
    const boxes = page.locator('#history-table tbody input[type=checkbox]');
    assert.ok((await boxes.count()) >= 2);
    await boxes.nth(0).check();
    await boxes.nth(1).check();
    await page.getByRole('button', { name: 'Compare selected' }).click();
    await page.waitForSelector('#compare-table');
    const header = await page.locator('#compare-table thead th').allInnerTexts();
    assert.equal(header.length, 3, header.join(' | '));
    // Both the CSV import and the JSON import show their figures (the same requests).
    const ttft = await page.locator('#compare-table tbody tr', { hasText: 'TTFT ms' }).locator('td').allInnerTexts();
    assert.equal(ttft.length, 2);
    for (const v of ttft) assert.ok(figure(v) >= 20, ttft.join(' | '));
    const okFailed = await page.locator('#compare-table tbody tr', { hasText: 'ok / failed' }).locator('td').allInnerTexts();
    assert.equal(okFailed[0], okFailed[1], 'the CSV rows and the report count the same requests');
    const ink = await chartInk(page, '#compare');
    assert.equal(ink.length, 1);
    assert.ok(ink[0].pixels > 40);
  });

  await t.test('nothing in this browser holds the key but memory', async () => {
    const stored = await page.evaluate(async () => {
      const out = [JSON.stringify({ ...localStorage })];
      const db = await new Promise((res, rej) => {
        const r = indexedDB.open('tpsmeter');
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      for (const store of db.objectStoreNames) {
        const all = await new Promise((res) => {
          const r = db.transaction(store).objectStore(store).getAll();
          r.onsuccess = () => res(r.result);
        });
        out.push(JSON.stringify(all));
      }
      return out.join('\n');
    });
    assert.ok(stored.length > 1000, 'history is in IndexedDB');
    assert.ok(!stored.includes(SECRET), 'the key was stored without the opt-in');
    // The echoing server's message is kept, with every run of 8+ characters of the key out
    // (from "r-test-S" on: the key's first windows, such as "tpsmeter", are also ordinary
    // words of the page's own data; the masked prefix is checked by the message itself).
    assert.match(stored, /Your key starts with REDACTED/);
    for (let i = 10; i + 8 <= SECRET.length; i++) assert.ok(!stored.includes(SECRET.slice(i, i + 8)), SECRET.slice(i, i + 8));
  });

  await t.test('remembering the key is an opt-in, kept apart from results', async () => {
    await page.getByLabel(/Remember the key/).check();
    await runAndWait(page);
    const where = await page.evaluate(() => Object.entries(localStorage).filter(([, v]) => v.includes('SECRET')).map(([k]) => k));
    assert.deepEqual(where, [`tpsmeter.key.${emu.base}`], 'remembered for the API origin it goes to');
    const exported = await downloadText(page, () => page.getByRole('button', { name: 'Export JSON' }).click());
    assert.ok(!exported.text.includes(SECRET));
    await page.reload();
    await ready(page);
    assert.equal(await page.getByLabel('API key').inputValue(), SECRET, 'remembered across a reload');
    // The key never follows the URL to another server (a link or an edit that changes it).
    await page.getByLabel('Base URL').fill('http://127.0.0.1:1');
    assert.equal(await page.getByLabel('API key').inputValue(), '', 'the key stayed with its origin');
    await page.goto(`${site.origin}/?preset=custom&url=${encodeURIComponent('https://api.openai.com')}`);
    await ready(page);
    assert.equal(await page.getByLabel('API key').inputValue(), '');
    assert.match(await page.locator('#form-notices').innerText(), /link you opened filled in/);
    await page.goto(`${site.origin}/?url=${encodeURIComponent(emu.base)}`);
    await ready(page);
    assert.equal(await page.getByLabel('API key').inputValue(), SECRET, 'back on its own origin');
    await page.getByLabel(/Remember the key/).uncheck();
    assert.equal(await page.evaluate((k) => localStorage.getItem(k), `tpsmeter.key.${emu.base}`), null, 'forgotten when unticked');
  });
});

test('a sweep of synthetic input lengths runs one benchmark per length and compares them', async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const emu = await emulator(t, { ttftMs: 5, itlMs: 2, tokens: 16 });
  if (!emu) return;
  t.after(() => emu.stop());
  const page = await site.page('/');
  await ready(page);
  await fillForm(page, { preset: 'custom', url: emu.base, model: 'emu', concurrency: '1', requests: 2, warmup: 0, maxTokens: 8 });
  await page.getByLabel('Synthetic inputs of given lengths').check();
  await page.getByLabel('Input lengths (tokens)').fill('64,512');
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await page.waitForSelector('#compare:not([hidden]) #compare-table', { timeout: 120_000 });
  const header = await page.locator('#compare-table thead th').allInnerTexts();
  assert.deepEqual(header.slice(1).map((h) => /(\d+) input tokens/.exec(h)?.[1]), ['64', '512']);
  // Each run's report says what it sent: a synthesised prompt of that many tokens.
  const prompts = (await storedReports(page)).map((r) => r.config.prompt).sort((a, b) => a.input_tokens - b.input_tokens);
  assert.deepEqual(prompts.map((p) => [p.kind, p.input_tokens]), [['synthetic', 64], ['synthetic', 512]]);

  // A dataset file picked in the form: its entries are the prompts, read in the tab, and the
  // results name the file and its SHA-256.
  const dataset = '{"prompt": "Tell me about rivers."}\n{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}\n';
  await page.getByLabel('A dataset (JSON Lines or ShareGPT JSON)').check();
  await page.locator('#f-dataset-file').setInputFiles({ name: 'mine.jsonl', mimeType: 'application/json', buffer: Buffer.from(dataset) });
  await runAndWait(page);
  const sha256 = createHash('sha256').update(dataset).digest('hex');
  assert.equal(await page.locator('#dataset').innerText(), `Dataset mine.jsonl: 2 entries (jsonl), SHA-256 ${sha256}`);
  assertNoConsoleErrors(page);
  await assertClean(page);
});

test('a named workload, a tokenizer file and three turns: the run records them, charts TTFT by turn and splits the wait before it', async (t) => {
  const model = asset(t, 'TPSMETER_MODEL');
  if (!model) return;
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const emu = await emulator(t, { ttftMs: 5, itlMs: 1, tokens: 8 });
  if (!emu) return;
  t.after(() => emu.stop());
  const page = await site.page('/');
  await ready(page);
  await fillForm(page, { preset: 'custom', url: emu.base, model: 'emu', concurrency: '1', requests: 6, warmup: 0 });
  await page.getByLabel('A named workload (input and output sizes of published benchmarks)').check();
  await page.locator('#f-workload').selectOption('llmperf');
  // The GGUF picked as the tokenizer: read in the tab by ranges (its header), never uploaded.
  await page.locator('#f-tokenizer-file').setInputFiles(model);
  await page.getByLabel('Turns per conversation').fill('3');
  await runAndWait(page);
  const [report] = (await storedReports(page)).slice(-1);
  assert.equal(report.config.workload, 'llmperf');
  assert.equal(report.config.turns, 3);
  assert.equal(report.config.prompt.tokenizer, path.basename(model));
  assert.equal(report.config.prompt.input_tokens, 550);
  assert.equal(report.config.max_tokens, 150, "the workload's output cap");
  assert.deepEqual(report.turns.map((x) => x.turn), [1, 2, 3]);
  assert.deepEqual(report.requests.map((r) => r.turn), [1, 2, 3, 1, 2, 3]);
  // The chart: one point per turn in its text alternative, the same TTFT p50s as the report,
  // and its line drawn.
  const turnFigure = page.locator('#results figure.chart', { hasText: 'Time to first token by turn of the conversation' });
  const label = await turnFigure.locator('[role=img]').getAttribute('aria-label');
  t.diagnostic(label);
  for (const x of report.turns) assert.ok(label.includes(`turn ${x.turn} ${x.ttft_ms_p50.toFixed(1)} ms`), `${label} lacks turn ${x.turn}`);
  const ink = (await chartInk(page)).find((c) => c.caption === 'Time to first token by turn of the conversation');
  assert.ok(ink && ink.pixels > 0, JSON.stringify(ink));
  // The level table splits the wait before the first byte as the report does: connect
  // and server wait, from Resource Timing (the emulator sends Timing-Allow-Origin).
  const levels = page.locator('#results table').first();
  const head = await levels.locator('thead th').allInnerTexts();
  const row = await levels.locator('tbody tr').first().locator('td').allInnerTexts();
  for (const [column, key] of [['connect ms p50/p99', 'connect_ms'], ['server wait ms p50/p99', 'wait_ms']]) {
    const stat = report.levels[0].summary[key];
    assert.ok(stat && Number.isFinite(stat.p50), `${key}: ${JSON.stringify(stat)}`);
    const shown = row[head.indexOf(column) - 1];
    assert.ok(Math.abs(figure(shown.split(' / ')[0]) - stat.p50) <= 0.05 + 0.005 * stat.p50, `${column}: ${shown} vs ${stat.p50}`);
  }
  // The form kept the choices for the next visit.
  await page.reload();
  await ready(page);
  assert.equal(await page.locator('#f-workload').inputValue(), 'llmperf');
  assert.equal(await page.getByLabel('Turns per conversation').inputValue(), '3');
  assertNoConsoleErrors(page);
  await assertClean(page);
});

test("'Find the knee' searches for the highest concurrency within the SLO and shows the curve in order of load", async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  // Answers of 10 ms + 15 × 8 ms on 2 stream slots (the /max-streams/2 path prefix): beyond
  // 2 streams a request waits ~130 ms for a slot, past the 70 ms TTFT limit.
  const emu = await emulator(t, { ttftMs: 10, itlMs: 8, tokens: 16 });
  if (!emu) return;
  t.after(() => emu.stop());
  const page = await site.page('/');
  await ready(page);
  await fillForm(page, { preset: 'custom', url: `${emu.base}/max-streams/2`, model: 'emu', concurrency: '1,8', warmup: 0, maxTokens: 16 });
  await page.getByLabel(/Find the knee/).check();
  // Without an SLO the run spec refuses the search, in the form's words: the CLI's sentence
  // (tests/fixtures/option-rules.json), before anything is sent.
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await page.locator('#form-notices .notice.bad').first().waitFor();
  assert.equal(
    await page.locator('#form-notices').innerText(),
    '“Find the knee” needs “Service-level objectives”: each level is judged by it, e.g. ttft=500ms,tpot=50ms.',
  );
  await page.getByLabel('Service-level objectives (optional)').fill('ttft=70ms');
  await runAndWait(page);
  const verdict = page.locator('#find-max');
  assert.equal(await verdict.getAttribute('data-max-load'), 'c=2', await verdict.innerText());
  assert.equal(await verdict.getAttribute('data-stop'), 'slo_broken');
  // The search started from the first level (1, not 8) and ran 1, 2, 4, 3: the table reads
  // in order of load, each level marked.
  const rows = await page.locator('#results table').first().locator('tbody th').allInnerTexts();
  assert.deepEqual(rows, ['c=1 ✓', 'c=2 ✓', 'c=3 ✗', 'c=4 ✗']);
  assertNoConsoleErrors(page);
  await assertClean(page);
});

test("a CLI report (tpsmeter bench --json) opens in the page and compares with a browser run", async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const cli = asset(t, 'TPSMETER_CLI_BIN');
  const emu = cli && (await emulator(t, { ttftMs: 10, itlMs: 3, tokens: 16 }));
  if (!emu) return;
  t.after(() => emu.stop());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-cli-report-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const json = path.join(dir, 'cli.json');
  await run(cli, ['bench', '--api', 'openai-chat', '--url', emu.base, '--model', 'emu', '--concurrency', '1,2', '--requests', '4', '--max-tokens', '16', '--json', json]);
  const report = JSON.parse(fs.readFileSync(json, 'utf8'));

  const page = await site.page('/');
  await ready(page);
  await fillForm(page, { preset: 'custom', url: emu.base, model: 'emu', concurrency: '1,2', requests: 4, warmup: 0, maxTokens: 16 });
  await runAndWait(page);
  await page.locator('#import').setInputFiles(json);
  await page.waitForFunction(() => document.querySelector('#results .hint')?.textContent?.includes('cli.json'));
  const summary = await cards(page);
  const [, ok] = /(\d+) ok/.exec(summary.e2e.detail);
  assert.equal(Number(ok), report.requests.filter((r) => !r.error && !r.warmup).length);
  // The card shows the CLI's own p50 at three significant digits.
  const p50 = report.levels[0].summary.ttft_ms.p50;
  assert.ok(Math.abs(figure(summary.ttft.value) - p50) <= 0.005 * p50 + 0.05, `${summary.ttft.value} vs ${p50}`);
  assert.match(summary['painted-tps'].detail, /Not measured/, 'a CLI run has no paint times');
  const boxes = page.locator('#history-table tbody input[type=checkbox]');
  await boxes.nth(0).check();
  await boxes.nth(1).check();
  await page.getByRole('button', { name: 'Compare selected' }).click();
  await page.waitForSelector('#compare-table');
  const sources = await page.locator('#compare-table tbody tr').first().locator('td').allInnerTexts();
  assert.equal(sources.length, 2);
  assert.ok(sources.some((s) => s.startsWith('CLI')) && sources.includes('this browser'), sources.join(' | '));
  assertNoConsoleErrors(page);
  await assertClean(page);
});

test('a reload in the middle of a run keeps the finished requests', async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const emu = await emulator(t, {});
  if (!emu) return;
  t.after(() => emu.stop());
  const page = await site.page('/');
  await ready(page);
  // ~1.2 s per request (30 tokens, 40 ms apart), so the reload lands mid-run.
  await fillForm(page, { preset: 'custom', url: `${emu.base}/pace/5,40,30`, model: 'emu', concurrency: '1', requests: 8, warmup: 0, maxTokens: 30 });
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await page.waitForFunction(() => /^(2|3) finished requests kept/.test(document.querySelector('#kept')?.textContent ?? ''), null, { timeout: 60_000 });
  const kept = Number.parseInt(await page.locator('#kept').innerText(), 10);
  await page.reload();
  await ready(page);
  await page.waitForSelector('#results [data-status=interrupted]');
  assert.match(await page.locator('#results .notice').first().innerText(), /interrupted/);
  const summary = await cards(page);
  const [, ok] = /(\d+) ok/.exec(summary.e2e.detail);
  assert.ok(Number(ok) >= kept && Number(ok) < 8, `${ok} kept, ${kept} said kept before the reload`);
  assert.ok(figure(summary['output-tps'].value) > 0);
  assert.match(await page.locator('#history-table tbody tr').first().innerText(), /interrupted/);
  await assertClean(page);
});

test('the Content-Security-Policy blocks an origin the user did not approve', async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const page = await site.page('/');
  await ready(page);
  // 127.0.0.2 is loopback too, but not on the list (the list has localhost and 127.0.0.1).
  const offList = 'http://127.0.0.2:45678';
  // Fetches `url`, then an origin that is always off the list (the sentinel): violations are
  // reported in order, so once the sentinel's arrives, any for `url` has arrived too.
  const sentinel = 'http://127.0.0.3:45678';
  const tryFetch = (url) =>
    page.evaluate(
      async ({ url, sentinel }) => {
        const violations = [];
        let sawSentinel;
        const seen = new Promise((r) => (sawSentinel = r));
        const listen = (e) => {
          if (e.blockedURI.includes('127.0.0.3')) sawSentinel();
          else violations.push({ blocked: e.blockedURI, directive: e.effectiveDirective });
        };
        document.addEventListener('securitypolicyviolation', listen);
        let error = '';
        try {
          await fetch(`${url}/v1/models`);
        } catch (e) {
          error = String(e);
        }
        await fetch(`${sentinel}/x`).catch(() => {});
        await seen;
        document.removeEventListener('securitypolicyviolation', listen);
        return { violations, error };
      },
      { url, sentinel },
    );
  const blocked = await tryFetch(offList);
  assert.ok(blocked.error, 'the fetch failed');
  assert.deepEqual(blocked.violations.map((v) => v.directive), ['connect-src']);
  assert.match(blocked.violations[0].blocked, /127\.0\.0\.2/);

  // The form explains the list and offers to add the origin.
  await fillForm(page, { preset: 'custom', url: offList, model: 'm' });
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  const allow = page.getByRole('button', { name: `Allow ${offList} and reload` });
  await allow.waitFor();
  assert.match(await page.locator('#form-notices').innerText(), /Content-Security-Policy/);
  await Promise.all([page.waitForEvent('load'), allow.click()]);
  await ready(page);
  assert.equal(await page.getByLabel('Base URL').inputValue(), offList, 'the form survived the reload');
  const csp = await page.evaluate(() => [...document.querySelectorAll('meta[http-equiv=Content-Security-Policy]')].map((m) => m.content).join('\n'));
  assert.ok(csp.includes(offList), csp);
  const allowed = await tryFetch(offList);
  assert.deepEqual(allowed.violations, [], 'approved: no violation (the fetch fails only because nothing listens there)');
  // Expected: the blocked attempt (named by the CSP message) and the approved one, refused
  // because nothing listens there.
  assertNoConsoleErrors(page, [/127\.0\.0\.[23]/, /ERR_CONNECTION_REFUSED/]);
});

test('the built site carries _headers for static hosts, and its service worker does not precache it', (t) => {
  const dir = siteDir(t);
  if (!dir) return;
  // Netlify and Cloudflare Pages read _headers and do not serve it: a precache entry for it
  // would 404 there and fail the worker's install (no offline site).
  const headers = fs.readFileSync(path.join(dir, '_headers'), 'utf8');
  assert.match(headers, /^\/\*\n {2}Cross-Origin-Opener-Policy: same-origin$/m);
  assert.match(headers, /^ {2}Cross-Origin-Embedder-Policy: require-corp$/m);
  const sw = fs.readFileSync(path.join(dir, 'sw.js'), 'utf8');
  assert.ok(sw.includes('index.html') && sw.includes('demo.html'), 'the precache list is in sw.js');
  assert.ok(!sw.includes('_headers'), 'sw.js does not precache _headers');
});

test('the site keeps working offline after the first load', async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const page = await site.page('/');
  await ready(page);
  await page.evaluate(async () => {
    await navigator.serviceWorker.ready;
  });
  // The worker controls pages loaded after it activated.
  await page.reload();
  await ready(page);
  assert.ok(await page.evaluate(() => navigator.serviceWorker.controller !== null), 'a service worker controls the page');
  await site.browser.context.setOffline(true);
  for (const [path, h1] of [['/', /measured where you read them/], ['/demo.html', /on your own computer/]]) {
    const p = await site.browser.newPage(`${site.origin}${path}`);
    await p.waitForSelector('body[data-ready=true]', { timeout: 20_000 });
    assert.match(await p.locator('h1').innerText(), h1, `${path} is itself offline`);
    await assertClean(p);
    await p.close();
  }
});

test('every view of the benchmark page: accessible, responsive, light and dark (screenshots saved)', async (t) => {
  const site = await staticSite(t);
  if (!site) return;
  t.after(() => site.close());
  const emu = await emulator(t, { ttftMs: 10, itlMs: 3, tokens: 32 });
  if (!emu) return;
  t.after(() => emu.stop());
  const page = await site.page('/');
  await ready(page);
  const problems = [...(await checkView(page, 'bench-start'))];
  await fillForm(page, { preset: 'custom', url: emu.base, model: 'emu', concurrency: '1,2,4', requests: 4, warmup: 0, maxTokens: 24 });
  await runAndWait(page);
  problems.push(...(await checkView(page, 'bench-results')));
  await fillForm(page, { concurrency: '1,2' });
  await runAndWait(page);
  const boxes = page.locator('#history-table tbody input[type=checkbox]');
  await boxes.nth(0).check();
  await boxes.nth(1).check();
  await page.getByRole('button', { name: 'Compare selected' }).click();
  await page.waitForSelector('#compare-table');
  problems.push(...(await checkView(page, 'bench-compare')));
  assert.deepEqual(problems, []);
  assertNoConsoleErrors(page);
  await assertClean(page);
});
