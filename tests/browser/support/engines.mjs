// The three browser engines behind one small page interface, so that a test written once
// runs in each: Chromium through playwright-core (./browser.mjs), Firefox ESR through
// puppeteer-core over WebDriver BiDi, WebKitGTK through WebKitWebDriver (./webdriver.mjs).
// Every browser is Debian's; none is downloaded.
//
// The interface is what a test needs of a page and no more: goto, evaluate, waitFor (polls a
// page function), reload, errors. Forms are filled and buttons clicked by page functions
// (./page-actions.mjs) that set values and dispatch the events a user's input dispatches:
// the same code path in all three engines. Playwright's own locators stay in the
// Chromium-only suites, with real input events.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser } from './browser.mjs';
import { env } from './env.mjs';
import { MINIBROWSER, startWebKit, WEBKIT_DRIVER } from './webdriver.mjs';

export const ENGINES = ['chromium', 'firefox', 'webkit'];

/** The engines to test: TPSMETER_ENGINES (comma-separated), else all three. */
export function engines() {
  const asked = (process.env.TPSMETER_ENGINES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const bad = asked.filter((e) => !ENGINES.includes(e));
  if (bad.length) throw new Error(`TPSMETER_ENGINES names ${bad.join(', ')}: the engines are ${ENGINES.join(', ')}`);
  return asked.length ? asked : ENGINES;
}

/** Each engine's binary, for the skip message. */
function binaryOf(name) {
  if (name === 'chromium') return env.chromium;
  if (name === 'firefox') return env.firefox;
  return fs.existsSync(WEBKIT_DRIVER) ? MINIBROWSER : WEBKIT_DRIVER;
}

/** Installed in every page: uncaught errors and unhandled rejections, kept for errors(). */
function recordErrors() {
  if (window.__errors) return;
  window.__errors = [];
  const text = (e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));
  window.addEventListener('error', (e) => window.__errors.push(text(e.error ?? e.message)));
  window.addEventListener('unhandledrejection', (e) => window.__errors.push(text(e.reason)));
}

/**
 * Launches engine `name`; resolves to { name, version, newPage(url?), close() }, or
 * undefined after skipping `t` (failing it, with TPSMETER_REQUIRE_ASSETS=1) where the
 * browser is not installed. WebKitGTK needs a display (Xvfb: `cargo xtask browser-test`
 * starts one).
 */
export async function launchEngine(t, name) {
  const binary = binaryOf(name);
  let why;
  if (!fs.existsSync(binary)) why = `no ${name} at ${binary} (cargo xtask setup installs the three engines)`;
  else if (name === 'webkit' && !process.env.DISPLAY) why = 'WebKitGTK needs a display: set DISPLAY (cargo xtask browser-test starts Xvfb)';
  if (why) {
    if (env.requireAssets) throw new Error(why);
    t.skip(why);
    return undefined;
  }
  if (name === 'chromium') return launchChromium(t);
  if (name === 'firefox') return launchFirefox();
  return launchWebKit();
}

async function launchChromium(t) {
  const browser = await launchBrowser(t);
  if (!browser) return undefined;
  const version = browser.context.browser()?.version() ?? 'unknown';
  return {
    name: 'chromium',
    version,
    async newPage(url) {
      const page = await browser.newPage();
      return wrap({
        goto: (u) => page.goto(u).then(() => page.evaluate(recordErrors)),
        evaluate: (fn, arg) => page.evaluate(fn, arg),
        url: () => page.url(),
        close: () => page.close(),
        // Playwright sees errors thrown before any script of ours could listen.
        early: () => page.errors,
      }, url);
    },
    close: () => browser.close(),
  };
}

async function launchFirefox() {
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-firefox-'));
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: env.firefox,
    headless: true,
    userDataDir: profile,
    protocolTimeout: 600_000,
    extraPrefsFirefox: {
      // No update checks, telemetry or remote settings: this machine's network is closed.
      'app.update.enabled': false,
      'browser.safebrowsing.malware.enabled': false,
      'browser.safebrowsing.phishing.enabled': false,
      'datareporting.policy.dataSubmissionEnabled': false,
      'network.captive-portal-service.enabled': false,
      'network.connectivity-service.enabled': false,
    },
  });
  const version = (await browser.version()).replace(/^firefox\//i, '');
  return {
    name: 'firefox',
    version,
    async newPage(url) {
      const page = await browser.newPage();
      page.setDefaultTimeout(600_000);
      await page.evaluateOnNewDocument(recordErrors);
      return wrap({
        goto: (u) => page.goto(u, { waitUntil: 'load' }),
        evaluate: (fn, arg) => page.evaluate(fn, arg),
        url: () => page.url(),
        close: () => page.close(),
      }, url);
    },
    async close() {
      await browser.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

async function launchWebKit() {
  const session = await startWebKit();
  await session.setScriptTimeout(600_000);
  // One window: WebDriver commands go to the current one, so a page replaces the last.
  return {
    name: 'webkit',
    version: session.version,
    async newPage(url) {
      return wrap({
        goto: async (u) => {
          await session.navigate(u);
          // WebDriver has no script that runs before the page's: errors thrown while it
          // loads are not seen here (the tests check what those would break instead).
          await session.run(recordErrors.toString(), []);
        },
        evaluate: (fn, arg) => session.run(fn.toString(), [arg]),
        url: () => session.url(),
        close: () => session.navigate('about:blank').catch(() => {}),
      }, url);
    },
    close: () => session.quit(),
  };
}

/** The engine-neutral page over a transport's goto/evaluate/url/close. */
async function wrap(transport, url) {
  const page = {
    goto: (u) => transport.goto(u),
    /** Runs `fn(arg)` in the page (a function that uses nothing outside itself). */
    evaluate: (fn, arg) => transport.evaluate(fn, arg),
    url: () => transport.url(),
    async reload() {
      await transport.goto(await transport.url());
    },
    /**
     * Polls `fn(arg)` in the page every 100 ms until it returns something truthy, which it
     * resolves to. Fails after `timeout` ms naming `what` and the last value seen. Return
     * plain values, never a DOM node: puppeteer gives a node back as undefined.
     */
    async waitFor(fn, arg, { timeout = 60_000, what = 'the condition' } = {}) {
      const deadline = Date.now() + timeout;
      let last;
      for (;;) {
        let failed;
        try {
          last = await transport.evaluate(fn, arg);
        } catch (e) {
          // A navigation in progress destroys the context the poll ran in: try again.
          failed = e;
          last = undefined;
        }
        if (last) return last;
        if (Date.now() > deadline) {
          const seen = failed ? `the poll failed: ${failed.message}` : `last: ${JSON.stringify(last)}`;
          throw new Error(`timed out after ${timeout} ms waiting for ${what} (${seen})`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    /** Uncaught errors and unhandled rejections the page had (those before load too, where the engine shows them). */
    async errors() {
      const late = (await transport.evaluate(() => window.__errors ?? [])) ?? [];
      return [...new Set([...(transport.early?.() ?? []), ...late])];
    },
    close: () => transport.close(),
  };
  if (url) await page.goto(url);
  return page;
}
