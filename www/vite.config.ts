// The site's build: two pages (the benchmark and the local-inference demo) and a service
// worker whose precache list is this build's own output, so the site works offline after
// the first visit. `cargo xtask www` runs it into target/www/.

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';

/**
 * Writes `sw.js` into the finished build with the list of every file it holds (pages, hashed
 * assets, public files) and a hash of their contents, so any change to any file makes a new
 * worker and a new cache. Runs after the build is on disk: the bundle Vite hands plugins
 * before that lacks the HTML pages. A hand-written worker plus this plugin instead of
 * Workbox (vite-plugin-pwa): the whole policy is "precache this build, cache-first for
 * hashed assets, network-first for pages", about 60 lines, where Workbox would add its build
 * chain (Babel, a second Rollup) to a site that needs none of it.
 */
function serviceWorker(): Plugin {
  let outDir = '';
  return {
    name: 'tpsmeter-sw',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    closeBundle() {
      // site.json is the server's to answer (tpsmeter serve says what it serves there);
      // _headers is the static host's configuration, which it does not serve (a precache
      // entry that 404s would fail the worker's install).
      const skip = new Set(['sw.js', 'site.json', '_headers']);
      const files = walk(outDir).filter((f) => !skip.has(f) && !f.endsWith('.map'));
      files.sort();
      const hash = createHash('sha256');
      for (const f of files) hash.update(f).update('\0').update(readFileSync(join(outDir, f)));
      const source = readFileSync(resolve(__dirname, 'src/sw.js'), 'utf8')
        .replace("'__PRECACHE__'", JSON.stringify(['./', ...files]))
        .replace('__VERSION__', hash.digest('hex').slice(0, 16));
      writeFileSync(join(outDir, 'sw.js'), source);
    },
  };
}

/** Every file under `dir`, as paths relative to it with '/' separators. */
function walk(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    return e.isDirectory() ? walk(dir, rel) : [rel];
  });
}

export default defineConfig({
  // Relative URLs: the site works under any path of any static host.
  base: './',
  build: {
    outDir: process.env.TPSMETER_WWW_OUT ?? resolve(__dirname, '../target/www'),
    emptyOutDir: true,
    target: 'es2022',
    // The engine's wasm (~3 MB) is a file of its own; nothing is inlined as data: URLs,
    // which the CSP would have to allow.
    assetsInlineLimit: 0,
    rollupOptions: {
      input: {
        index: resolve(__dirname, 'index.html'),
        demo: resolve(__dirname, 'demo.html'),
      },
    },
  },
  worker: { format: 'es' },
  plugins: [serviceWorker()],
});
