// tpsmeter's service worker: the site keeps working offline after its first load.
// The build (vite.config.ts) replaces the two placeholders with this build's file list and a
// hash of it, so a new deploy gets a new cache and the old one is deleted on activation.
// Only this site's own files are answered here: API calls, model downloads and anything
// cross-origin go to the network untouched (the engine caches models itself).

const CACHE = 'tpsmeter-__VERSION__';
const PRECACHE = '__PRECACHE__';

const scope = new URL(self.registration.scope);
const precached = new Set(PRECACHE.map((f) => new URL(f, scope).href));

// A new build's worker waits (no skipWaiting) until no tab runs the old build: an open tab
// still loads the old build's lazy files (the engine, its wasm) from the old cache, which is
// deleted only on activation, when no such tab is left.
self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE).then((cache) =>
      // Past the HTTP cache: an old copy of a page must not be precached as this build's.
      cache.addAll([...precached].map((u) => new Request(u, { cache: 'reload' }))),
    ),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys().then((keys) => Promise.all(keys.filter((k) => k.startsWith('tpsmeter-') && k !== CACHE).map((k) => caches.delete(k)))),
  );
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (url.origin !== scope.origin) return;
  const bare = url.origin + url.pathname;
  if (req.mode === 'navigate' || url.pathname.endsWith('.html')) {
    // Pages: the network first (a new deploy shows at once), the cached copy offline.
    // Offline, a page is the cached copy of that very page (never another page in its place).
    event.respondWith(fetch(req).catch(() => caches.match(bare, { ignoreSearch: true }).then((r) => r ?? Response.error())));
    return;
  }
  if (!precached.has(bare)) return;
  // Hashed build files never change under their name: the cache first.
  event.respondWith(caches.match(bare).then((r) => r ?? fetch(req)));
});
