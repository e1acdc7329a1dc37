// The local engine's model cache in headless Chromium: a downloaded model is kept in OPFS,
// or in Cache Storage where OPFS is missing, and a second load reads it instead of the
// network; a cancelled download caches nothing, and a write the browser refuses is a named
// error that loses nothing.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { inWorkers, modelPage } from './support/engine.mjs';

test('createEngine caches a downloaded model in OPFS: the second load reads the cache, not the network', (t) => cacheTest(t, 'opfs'));

test('without OPFS the model cache falls back to Cache Storage, with the same guarantees', (t) => cacheTest(t, 'cache-storage'));

/**
 * Makes this page and the Workers it starts look like a browser without OPFS (no
 * `navigator.storage.getDirectory`), as some private modes and older browsers are.
 */
async function withoutOpfs(page) {
  await page.evaluate(() => delete StorageManager.prototype.getDirectory);
  await inWorkers(page, 'delete StorageManager.prototype.getDirectory;');
}

test('a Cache Storage write the browser refuses is a named error, and loses nothing', async (t) => {
  const setup = await modelPage(t);
  if (!setup) return;
  const { model, page } = setup;
  const url = `/models/${path.basename(model)}`;
  // Without OPFS, and with a Cache Storage whose data puts fail the way Chromium's do when
  // the disk is full: the body is cancelled (so the writer sees a cancellation without a
  // reason) and the put rejects, with the reason named by the Worker's `__param`.
  await page.evaluate(() => delete StorageManager.prototype.getDirectory);
  await inWorkers(
    page,
    `delete StorageManager.prototype.getDirectory;
     const put = Cache.prototype.put;
     Cache.prototype.put = function (request, response) {
       const how = self.__param;
       if (how && String(request.url ?? request).endsWith('/data')) {
         response.body?.cancel();
         return Promise.reject(how === 'quota' ? new DOMException('no space left', 'QuotaExceededError') : how === 'type' ? new TypeError('store gone') : undefined);
       }
       return put.call(this, request, response);
     };`,
  );
  const load = (how, opts) =>
    page.evaluate(
      async ({ url, how, opts }) => {
        window.__param = how;
        const { createEngine, listCachedModels } = await import('/tpsmeter/dist/engine/index.js');
        const out = await createEngine({ model: url, ...opts }).then(
          async (engine) => {
            const r = await engine.completions.create({ prompt: 'The sea is', max_tokens: 2, temperature: 0 });
            await engine.dispose();
            return { name: 'loaded', text: r.choices[0].text };
          },
          (e) => ({ name: e.name, message: e.message }),
        );
        return { ...out, list: await listCachedModels() };
      },
      { url, how, opts },
    );
  const quota = await load('quota', {});
  assert.equal(quota.name, 'QuotaExceededError', JSON.stringify(quota));
  const none = await load('none', {});
  assert.equal(none.name, 'CacheError', JSON.stringify(none));
  assert.match(none.message, /cache: false/);
  const type = await load('type', {});
  assert.equal(type.name, 'TypeError', JSON.stringify(type));
  for (const r of [quota, none, type]) assert.deepEqual(r.list, [], 'a refused write leaves no entry');
  // The same model still loads, without the cache.
  const uncached = await load('quota', { cache: false });
  assert.equal(uncached.name, 'loaded', JSON.stringify(uncached));
  assert.ok(uncached.text.length > 0);
  await assertClean(page);
});

async function cacheTest(t, expectedStore) {
  const setup = await modelPage(t);
  if (!setup) return;
  const { model, fx, page } = setup;
  const sha256 = crypto.createHash('sha256').update(fs.readFileSync(model)).digest('hex');
  if (expectedStore === 'cache-storage') await withoutOpfs(page);
  const url = `/models/${path.basename(model)}`;
  const downloads = () => fx.requests.filter((r) => r === `GET ${url}`).length;
  const load = (opts) =>
    page.evaluate(
      async ({ url, opts }) => {
        const { createEngine, listCachedModels } = await import('/tpsmeter/dist/engine/index.js');
        const progress = [];
        const engine = await createEngine({ model: url, onProgress: (p) => progress.push(p), ...opts });
        const r = await engine.completions.create({ prompt: 'The sea is', max_tokens: 6, temperature: 0 });
        const out = { fromCache: engine.fromCache, sha256: engine.sha256, text: r.choices[0].text, last: progress.at(-1), list: await listCachedModels() };
        await engine.dispose();
        return out;
      },
      { url, opts },
    );

  // A cancelled download caches nothing.
  const cancelled = await page.evaluate(async (url) => {
    const { createEngine, listCachedModels } = await import('/tpsmeter/dist/engine/index.js');
    const abort = new AbortController();
    const err = await createEngine({ model: url, signal: abort.signal, onProgress: (p) => p.loaded > 20e6 && abort.abort() }).then(
      () => 'resolved',
      (e) => `${e.name}: ${e.message}`,
    );
    return { err, list: await listCachedModels() };
  }, url);
  assert.equal(cancelled.err, 'AbortError: the model load was cancelled');
  assert.deepEqual(cancelled.list, []);

  const first = await load({});
  assert.equal(first.fromCache, false);
  assert.equal(first.sha256, sha256);
  assert.equal(first.list.length, 1);
  assert.equal(first.list[0].sha256, sha256);
  assert.equal(first.list[0].size, fs.statSync(model).size);
  assert.ok(first.list[0].sourceUrl.endsWith(url));
  const before = downloads();

  const second = await load({});
  assert.equal(second.fromCache, true);
  assert.equal(second.last.fromCache, true);
  assert.equal(downloads(), before, 'the second load made no request for the model');
  assert.equal(second.text, first.text);

  // Deleting the entry empties the cache; `cache: false` loads without writing one.
  const afterDelete = await page.evaluate(async (name) => {
    const { deleteCachedModel, listCachedModels, cacheEstimate } = await import('/tpsmeter/dist/engine/index.js');
    const deleted = await deleteCachedModel(name);
    return { deleted, list: await listCachedModels(), estimate: await cacheEstimate() };
  }, first.list[0].name);
  assert.equal(afterDelete.deleted, true);
  assert.deepEqual(afterDelete.list, []);
  assert.equal(afterDelete.estimate.models, 0);
  const uncached = await load({ cache: false });
  assert.equal(uncached.fromCache, false);
  assert.deepEqual(uncached.list, []);
  assert.equal(afterDelete.estimate.store, expectedStore);
  t.diagnostic(`store ${afterDelete.estimate.store}; quota ${afterDelete.estimate.quota}`);
  await assertClean(page);
}
