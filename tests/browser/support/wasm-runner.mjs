#!/usr/bin/env node
// A cargo runner for wasm32 tests in Firefox ESR or WebKitGTK (TPSMETER_WASM_ENGINE):
// `wasm-bindgen-test-runner` serves the test page (NO_HEADLESS=1, on a free port) and this
// drives Debian's browser to it (Firefox through puppeteer-core over WebDriver BiDi, WebKit
// through WebKitWebDriver: ./webdriver.mjs), then prints the page's output and exits with
// the tests' result. wasm-bindgen-test-runner drives Firefox only through geckodriver,
// which Debian does not package (building it from crates.io costs a fresh CI machine
// minutes), and WebKit only as Safari. Used by `cargo xtask browser-test` ("CPU kernels in
// Firefox and WebKit"):
//   CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=tests/browser/support/wasm-runner.mjs
// with WASM_BINDGEN_TEST_RUNNER (the runner binary) set, and DISPLAY for WebKit.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const runner = process.env.WASM_BINDGEN_TEST_RUNNER;
const firefox = process.env.TPSMETER_FIREFOX || '/usr/bin/firefox-esr';
const timeoutMs = Number(process.env.WASM_BINDGEN_TEST_TIMEOUT || 600) * 1000;
if (!runner) {
  console.error('wasm-runner: WASM_BINDGEN_TEST_RUNNER (the wasm-bindgen-test-runner binary) is not set');
  process.exit(2);
}

const port = await new Promise((resolve) => {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1', () => {
    const { port } = srv.address();
    srv.close(() => resolve(port));
  });
});
const address = `127.0.0.1:${port}`;
const child = spawn(runner, process.argv.slice(2), {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, NO_HEADLESS: '1', WASM_BINDGEN_TEST_ADDRESS: address },
});
const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
// The runner says where the page is once it serves it; a test binary with no browser tests
// (or a build error) exits instead.
const served = await new Promise((resolve) => {
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
    if (/http:\/\/\S+/.test(out)) resolve(true);
  });
  exited.then(() => resolve(false));
});
if (!served) process.exit((await exited) ?? 1);

const engine = process.env.TPSMETER_WASM_ENGINE || 'firefox';
/** Opens the test page; resolves to { text(): the page's text, close() }. */
async function open(url) {
  if (engine === 'webkit') {
    const { startWebKit } = await import('./webdriver.mjs');
    const session = await startWebKit();
    await session.navigate(url);
    return { text: () => session.run('() => document.body.innerText', []), close: () => session.quit() };
  }
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-wasm-firefox-'));
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath: firefox, headless: true, userDataDir: profile, protocolTimeout: timeoutMs + 60_000 });
  const page = await browser.newPage();
  await page.goto(url);
  return {
    text: () => page.evaluate(() => document.body.innerText),
    async close() {
      await browser.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

let code = 1;
let page;
try {
  page = await open(`http://${address}/`);
  // The page writes the libtest-style summary when every test has run.
  const deadline = Date.now() + timeoutMs;
  let text = '';
  while (!/test result: (ok|FAILED)/.test(text)) {
    if (Date.now() > deadline) throw new Error(`no test result within ${timeoutMs / 1000} s; the page says:\n${text}`);
    await new Promise((r) => setTimeout(r, 250));
    text = (await page.text()) ?? '';
  }
  process.stdout.write(`${engine}: ${text.trim()}\n`);
  code = /test result: ok/.test(text) ? 0 : 1;
} catch (e) {
  console.error(`wasm-runner (${engine}): ${e.message}`);
} finally {
  await page?.close();
  child.kill('SIGINT');
  await exited;
}
process.exit(code);
