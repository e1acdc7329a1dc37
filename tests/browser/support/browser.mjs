// Chromium through playwright-core (no browser download: the Debian binary or
// TPSMETER_CHROMIUM), with a fresh profile per launch. Every page collects uncaught errors
// and unhandled promise rejections; `assertClean(page)` fails a test that produced any.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { env } from './env.mjs';

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * WebGPU for the local engine: headless Chromium offers SwiftShader's Vulkan as the adapter
 * (no `shader-f16`; the engine's f32 path).
 */
export const WEBGPU_ARGS = ['--enable-unsafe-webgpu'];

/**
 * Launches Chromium; resolves to { context, newPage(url), close() }.
 * opts.webgpu: also pass WEBGPU_ARGS; opts.args: these flags instead of either.
 */
export async function launchBrowser(t, opts = {}) {
  if (!fs.existsSync(env.chromium)) {
    const why = `no Chromium at ${env.chromium} (apt-get install chromium, or set TPSMETER_CHROMIUM)`;
    if (env.requireAssets) throw new Error(why);
    t.skip(why);
    return undefined;
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env.chromium,
    headless: true,
    // opts.args: a whole set of its own (`cargo xtask gpu-report` asks for the real GPU,
    // which CHROMIUM_ARGS turns off with --disable-gpu).
    args: opts.args ?? (opts.webgpu ? [...CHROMIUM_ARGS, ...WEBGPU_ARGS] : CHROMIUM_ARGS),
  });
  await context.addInitScript(() => {
    window.__rejections = [];
    window.addEventListener('unhandledrejection', (e) => {
      const r = e.reason;
      window.__rejections.push(r instanceof Error ? `${r.name}: ${r.message}` : String(r));
    });
  });
  const pages = [];
  return {
    context,
    async newPage(url) {
      const page = context.pages().find((p) => p.url() === 'about:blank' && !pages.includes(p)) ?? (await context.newPage());
      pages.push(page);
      page.errors = [];
      page.consoleLines = [];
      page.on('pageerror', (e) => page.errors.push(e.message));
      page.on('console', (m) => page.consoleLines.push(`${m.type()}: ${m.text()}`));
      if (url) await page.goto(url);
      return page;
    },
    async close() {
      await context.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Fails when the page had an uncaught error or an unhandled promise rejection. */
export async function assertClean(page) {
  const rejections = await page.evaluate(() => window.__rejections ?? []);
  assert.deepEqual(rejections, [], 'unhandled promise rejections in the page');
  assert.deepEqual(page.errors, [], 'uncaught errors in the page');
}
