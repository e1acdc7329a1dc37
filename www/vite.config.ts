// The site's build: two pages (the benchmark and the local-inference demo) and a service
// worker whose precache list is this build's own output, so the site works offline after
// the first visit. `cargo xtask www` runs it into target/www/.

import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';

/**
 * Emits `sw.js` with the list of every file of the build. A hand-written worker plus this
 * plugin instead of Workbox (vite-plugin-pwa): the whole policy is "precache this build,
 * cache-first for hashed assets, network-first for pages", about 60 lines, where Workbox
 * would add its build chain (Babel, a second Rollup) to a site that needs none of it.
 */
function serviceWorker(): Plugin {
  return {
    name: 'tpsmeter-sw',
    apply: 'build',
    generateBundle(_options, bundle) {
      const files = Object.keys(bundle).filter((f) => !f.endsWith('.map'));
      // public/ is copied as is, outside the bundle; site.json is the server's to answer.
      files.push(...readdirSync(resolve(__dirname, 'public')).filter((f) => f !== 'site.json'));
      files.push('./');
      files.sort();
      const source = readFileSync(resolve(__dirname, 'src/sw.js'), 'utf8');
      const version = hash(files.join('\n'));
      this.emitFile({
        type: 'asset',
        fileName: 'sw.js',
        source: source
          .replace("'__PRECACHE__'", JSON.stringify(files))
          .replace('__VERSION__', version),
      });
    },
  };
}

/** FNV-1a of the file list: the cache name changes whenever any hashed file does. */
function hash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36);
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
