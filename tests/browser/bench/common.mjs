// What the benchmark scripts share: the package to load (found without the test runner's
// environment), a cross-origin-isolated page through the test harness's own modules
// (tests/browser/support, used read-only), the load average, and percentiles.
//
// Package: TPSMETER_PKG_TARBALL or TPSMETER_PKG_DIR when set (as `cargo xtask browser-test`
// sets them), else the newest target/npm/tpsmeter-*.tgz (`cargo xtask pkg`), else pkg/ when
// it has been built (dist/ and wasm/). Chromium: TPSMETER_CHROMIUM or /usr/bin/chromium.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Points the harness at a package when the environment names none. */
function choosePackage() {
  if (process.env.TPSMETER_PKG_TARBALL || process.env.TPSMETER_PKG_DIR) return;
  const npmDir = path.join(REPO_ROOT, 'target', 'npm');
  const tarballs = fs.existsSync(npmDir)
    ? fs
        .readdirSync(npmDir)
        .filter((f) => /^tpsmeter-.*\.tgz$/.test(f))
        .map((f) => path.join(npmDir, f))
        .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)
    : [];
  if (tarballs.length) {
    process.env.TPSMETER_PKG_TARBALL = tarballs[0];
    return;
  }
  const pkg = path.join(REPO_ROOT, 'pkg');
  if (fs.existsSync(path.join(pkg, 'dist', 'index.js')) && fs.existsSync(path.join(pkg, 'wasm', 'tpsmeter_wasm.js'))) {
    process.env.TPSMETER_PKG_DIR = pkg;
  }
}

/** The harness's `t` for a script: a skip is a failure here, diagnostics go to stderr. */
const scriptT = {
  skip(why) {
    throw new Error(why);
  },
  diagnostic(msg) {
    log(msg);
  },
};

export function log(...args) {
  console.error(...args);
}

/**
 * Installs the package (as a user gets it), serves it with the test pages (cross-origin
 * isolated), launches Chromium and opens the blank page. Resolves to
 * { page, pkgDir, source, close() }. opts.mounts: more { prefix: dir } to serve; opts.webgpu:
 * Chromium with WebGPU (SwiftShader here); opts.args: Chromium's flags, replacing the default set;
 * opts.engine: 'firefox' or 'webkit' instead of Chromium (support/engines.mjs; WebKit needs DISPLAY).
 */
export async function isolatedPage(opts = {}) {
  choosePackage();
  // After choosePackage: env.mjs reads the environment when first imported.
  const { installPackage } = await import('../support/pkg.mjs');
  const { serveStatic } = await import('../support/server.mjs');
  const { launchBrowser } = await import('../support/browser.mjs');
  const { PAGES_DIR } = await import('../support/fixture.mjs');
  const source = process.env.TPSMETER_PKG_TARBALL ?? process.env.TPSMETER_PKG_DIR ?? '(none)';
  const pkg = installPackage(scriptT);
  const server = await serveStatic({ '/tpsmeter/': pkg.dir, '/': PAGES_DIR, ...(opts.mounts ?? {}) });
  let browser;
  try {
    if (opts.engine && opts.engine !== 'chromium') {
      // Firefox or WebKit (support/engines.mjs): the same page interface for evaluate().
      const { launchEngine } = await import('../support/engines.mjs');
      browser = await launchEngine(scriptT, opts.engine);
    } else {
      browser = await launchBrowser(scriptT, { webgpu: opts.webgpu, args: opts.args });
    }
  } catch (e) {
    await server.close();
    throw e;
  }
  const page = await browser.newPage(`${server.origin}/index.html`);
  return {
    page,
    pkgDir: pkg.dir,
    source,
    /** Another Chromium on the same server and package (its GPU process and caches new): { page, close() }. */
    async freshBrowser() {
      const fresh = await launchBrowser(scriptT, { webgpu: opts.webgpu, args: opts.args });
      return { page: await fresh.newPage(`${server.origin}/index.html`), close: () => fresh.close() };
    },
    async close() {
      await browser.close();
      await server.close();
      // The installed package stays for a next isolatedPage of this process (installPackage
      // keeps it); pkg.mjs removes it when the process exits.
    },
  };
}

/** `/proc/loadavg`'s 1, 5 and 15 minute averages. */
export function loadAverage() {
  try {
    return fs.readFileSync('/proc/loadavg', 'utf8').split(/\s+/).slice(0, 3).join(' ');
  } catch {
    return '?';
  }
}

/** Median of the finite values (the mean of the middle two for an even count); NaN for none. */
export function median(values) {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
}

/** The SmolLM2 GGUF at `TPSMETER_MODEL`, or exit 2 saying how to get it. */
export function benchModel() {
  const model = process.env.TPSMETER_MODEL;
  if (!model || !fs.existsSync(model)) {
    console.error('set TPSMETER_MODEL to SmolLM2-135M-Instruct.Q4_1.gguf (cargo xtask setup caches it)');
    process.exit(2);
  }
  return model;
}

/** Nearest-rank percentile (as the Rust benchmarks), of a copy. */
export function pct(values, p) {
  if (!values.length) return NaN;
  const v = [...values].sort((a, b) => a - b);
  return v[Math.max(1, Math.ceil((p / 100) * v.length)) - 1];
}

/** Measures `performance.now()`'s step in the page: { min, median } of non-zero steps, ms (a page function: every engine's evaluate takes one). */
export function timerResolutionInPage() {
  const steps = [];
  let last = performance.now();
  const deadline = last + 200;
  while (steps.length < 5000) {
    const t = performance.now();
    if (t !== last) {
      steps.push(t - last);
      last = t;
      if (t > deadline) break;
    }
  }
  steps.sort((a, b) => a - b);
  return { min: steps[0], median: steps[steps.length >> 1], samples: steps.length };
}

/** The same probe as an expression (Playwright's evaluate of a string). */
export const TIMER_RESOLUTION_IN_PAGE = `(${timerResolutionInPage})()`;
