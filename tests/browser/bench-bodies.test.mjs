// bench() against a capture server of this process: the request bodies it sends are the
// CLI's, byte for byte, for the same options and seed (a prompt, a workload with a tokenizer
// and turns, a dataset), and tokenizer files, untrusted and possibly large, load within
// bounds (issue 35). Split from bench-browser.test.mjs.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import test from 'node:test';
import { asset } from './support/env.mjs';
import { assertClean } from './support/browser.mjs';
import { errorClasses, fixture } from './support/fixture.mjs';

/**
 * A chat server that answers every request with one token and keeps each request's body
 * (CORS open, so a page of another origin can call it); `GET /dataset.json` answers
 * `dataset`.
 */
async function captureServer(dataset = '', gguf = undefined) {
  const bodies = [];
  const server = http.createServer((req, res) => {
    const cors = {
      'access-control-allow-origin': '*',
      'access-control-allow-headers': '*',
      'access-control-allow-methods': 'POST',
      'cross-origin-resource-policy': 'cross-origin',
    };
    if (req.method === 'OPTIONS') return res.writeHead(204, cors).end();
    if (req.method === 'GET' && req.url === '/dataset.json') return res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(dataset);
    // A model file by ranges, as a static host serves it (the tokenizer reads its header).
    if (req.method === 'GET' && req.url === '/model.gguf' && gguf) {
      const size = statSync(gguf).size;
      const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
      const [start, end] = m ? [Number(m[1]), Math.min(Number(m[2]), size - 1)] : [0, size - 1];
      res.writeHead(m ? 206 : 200, { ...cors, 'access-control-expose-headers': '*', 'content-length': end - start + 1, ...(m ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}) });
      return createReadStream(gguf, { start, end }).pipe(res);
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { ...cors, 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    take: () => bodies.splice(0),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The cap on a `tokenizer.json`, the CLI's and the engine's (`MAX_TOKENIZER_JSON_BYTES`). */
const MAX_TOKENIZER_JSON = 128 << 20;

/** A `tokenizer.json` of a BPE over a few letters, split by `pattern`, padded with `pad` spaces. */
function tokenizerJson(pattern, pad = 0) {
  const json = JSON.stringify({
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
    post_processor: null,
    decoder: null,
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab: { h: 0, i: 1, hi: 2, ' ': 3 },
      merges: [['h', 'i']],
    },
  });
  // Whitespace before the last brace: still valid JSON, as large as asked.
  return Buffer.concat([Buffer.from(json.slice(0, -1)), Buffer.alloc(pad, ' '), Buffer.from('}')]);
}

/**
 * Serves tokenizer files (CORS open): `/ranged/NAME` honours `Range` as a static host does,
 * `/whole/NAME` ignores it and sends everything (200), `/endless.json` ignores it and streams
 * a `tokenizer.json`-looking body of `endless` bytes, minding backpressure. `sent` lists
 * how many body bytes each `/endless.json` response had written when its connection closed.
 */
async function tokenizerFileServer(files, endless = 0) {
  const sent = [];
  let open = 0;
  const idle = [];
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-expose-headers': '*', 'cross-origin-resource-policy': 'cross-origin' };
  const server = http.createServer((req, res) => {
    if (req.method === 'OPTIONS') return res.writeHead(204, cors).end();
    if (req.url === '/endless.json') {
      res.writeHead(200, { ...cors, 'content-type': 'application/json' });
      let written = 0;
      const chunk = Buffer.alloc(1 << 20, 'a');
      const pump = () => {
        while (written < endless) {
          const piece = written === 0 ? Buffer.concat([Buffer.from('{"pad":"'), chunk]) : chunk;
          written += piece.length;
          if (!res.write(piece)) return res.once('drain', pump);
        }
        res.end();
      };
      open += 1;
      res.on('close', () => {
        sent.push(written);
        open -= 1;
        if (open === 0) idle.splice(0).forEach((resolve) => resolve());
      });
      return pump();
    }
    const m = /^\/(ranged|whole)\/(.+)$/.exec(req.url);
    const body = m && files[m[2]];
    if (!body) return res.writeHead(404, cors).end();
    const range = m[1] === 'ranged' && /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!range) return res.writeHead(200, { ...cors, 'content-length': body.length }).end(body);
    const [start, end] = [Number(range[1]), Math.min(Number(range[2]), body.length - 1)];
    res.writeHead(206, { ...cors, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${body.length}` });
    res.end(body.subarray(start, end + 1));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    sent,
    /** Resolves once no `/endless.json` response is open. */
    idle: () => (open === 0 ? Promise.resolve() : new Promise((resolve) => idle.push(resolve))),
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

/** `bench(opts)` in the page, settled: the report, or the error's name and message. */
function benchSettled(page, opts) {
  return page.evaluate(async (o) => {
    const { bench } = await import('/tpsmeter/dist/index.js');
    if (o.tokenizerBytes) o.tokenizer = new Uint8Array(o.tokenizerBytes);
    delete o.tokenizerBytes;
    try {
      return { report: await bench(o) };
    } catch (e) {
      return { error: { name: e?.name, message: String(e?.message ?? e) } };
    }
  }, opts);
}

// No emulator: the capture servers answer. One browser for both halves.
test("bench() sends the CLI's request bodies and loads tokenizer files within bounds", async (t) => {
  const fx = await fixture(t, { emulator: false });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();

  await t.test("bench() sends the CLI's request bodies for the same options and seed", async (st) => {
    const cli = asset(st, 'TPSMETER_CLI_BIN');
    if (!cli) return;
    const capture = await captureServer();
    st.after(() => capture.close());
    const opts = { api: 'openai-chat', url: capture.url, model: 'm', prompt: 'Hello there', seed: 5, requests: 3, maxTokens: 8 };
    const report = await page.evaluate(async (o) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      return bench(o);
    }, opts);
    assert.deepEqual(errorClasses(report), ['ok', 'ok', 'ok']);
    const fromPage = capture.take();
    // Not spawnSync: the capture server answers from this process's event loop.
    await promisify(execFile)(cli, ['bench', '--quiet', '--api', 'openai-chat', '--url', capture.url, '--model', 'm', '--prompt', 'Hello there', '--seed', '5', '--requests', '3', '--max-tokens', '8']);
    const fromCli = capture.take();
    assert.deepEqual(fromPage, fromCli, 'byte for byte');
    // Each its own mark, with the run id the report names.
    const id = report.config.prompt_run_id;
    assert.match(id, /^[0-9a-f]{8}$/);
    assert.deepEqual(
      fromPage.map((b) => JSON.parse(b).messages.find((m) => m.role === 'user').content),
      [0, 1, 2].map((n) => `[run ${id} #${n}] Hello there`),
    );
    assert.equal(report.config.cache_bust, 'prefix');
  });

  await t.test("with a tokenizer, a workload and turns, bench() sends the CLI's request bodies", async (st) => {
    const cli = asset(st, 'TPSMETER_CLI_BIN');
    const model = asset(st, 'TPSMETER_MODEL');
    if (!cli || !model) return;
    const capture = await captureServer('', model);
    st.after(() => capture.close());
    const opts = { api: 'openai-chat', url: capture.url, model: 'm', workload: 'llmperf', tokenizer: `${capture.url}/model.gguf`, turns: 3, seed: 7, requests: 6, concurrency: 1 };
    const report = await page.evaluate(async (o) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      return bench(o);
    }, opts);
    assert.deepEqual(errorClasses(report), Array(6).fill('ok'));
    const fromPage = capture.take();
    await promisify(execFile)(cli, ['bench', '--quiet', '--api', 'openai-chat', '--url', capture.url, '--model', 'm', '--workload', 'llmperf', '--tokenizer', model, '--turns', '3', '--seed', '7', '--requests', '6', '--concurrency', '1']);
    const fromCli = capture.take();
    assert.deepEqual(fromPage, fromCli, 'byte for byte');
    const sent = fromPage.map((b) => JSON.parse(b));
    assert.deepEqual(sent.map((b) => b.messages.length), [1, 3, 5, 1, 3, 5]);
    assert.ok(sent.every((b) => b.max_tokens === 150));
    assert.equal(sent[1].messages[1].content, 'hi', "turn 2 carries the server's answer");
    assert.equal(report.config.workload, 'llmperf');
    assert.equal(report.config.turns, 3);
    assert.equal(report.config.prompt.tokenizer, `${capture.url}/model.gguf`);
    assert.deepEqual(report.turns.map((t) => t.turn), [1, 2, 3]);
    // One chunk of "hi" without usage: the tokenizer counts it.
    assert.ok(report.requests.every((r) => r.token_source === 'tokenizer' && r.turn >= 1));
  });

  await t.test("with a dataset, bench() sends the CLI's request bodies for the same seed", async (st) => {
    const cli = asset(st, 'TPSMETER_CLI_BIN');
    if (!cli) return;
    // 30 ShareGPT-style conversations: some with a system turn, answers of many lengths
    // (each request's max_tokens), a non-ASCII prompt; 12 requests draw 12 of them.
    const conversations = Array.from({ length: 30 }, (_, i) => ({
      id: `c${i}`,
      conversations: [
        ...(i % 4 === 0 ? [{ from: 'system', value: `System ${i}` }] : []),
        { from: 'human', value: `Question ${i}: ¿qué? ${'word '.repeat(i)}` },
        { from: 'gpt', value: 'x'.repeat(10 + 13 * i) },
      ],
    }));
    const text = JSON.stringify(conversations, null, 1);
    const capture = await captureServer(text);
    st.after(() => capture.close());
    const dir = mkdtempSync(path.join(tmpdir(), 'tpsmeter-dataset-'));
    st.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'sharegpt.json');
    writeFileSync(file, text);
    const opts = { api: 'openai-chat', url: capture.url, model: 'm', dataset: { url: `${capture.url}/dataset.json` }, seed: 9, requests: 12, maxTokens: 8 };
    const report = await page.evaluate(async (o) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      return bench(o);
    }, opts);
    assert.deepEqual(errorClasses(report), Array(12).fill('ok'));
    const fromPage = capture.take();
    const json = path.join(dir, 'cli.json');
    await promisify(execFile)(cli, ['bench', '--quiet', '--api', 'openai-chat', '--url', capture.url, '--model', 'm', '--dataset', file, '--seed', '9', '--requests', '12', '--max-tokens', '8', '--json', json]);
    const fromCli = capture.take();
    assert.deepEqual(fromPage, fromCli, 'byte for byte');
    const id = report.config.prompt_run_id;
    const sent = fromPage.map((b) => JSON.parse(b));
    // Each request its own mark before its conversation's first human turn, 12 different ones.
    const humans = sent.map((b, n) => {
      const user = b.messages.find((m) => m.role === 'user').content;
      assert.ok(user.startsWith(`[run ${id} #${n}] Question `), user);
      return user.slice(user.indexOf('] ') + 2);
    });
    assert.equal(new Set(humans).size, 12);
    // The report names the dataset and its SHA-256, the same from both (the name as given).
    const cliReport = JSON.parse(readFileSync(json, 'utf8'));
    const sha256 = createHash('sha256').update(text).digest('hex');
    assert.deepEqual(report.config.prompt, { kind: 'dataset', name: `${capture.url}/dataset.json`, sha256, bytes: Buffer.byteLength(text), format: 'json', entries: 30, skipped: 0 });
    assert.deepEqual(cliReport.config.prompt, { ...report.config.prompt, name: file });
    // A malformed entry rejects the run, naming its line and field.
    const error = await page.evaluate(async (o) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      return bench(o).then(() => 'resolved', (e) => String(e));
    }, { ...opts, dataset: { name: 'bad.jsonl', text: '{"prompt": "a"}\n{"prompt": 3}\n' } });
    assert.match(error, /dataset line 2, field `prompt`: must be a string/);
    // Issue 35: `maxTokensLimit` (the page passes its form's) lowers every entry's output
    // cap to it; the answers above give caps of 3 to 97 tokens.
    const limited = await page.evaluate(async (o) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      return bench(o);
    }, { ...opts, maxTokensLimit: 20 });
    assert.deepEqual(errorClasses(limited), Array(12).fill('ok'));
    const caps = capture.take().map((b) => JSON.parse(b).max_tokens);
    assert.ok(caps.every((n) => n <= 20) && caps.includes(20), String(caps));
    const over = await page.evaluate(async (o) => {
      const { bench } = await import('/tpsmeter/dist/index.js');
      return bench(o).then(() => 'resolved', (e) => String(e));
    }, { ...opts, maxTokens: 30, maxTokensLimit: 20 });
    assert.match(over, /`maxTokens` must be at most `maxTokensLimit` \(20\), got 30/);
  });

  // Issue 35: tokenizer files are untrusted (an `ORG/NAME` tokenizer comes from the Hub, where
  // anyone publishes) and may be large (Gemma's is ~33 MB).

  // Issue 35: a `Split` whose regex backtracks cost ~4 ms per character counted (a
  // 3,000-character answer took 25 s), and `ORG/NAME` tokenizers come from the Hub, where
  // anyone publishes. It is refused when it loads, fetched or handed in as bytes.
  await t.test('a tokenizer.json whose regex backtracks is refused: UnsafeTokenizer', async (st) => {
    const hostile = tokenizerJson('(?:(?:.|..){0,16}(?=\\x00)|.)');
    const files = await tokenizerFileServer({ 'hostile.json': hostile });
    const capture = await captureServer();
    st.after(() => Promise.all([files.close(), capture.close()]));
    // No synthesis (a toy vocabulary has none of its words): the answer is what is counted.
    const opts = { api: 'openai-chat', url: capture.url, model: 'm', requests: 1, concurrency: 1 };
    for (const source of [{ tokenizer: `${files.url}/ranged/hostile.json` }, { tokenizerBytes: [...hostile] }]) {
      const { error } = await benchSettled(page, { ...opts, ...source });
      assert.equal(error?.name, 'UnsafeTokenizer', JSON.stringify(error));
      assert.match(error.message, /look-around/);
      assert.match(error.message, /pre_tokenizer\.pattern\.Regex/);
    }
    assert.equal(capture.take().length, 0, 'no request went out');
    // The same file with a plain pattern counts.
    const { report, error } = await benchSettled(page, { ...opts, tokenizerBytes: [...tokenizerJson('\\s+|\\S+')] });
    assert.equal(error, undefined);
    assert.equal(report.requests[0].token_source, 'tokenizer');
  });

  // Issue 52: a tokenizer.json of a type whose counting is superlinear (WordPiece: ~L^2.75
  // in one word's length) or with more added tokens than the limit is refused as it loads,
  // in the page as in the CLI, before any request goes out.
  await t.test('WordPiece and 300,000 added tokens are refused: UnsupportedModel, LimitExceeded', async (st) => {
    const wordPiece = Buffer.from(JSON.stringify({
      version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
      pre_tokenizer: null, post_processor: null, decoder: null,
      model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##',
        max_input_chars_per_word: 1e12, vocab: { '[UNK]': 0, a: 1, '##a': 2 } },
    }));
    const added = JSON.parse(tokenizerJson('\\s+|\\S+').toString());
    added.added_tokens = Array.from({ length: 300_000 }, (_, i) => ({
      id: i + 4, content: `<t${i}>`, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    }));
    const files = await tokenizerFileServer({
      'wordpiece.json': wordPiece,
      'added.json': Buffer.from(JSON.stringify(added)),
    });
    const capture = await captureServer();
    st.after(() => Promise.all([files.close(), capture.close()]));
    const opts = { api: 'openai-chat', url: capture.url, model: 'm', requests: 1, concurrency: 1 };
    for (const [file, name, pattern] of [
      ['wordpiece.json', 'UnsupportedModel', /WordPiece.*BPE, Unigram/],
      ['added.json', 'LimitExceeded', /added_tokens count is 300000, above the limit of 65536/],
    ]) {
      const { error } = await benchSettled(page, { ...opts, tokenizer: `${files.url}/ranged/${file}` });
      assert.equal(error?.name, name, JSON.stringify(error));
      assert.match(error.message, pattern);
    }
    assert.equal(capture.take().length, 0, 'no request went out');
  });

  // Issue 35: a tokenizer.json over the first 16 MiB read (Gemma's is ~33 MB) was cut there
  // and failed to parse; it is read in full, up to the CLI's cap.
  await t.test('a tokenizer.json over 16 MiB loads in full, by ranges or not', async (st) => {
    const big = tokenizerJson('\\s+|\\S+', 20 << 20);
    const files = await tokenizerFileServer({ 'big.json': big });
    const capture = await captureServer();
    st.after(() => Promise.all([files.close(), capture.close()]));
    for (const how of ['ranged', 'whole']) {
      const tokenizer = `${files.url}/${how}/big.json`;
      const { report, error } = await benchSettled(page, { api: 'openai-chat', url: capture.url, model: 'm', requests: 1, tokenizer });
      assert.equal(error, undefined, `${how}: ${JSON.stringify(error)}`);
      // The answer "hi" is one token of this vocabulary (the merge h + i).
      assert.equal(report.requests[0].token_source, 'tokenizer');
      assert.equal(report.requests[0].output_tokens, 1);
    }
  });

  // Issue 35: a server that ignores `Range` had its whole body read, however large. Reading
  // stops one byte past the cap, with a clear error.
  await t.test('a body over the tokenizer.json cap is refused without being read in full', async (st) => {
    const endless = 256 << 20;
    const files = await tokenizerFileServer({}, endless);
    const capture = await captureServer();
    st.after(() => Promise.all([files.close(), capture.close()]));
    const { error } = await benchSettled(page, { api: 'openai-chat', url: capture.url, model: 'm', requests: 1, tokenizer: `${files.url}/endless.json` });
    assert.equal(error?.name, 'LimitExceeded', JSON.stringify(error));
    assert.match(error.message, new RegExp(`over the ${MAX_TOKENIZER_JSON}-byte limit`));
    // Each response was dropped soon after the cap: the page held at most that much (what
    // was written beyond it sat in socket buffers).
    await files.idle();
    assert.ok(files.sent.length >= 1 && files.sent.every((n) => n < MAX_TOKENIZER_JSON + (32 << 20)), `sent ${files.sent}`);
  });

  // Issue 54: the tokenizer is a wasm build of its own: a run with one fetches it and none
  // of the engine's builds (the WebGPU engine's wasm, ~1.1 MB gzipped, is not a tokenizer).
  assert.ok(fx.requests.some((r) => r.includes('/wasm/tpsmeter_tokenizer_bg.wasm')), 'the tokenizer wasm was fetched');
  assert.ok(!fx.requests.some((r) => r.includes('/wasm/tpsmeter_engine')), `an engine wasm was fetched: ${fx.requests.filter((r) => r.includes('/wasm/')).join(', ')}`);
  await assertClean(page);
});
