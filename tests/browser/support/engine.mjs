// The local engine's test pages: a WebGPU page with the model served, and code run first in
// every Worker the page starts (to take a browser feature away, or make one fail).

import path from 'node:path';
import { asset } from './env.mjs';
import { fixture } from './fixture.mjs';

/**
 * A WebGPU page of a fresh fixture with the model's folder served at `/models/` (and
 * `mounts`, more folders), closed after the test; undefined (the test skipped) without the
 * model or a browser.
 */
export async function modelPage(t, mounts = {}) {
  const model = asset(t, 'TPSMETER_MODEL');
  if (!model) return undefined;
  const fx = await fixture(t, { emulator: false, webgpu: true, mounts: { '/models/': path.dirname(model), ...mounts } });
  if (!fx) return undefined;
  t.after(() => fx.close());
  return { model, fx, page: await fx.page() };
}

/**
 * Runs `code` (script text) first thing in every Worker this page starts (each runs a module
 * that imports `code` before the real worker script), after setting the Worker's
 * `self.__param` to the page's `window.__param` at the time the Worker is made.
 */
export async function inWorkers(page, code) {
  await page.evaluate((code) => {
    const Original = window.Worker;
    window.Worker = class extends Original {
      constructor(url, options) {
        const real = new URL(url, location.href).href;
        const src = `self.__param = ${JSON.stringify(window.__param ?? null)};\n${code}`;
        const mod = `import ${JSON.stringify(`data:text/javascript,${encodeURIComponent(src)}`)};\nimport ${JSON.stringify(real)};\n`;
        super(URL.createObjectURL(new Blob([mod], { type: 'text/javascript' })), options);
      }
    };
  }, code);
}
