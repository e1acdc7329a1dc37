// A static file server (node:http, no framework) for the test pages and the installed
// package. Pages are cross-origin isolated (COOP same-origin + COEP require-corp, so
// performance.now() has 5 µs resolution) except under /plain/, which serves the same files
// without those headers.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.ts': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
};

/**
 * Serves `mounts` ({ '/url/prefix/': '/dir' }, longest prefix wins) on 127.0.0.1.
 * Resolves to { origin, requests, close() }.
 */
export async function serveStatic(mounts) {
  const table = Object.entries(mounts).sort((a, b) => b[0].length - a[0].length);
  const requests = [];
  const server = http.createServer((req, res) => {
    let pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    requests.push(`${req.method} ${pathname}`);
    const isolated = !pathname.startsWith('/plain/');
    if (!isolated) pathname = pathname.slice('/plain'.length);
    const headers = { 'cache-control': 'no-store' };
    if (isolated) {
      headers['cross-origin-opener-policy'] = 'same-origin';
      headers['cross-origin-embedder-policy'] = 'require-corp';
    }
    const mount = table.find(([prefix]) => pathname.startsWith(prefix));
    let file;
    if (mount) {
      const [prefix, dir] = mount;
      file = path.join(dir, pathname.slice(prefix.length));
      if (!file.startsWith(path.resolve(dir))) file = undefined;
    }
    if (file && fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!file || !fs.existsSync(file)) {
      res.writeHead(404, { ...headers, 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    headers['content-type'] = MIME[path.extname(file)] ?? 'application/octet-stream';
    // Downloads know their size (the engine's load progress reports percent and ETA).
    headers['content-length'] = String(fs.statSync(file).size);
    res.writeHead(200, headers);
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    origin: `http://127.0.0.1:${port}`,
    /** "METHOD /path" of every request served, in order. */
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
