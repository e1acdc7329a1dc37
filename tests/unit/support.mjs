// What the package's unit tests share: the built package (`pkg/dist`, its wasm read from
// disk: Node's fetch takes no file: URLs), the page's own modules bundled for Node by
// esbuild (the package's pinned copy), and a real report made by the CLI against the
// emulator. Run by `cargo xtask ci` after the package is built (step "package unit tests"),
// or by hand: `node --test tests/unit/` after `cargo xtask pkg`, with TPSMETER_CLI_BIN and
// TPSMETER_EMULATOR_BIN for the tests that need a report.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PKG = process.env.TPSMETER_PKG_DIR || path.join(ROOT, 'pkg');

// The package finds its wasm with fetch(new URL(..., import.meta.url)): a file: URL here.
const webFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  if (typeof input === 'object' && !(input instanceof URL)) return webFetch(input, init);
  const url = new URL(String(input), 'file:///');
  if (url.protocol !== 'file:') return webFetch(input, init);
  const bytes = fs.readFileSync(fileURLToPath(url));
  const type = url.pathname.endsWith('.wasm') ? 'application/wasm' : 'application/octet-stream';
  return new Response(bytes, { headers: { 'content-type': type } });
};

/** The built package's main entry (`tpsmeter`). */
export async function pkg() {
  const entry = path.join(PKG, 'dist', 'index.js');
  if (!fs.existsSync(entry)) throw new Error(`${entry} is missing: build the package first (cargo xtask pkg)`);
  return import(pathToFileURL(entry).href);
}

/** A module of the package's `dist/` (e.g. `bench/redact.js`). */
export async function pkgModule(file) {
  return import(pathToFileURL(path.join(PKG, 'dist', file)).href);
}

/**
 * A module of the page (`www/src/...ts`) bundled for Node, its `tpsmeter` imports taken from
 * the built package, so the page's logic runs here as it runs in the browser.
 */
export async function wwwModule(file) {
  const require = createRequire(path.join(PKG, 'package.json'));
  const esbuild = require('esbuild');
  const dist = path.join(PKG, 'dist');
  const out = await esbuild.build({
    entryPoints: [path.join(ROOT, 'www', 'src', file)],
    bundle: true,
    format: 'esm',
    platform: 'node',
    write: false,
    logLevel: 'silent',
    plugins: [
      {
        name: 'tpsmeter',
        setup(build) {
          build.onResolve({ filter: /^tpsmeter(\/.*)?$/ }, (a) => ({
            path: pathToFileURL(path.join(dist, a.path === 'tpsmeter' ? 'index.js' : `${a.path.slice('tpsmeter/'.length)}/index.js`)).href,
            external: true,
          }));
        },
      },
    ],
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-unit-'));
  const target = path.join(dir, `${path.basename(file, '.ts')}.mjs`);
  fs.writeFileSync(target, out.outputFiles[0].text);
  try {
    return await import(pathToFileURL(target).href);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The option-rule cases every surface must refuse alike (tests/fixtures/option-rules.json). */
export function optionRules() {
  return JSON.parse(fs.readFileSync(path.join(ROOT, 'tests', 'fixtures', 'option-rules.json'), 'utf8')).cases;
}

/** `says` with each `{key}` named by `name(key)`. */
export function fill(says, name) {
  return says.replace(/\{([a-zA-Z]+)\}/g, (_, key) => name(key));
}

/**
 * A real report: `tpsmeter bench` against the emulator (two levels, a few requests), or
 * undefined (the test skips, or fails under TPSMETER_REQUIRE_ASSETS=1) without the binaries.
 */
export async function cliReport(t) {
  const { asset } = await import('../browser/support/env.mjs');
  const { startEmulator } = await import('../browser/support/emulator.mjs');
  const cli = asset(t, 'TPSMETER_CLI_BIN');
  const emulatorBin = asset(t, 'TPSMETER_EMULATOR_BIN');
  if (!cli || !emulatorBin) return undefined;
  const emulator = await startEmulator(emulatorBin, { ttftMs: 5, itlMs: 2, tokens: 6 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-unit-'));
  try {
    const json = path.join(dir, 'r.json');
    const url = emulator.prefixed('pace/5,2,6');
    execFileSync(cli, ['bench', '--quiet', '--api', 'openai-chat', '--url', url, '--model', 'emulator', '--concurrency', '1,2', '--requests', '3', '--max-tokens', '6', '--seed', '7', '--json', json], { stdio: 'pipe' });
    return JSON.parse(fs.readFileSync(json, 'utf8'));
  } finally {
    await emulator.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
