// The README's main job, headless: opens the benchmark page in headless Chromium (Debian's,
// through playwright-core; never a downloaded browser), runs the benchmark it is given
// against the server the page came from, and prints the summary the page shows.
//
//   node www/scripts/drive.mjs http://127.0.0.1:8080/ concurrency=1,2 requests=8 maxTokens=64
//
// Settings are the page's form fields (its query parameters prefill them); the run starts
// with a click on "Run benchmark", as a person would start it.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const [site, ...pairs] = process.argv.slice(2);
if (!site) {
  console.error('usage: node www/scripts/drive.mjs <site url> [field=value ...]');
  process.exit(2);
}
const query = new URLSearchParams({ preset: 'this-server' });
for (const p of pairs) {
  const i = p.indexOf('=');
  if (i > 0) query.set(p.slice(0, i), p.slice(i + 1));
}
const executablePath = process.env.TPSMETER_CHROMIUM ?? '/usr/bin/chromium';
if (!fs.existsSync(executablePath)) {
  console.error(`no Chromium at ${executablePath} (cargo xtask setup installs Debian's)`);
  process.exit(1);
}
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-drive-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
const problems = [];
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  const url = new URL(site);
  url.search = query.toString();
  await page.goto(url.href);
  await page.waitForSelector('body[data-ready=true]', { timeout: 60_000 });
  await page.getByRole('button', { name: 'Run benchmark' }).click();
  const outcome = await Promise.race([
    page.waitForSelector('#results:not([hidden]) #summary-cards', { timeout: 30 * 60_000 }).then(() => 'done'),
    page.waitForSelector('#form-notices [role=alert]', { timeout: 30 * 60_000 }).then(() => 'failed'),
  ]);
  if (outcome === 'failed') {
    console.error(`the page refused the run: ${await page.locator('#form-notices').innerText()}`);
    process.exitCode = 1;
  } else {
    const summary = await page.evaluate(() => {
      const text = (e) => (e?.textContent ?? '').replace(/\s+/g, ' ').trim();
      const cards = [...document.querySelectorAll('#summary-cards [data-summary]')].map((c) => ({
        label: text(c.querySelector('.label')),
        value: text(c.querySelector('.value')),
        detail: [...c.querySelectorAll('.detail')].map(text).filter(Boolean).join(' · '),
      }));
      const rows = [...document.querySelectorAll('#results table')][0];
      const table = rows ? [...rows.querySelectorAll('tr')].map((tr) => [...tr.children].map(text)) : [];
      const warnings = [...document.querySelectorAll('#warnings [data-warning]')].map(text);
      const errors = document.querySelectorAll('#error-table tbody tr').length;
      return { cards, table, warnings, errors, where: text(document.querySelector('#results .hint')) };
    });
    console.log(summary.where);
    for (const c of summary.cards) console.log(`  ${c.label.padEnd(30)} ${c.value.padEnd(14)} ${c.detail}`);
    if (summary.table.length > 0) {
      const widths = summary.table[0].map((_, j) => Math.max(...summary.table.map((r) => (r[j] ?? '').length)));
      for (const r of summary.table) console.log('  ' + r.map((c, j) => (j === 0 ? c.padEnd(widths[j]) : c.padStart(widths[j]))).join('  '));
    }
    for (const w of summary.warnings) console.log(`  warning: ${w}`);
    if (summary.errors > 0) console.log(`  ${summary.errors} failed requests (see the page's error table)`);
  }
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exitCode = 1;
}
