// The built site (`cargo xtask www` → target/www, passed as TPSMETER_WWW_DIR) in Chromium:
// served statically (COOP + COEP, as a host that follows the README would) or by
// `tpsmeter serve --www`, with helpers that read what the page shows.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { launchBrowser } from './browser.mjs';
import { asset, env } from './env.mjs';
import { freePort, startServer } from './servers.mjs';
import { serveStatic } from './server.mjs';

/** The built site's directory, or undefined after skipping (failing, in CI) `t`. */
export function siteDir(t) {
  const dir = process.env.TPSMETER_WWW_DIR;
  if (dir && fs.existsSync(path.join(dir, 'index.html'))) return dir;
  const why = dir ? `TPSMETER_WWW_DIR=${dir} has no index.html` : 'TPSMETER_WWW_DIR is not set';
  if (env.requireAssets) throw new Error(`${why} (TPSMETER_REQUIRE_ASSETS=1: required)`);
  t.skip(`${why}; run \`cargo xtask www\` or \`cargo xtask browser-test\``);
  return undefined;
}

/** The site on a static server, and a browser. Resolves to { origin, browser, page(path), close() }. */
export async function staticSite(t, opts = {}) {
  const dir = siteDir(t);
  if (!dir) return undefined;
  const server = await serveStatic({ '/': dir });
  const browser = await launchBrowser(t, opts);
  if (!browser) {
    await server.close();
    return undefined;
  }
  return {
    origin: server.origin,
    browser,
    page: (pathname = '/') => browser.newPage(`${server.origin}${pathname}`),
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/**
 * The site served by `tpsmeter serve --www` beside SmolLM2 on our engine, and a browser
 * (opts: launchBrowser's). Both stop after `t`. Resolves to { model, server, browser }, or
 * undefined after skipping `t`.
 */
export async function servedSite(t, opts = {}) {
  const dir = siteDir(t);
  const cli = asset(t, 'TPSMETER_CLI_BIN');
  const model = asset(t, 'TPSMETER_MODEL');
  if (!dir || !cli || !model) return undefined;
  const port = await freePort();
  const server = await startServer(cli, ['serve', '--model', model, '--www', dir, '--port', String(port)], port, '/health');
  t.after(() => server.stop());
  const browser = await launchBrowser(t, opts);
  if (!browser) return undefined;
  t.after(() => browser.close());
  return { model, server, browser };
}

/** Where screenshots go (CI keeps target/artifacts). */
export function artifactsDir() {
  const dir = path.join(process.env.TPSMETER_ARTIFACTS ?? path.join(process.cwd(), 'target', 'artifacts'), 'www');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Fails on console errors (CSP violations, failed loads, exceptions logged by the page). */
export function assertNoConsoleErrors(page, allow = []) {
  const errors = page.consoleLines.filter((l) => l.startsWith('error:') && !allow.some((a) => a.test(l)));
  assert.deepEqual(errors, [], 'console errors in the page');
}

/** Waits until the benchmark page finished starting (history read, permalink opened). */
export async function ready(page) {
  await page.waitForSelector('body[data-ready=true]', { timeout: 60_000 });
}

/**
 * Fills the run form. `fields`: { preset, url, model, key, concurrency, requests, warmup,
 * maxTokens } (those given).
 */
export async function fillForm(page, fields) {
  if (fields.preset) await page.getByLabel('Provider').selectOption(fields.preset);
  if (fields.url !== undefined) await page.getByLabel('Base URL').fill(fields.url);
  if (fields.model !== undefined) await page.getByLabel('Model', { exact: true }).fill(fields.model);
  if (fields.key !== undefined) await page.getByLabel('API key').fill(fields.key);
  if (fields.concurrency !== undefined) await page.getByLabel('Concurrency levels').fill(fields.concurrency);
  if (fields.requests !== undefined) await page.getByLabel('Requests per level', { exact: true }).fill(String(fields.requests));
  if (fields.warmup !== undefined) await page.getByLabel('Warm-up requests per level').fill(String(fields.warmup));
  if (fields.maxTokens !== undefined) await page.getByLabel('Max output tokens').fill(String(fields.maxTokens));
}

/** Clicks Run and waits for the results of that run. */
export async function runAndWait(page, timeout = 120_000) {
  const before = await page.locator('#results').getAttribute('data-shown').catch(() => null);
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  await page.waitForFunction(
    (before) => {
      const r = document.querySelector('#results');
      return r && !r.hidden && document.querySelector('#results-body [data-status=done], #results-body [data-status=cancelled]') && r.dataset.shown !== before;
    },
    before,
    { timeout },
  );
}

/** The summary cards as { metric: { value, detail } }. */
export function cards(page) {
  return page.evaluate(() =>
    Object.fromEntries(
      [...document.querySelectorAll('#results #summary-cards [data-summary]')].map((c) => [
        c.dataset.summary,
        { value: c.querySelector('.figure')?.textContent ?? '', detail: [...c.querySelectorAll('.detail')].map((d) => d.textContent).join(' | ') },
      ]),
    ),
  );
}

/**
 * For each chart under `selector`: its caption and how many of its canvas pixels are drawn
 * in the first series' colour (the page's --series-1). uPlot draws the axes and grid on the
 * same canvas, in other colours; a chart without data has none of these pixels.
 */
export function chartInk(page, selector = '#results') {
  return page.evaluate((selector) => {
    const hex = getComputedStyle(document.documentElement).getPropertyValue('--series-1').trim();
    const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    return [...document.querySelectorAll(`${selector} figure.chart`)].map((fig) => {
      const caption = fig.querySelector('figcaption')?.textContent ?? '';
      const canvas = fig.querySelector('canvas');
      if (!canvas || canvas.width === 0 || canvas.height === 0) return { caption, pixels: 0 };
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      let pixels = 0;
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] > 200 && Math.abs(data[i] - want[0]) + Math.abs(data[i + 1] - want[1]) + Math.abs(data[i + 2] - want[2]) < 60) pixels++;
      }
      return { caption, pixels };
    });
  }, selector);
}

/** The text of a download the page starts with `click()`. */
export async function downloadText(page, click) {
  const [download] = await Promise.all([page.waitForEvent('download'), click()]);
  const file = await download.path();
  return { name: download.suggestedFilename(), text: fs.readFileSync(file, 'utf8') };
}

/** Runs axe-core in the page; resolves to its serious and critical violations. */
export async function axeViolations(page) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (a
  // <script> tag would be blocked by script-src 'self', as it should be).
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() =>
    window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } }),
  );
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
}

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export const VIEWPORTS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } };

/**
 * Every combination of width and colour scheme: a full-page screenshot into the artifacts,
 * no horizontal scrolling, and axe-core's serious / critical findings (none allowed).
 */
export async function checkView(page, name) {
  const problems = [];
  for (const [width, viewport] of Object.entries(VIEWPORTS)) {
    for (const scheme of ['light', 'dark']) {
      await page.setViewportSize(viewport);
      await page.emulateMedia({ colorScheme: scheme });
      // Charts resize on the next frame; two frames settle layout before measuring.
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      await page.screenshot({ path: path.join(artifactsDir(), `${name}-${width}-${scheme}.png`), fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (overflow > 1) problems.push(`${name} ${width} ${scheme}: ${overflow} px wider than the window`);
      for (const v of await axeViolations(page)) problems.push(`${name} ${width} ${scheme}: ${v}`);
    }
  }
  await page.setViewportSize(VIEWPORTS.desktop);
  await page.emulateMedia({ colorScheme: 'light' });
  return problems;
}

