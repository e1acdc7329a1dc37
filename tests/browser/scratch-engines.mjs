import { launchEngine } from './support/engines.mjs';
import { serveStatic } from './support/server.mjs';
import { PAGES_DIR } from './support/fixture.mjs';
const t = { skip: (w) => console.log('skip', w) };
const server = await serveStatic({ '/': PAGES_DIR });
for (const name of process.argv.slice(2)) {
  const t0 = Date.now();
  const b = await launchEngine(t, name);
  console.log(name, b.version, 'launch ms', Date.now() - t0);
  const page = await b.newPage(`${server.origin}/index.html`);
  console.log(await page.evaluate(() => ({ ua: navigator.userAgent, lang: navigator.language, iso: crossOriginIsolated, cores: navigator.hardwareConcurrency })));
  console.log(await page.evaluate(async (x) => { await new Promise((r) => setTimeout(r, 10)); return x * 2; }, 21));
  await page.evaluate(() => { setTimeout(() => { throw new Error('boom'); }, 0); });
  await page.waitFor(() => window.__errors.length > 0, null, { what: 'err' });
  console.log('errors', await page.errors());
  await b.close();
}
await server.close();
