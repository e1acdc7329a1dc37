// One test file's world: the installed package served beside the test pages, Chromium, and
// (when asked) an emulator. `fixture(t, ...)` returns undefined when the test was skipped.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser } from './browser.mjs';
import { startEmulator } from './emulator.mjs';
import { asset } from './env.mjs';
import { installPackage } from './pkg.mjs';
import { serveStatic } from './server.mjs';

export const PAGES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'pages');

/**
 * opts.emulator: emulator flags ({ ttftMs, itlMs, tokens, ... }) or false for none.
 * opts.mounts: more { '/url/prefix/': '/dir' } to serve; opts.webgpu: Chromium with WebGPU.
 * Resolves to { pkg, origin, browser, emulator, page(pathname), close() }.
 */
export async function fixture(t, opts = {}) {
  const pkg = installPackage(t);
  if (!pkg) return undefined;
  let emulator;
  if (opts.emulator !== false) {
    const bin = asset(t, 'TPSMETER_EMULATOR_BIN');
    if (!bin) return undefined;
    emulator = await startEmulator(bin, opts.emulator ?? {});
  }
  const server = await serveStatic({ '/tpsmeter/': pkg.dir, '/': PAGES_DIR, ...(opts.mounts ?? {}) });
  const browser = await launchBrowser(t, { webgpu: opts.webgpu });
  if (!browser) {
    await server.close();
    await emulator?.stop();
    return undefined;
  }
  return {
    pkg,
    origin: server.origin,
    /** "METHOD /path" of every request the static server answered. */
    requests: server.requests,
    browser,
    emulator,
    /** A fresh page at `pathname` (default: the isolated blank page). */
    page: (pathname = '/index.html') => browser.newPage(`${server.origin}${pathname}`),
    async close() {
      await browser.close();
      await server.close();
      await emulator?.stop();
    },
  };
}

/** Runs `bench(opts)` in the page, validates the report with the wasm schema, returns it. */
export function benchInPage(page, opts) {
  return page.evaluate(async (opts) => {
    const { bench } = await import('/tpsmeter/dist/index.js');
    const { loadWasm } = await import('/tpsmeter/dist/raw.js');
    const report = await bench(opts);
    (await loadWasm()).validateReport(report);
    return report;
  }, opts);
}

/** Error classes of the measured records (warm-up excluded), sorted. */
export function errorClasses(report) {
  return report.requests
    .filter((r) => !r.warmup)
    .map((r) => r.error?.class ?? 'ok')
    .sort();
}
