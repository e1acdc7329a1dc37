// Every failure a streamed request can meet, injected by the emulator (or the network),
// classified as the report's error class; every request recorded (nothing finished lost);
// no unhandled promise rejection; the API key in no message.

import assert from 'node:assert/strict';
import net from 'node:net';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { benchInPage, errorClasses, fixture } from './support/fixture.mjs';

const KEY = 'sk-test-secret-key-0123456789';
const REQUESTS = 4;

/** [emulator fault spec, expected class, extra bench options] */
const FAULTS = [
  ['status:400', 'http_4xx'],
  ['status:503', 'http_5xx'],
  ['rate-limited:1', 'rate_limited'],
  ['stall:3:3000', 'stall', { idleTimeoutS: 0.5 }],
  ['cut:3', 'truncated'],
  ['end-early:3', 'truncated'],
  ['error-event:3', 'stream_error'],
  ['malformed:3', 'malformed_json'],
  ['oversized:5242880', 'oversized'],
  ['invalid-utf8:3', 'invalid_utf8'],
  ['slow-headers:3000', 'timeout_first_byte', { timeoutS: 0.5 }],
];

function options(url, extra = {}) {
  return {
    api: 'openai-chat',
    url,
    model: 'emulator',
    apiKey: KEY,
    concurrency: [2],
    requests: REQUESTS,
    maxTokens: 8,
    ...extra,
  };
}

function assertAllFailedAs(report, cls) {
  assert.equal(report.requests.length, REQUESTS, 'every request has a record');
  assert.deepEqual(errorClasses(report), Array(REQUESTS).fill(cls));
  const text = JSON.stringify(report);
  assert.ok(!text.includes(KEY), 'the API key is not in the report');
  for (const r of report.requests) assert.ok(r.error.message.length > 0, 'a message');
}

/** A port nothing listens on. */
async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * A TCP listener on `host` that counts connections and keeps what arrives, answering 404 (so
 * a client that did follow fails fast rather than at its timeout).
 */
async function listener(host) {
  let connections = 0;
  let received = '';
  const srv = net.createServer((socket) => {
    connections++;
    socket.on('error', () => {});
    socket.once('data', (d) => {
      received = (received + d.toString('latin1')).slice(0, 4096);
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    });
  });
  await new Promise((r) => srv.listen(0, host, r));
  return {
    port: srv.address().port,
    get connections() {
      return connections;
    },
    received: () => received,
    close: () => new Promise((r) => srv.close(() => r())),
  };
}

test('bench() classifies every fault', async (t) => {
  const fx = await fixture(t, { emulator: { ttftMs: 5, itlMs: 2, tokens: 64 } });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();

  for (const [spec, cls, extra] of FAULTS) {
    await t.test(`${spec} → ${cls}`, async () => {
      // Tokens 10 ms apart, so what came before a fault has been read when it strikes (a
      // connection reset discards bytes the browser has not read yet).
      const report = await benchInPage(page, options(fx.emulator.prefixed(`fault/${spec}/pace/5,10,64`), extra));
      assertAllFailedAs(report, cls);
      if (cls === 'rate_limited') {
        for (const r of report.requests) assert.equal(r.error.retry_after_s, 1);
      }
      if (cls.startsWith('http_')) {
        for (const r of report.requests) assert.match(r.error.message, /emulated error/);
      }
    });
  }

  await t.test('no CORS headers → cors, with the fix in the message', async () => {
    const plain = await fx.page('/plain/index.html');
    const report = await benchInPage(plain, options(fx.emulator.prefixed('no-cors')));
    assertAllFailedAs(report, 'cors');
    assert.match(report.requests[0].error.message, /Access-Control-Allow-Origin/);
    assert.equal(report.environment.notes.cross_origin_isolated, 'false');
    await assertClean(plain);
  });

  await t.test('no CORS headers on a cross-origin isolated page → connect, naming both causes', async () => {
    // COEP require-corp blocks the no-cors probe's opaque answer too (the emulator's
    // /no-cors drops Cross-Origin-Resource-Policy with the CORS headers), so the page cannot
    // tell a CORS refusal from an unreachable server; the message says so.
    const report = await benchInPage(page, options(fx.emulator.prefixed('no-cors')));
    assertAllFailedAs(report, 'connect');
    assert.match(report.requests[0].error.message, /Cross-Origin-Resource-Policy/);
  });

  await t.test('a closed port → connect', async () => {
    const report = await benchInPage(page, options(`http://127.0.0.1:${await closedPort()}`));
    assertAllFailedAs(report, 'connect');
  });

  await t.test('a key in the URL is refused without echoing it', async () => {
    const message = await page.evaluate(async (opts) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      try {
        await bench(opts);
        return 'resolved';
      } catch (e) {
        return String(e.message);
      }
    }, options(`http://127.0.0.1:${await closedPort()}/v1?key=${KEY}`, { apiKey: undefined }));
    assert.notEqual(message, 'resolved');
    assert.ok(!message.includes(KEY), `the key is not in the message: ${message}`);
  });

  // Regression (issue 24): a server that quoted the key back (a 401 body, a 429's
  // Retry-After header, an in-stream error event: verbatim, masked to a prefix, URL-encoded)
  // got it into the record, and from there into IndexedDB, exports and permalinks.
  for (const api of ['openai-chat', 'openai-completions', 'openai-responses', 'anthropic', 'gemini', 'ollama-chat', 'ollama-generate', 'vercel-ui']) {
    await t.test(`${api}: a key the server echoes is in no record`, async () => {
      for (const spec of ['status:401', 'rate-limited:1', 'error-event:1']) {
        // A Vercel AI SDK route is named in full; the other APIs take a base URL.
        const route = api === 'vercel-ui' ? '/api/ui-chat' : '';
        const report = await benchInPage(page, options(fx.emulator.prefixed(`echo-key/fault/${spec}/pace/1,1,4`) + route, { api, requests: 1, concurrency: [1] }));
        const text = JSON.stringify(report);
        assert.equal(report.requests.length, 1);
        // The server's words are kept with the key taken out (a client that dropped every
        // message would pass the checks below).
        assert.match(report.requests[0].error.message, /Your key starts with REDACTED/, `${api} ${spec}`);
        for (let i = 0; i + 8 <= KEY.length; i++) {
          const w = KEY.slice(i, i + 8);
          assert.ok(!text.includes(w) && !text.includes(encodeURIComponent(w)), `${api} ${spec}: ${w} in ${text}`);
        }
      }
    });
  }

  // Regression (issue 35): `fetch` followed redirects, and with them the key's header went
  // to whatever host a server named. A server on 127.0.0.1 answers 302 or 307 to a listener
  // on 127.0.0.2 (another origin) that counts what arrives: nothing may, not even a preflight.
  const other = await listener('127.0.0.2');
  for (const api of ['openai-chat', 'openai-completions', 'openai-responses', 'anthropic', 'gemini', 'ollama-chat', 'ollama-generate', 'vercel-ui']) {
    await t.test(`${api}: a redirect to another host is not followed`, async () => {
      const route = api === 'vercel-ui' ? '/api/ui-chat' : '';
      for (const code of [302, 307]) {
        const url = fx.emulator.prefixed(`fault/redirect:${code}:127.0.0.2:${other.port}`) + route;
        const report = await benchInPage(page, options(url, { api }));
        assertAllFailedAs(report, 'redirect');
        for (const r of report.requests) assert.match(r.error.message, /redirect.*not followed/, `${api} ${code}`);
        assert.equal(other.connections, 0, `${api} ${code}: the other host got ${other.received()}`);
      }
    });
  }
  await other.close();

  await t.test('AbortSignal → cancelled, the report still returned', async () => {
    const report = await page.evaluate(async (opts) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      const { loadWasm } = await import('/tpsmeter/dist/raw.js');
      const ac = new AbortController();
      let started = 0;
      const r = await bench({
        ...opts,
        signal: ac.signal,
        onRecord: () => {
          if (++started === 2) ac.abort();
        },
      });
      (await loadWasm()).validateReport(r);
      return r;
    }, options(fx.emulator.prefixed('pace/5,5,400'), { concurrency: [3], requests: 50, maxTokens: 400 }));
    const classes = errorClasses(report);
    assert.ok(classes.includes('cancelled'), `cancelled records: ${classes}`);
    assert.ok(classes.filter((c) => c === 'ok').length >= 2);
    assert.ok(report.requests.length < 50, 'the run stopped');
    assert.ok(report.warnings?.some((w) => w.code === 'interrupted'), 'interrupted warning');
  });

  await assertClean(page);
});
