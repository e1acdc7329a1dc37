// What the local engine loads is the model that was asked for, and only that: its cache never
// serves one URL's entry for another (entries are named by the URL's SHA-256 and checked
// against the URL their manifest records), a pinned SHA-256 refuses substituted bytes from
// the network or the cache, input after the model's last tensor is neither read nor kept,
// a hostile header is refused by name from the header alone, and a failure inside the
// engine's WebAssembly reaches the page as itself.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { assertClean } from './support/browser.mjs';
import { inWorkers, modelPage } from './support/engine.mjs';
import { asset } from './support/env.mjs';
import { fixture } from './support/fixture.mjs';

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');
/** The model's `general.name`, and the one the planted copy carries instead (same length). */
const NAME = 'Smollm2 135M 8k Lc100K Mix1 Ep2';
const PLANTED = 'Planted model'.padEnd(NAME.length, '!');

let made;

/**
 * The variants of the model the tests serve from a scratch folder (made once): in `other/`,
 * the model under its own file name with another `general.name` (another model as far as
 * the engine and the cache can tell); `trailing.gguf`, the model and 32 MiB of zeros after
 * it; `hostile.gguf`, the model with `output_norm.weight` declared [2^40] (a 4 TiB tensor in
 * a 98 MB file).
 */
function variants(model) {
  if (made) return made;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tpsmeter-integrity-'));
  // Shared by the tests of this file (350 MB in all): removed when the process ends.
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const bytes = fs.readFileSync(model);
  const at = bytes.indexOf(Buffer.from(NAME));
  assert.ok(at > 0, 'the model names itself as expected');
  const planted = Buffer.from(bytes);
  planted.write(PLANTED, at, 'latin1');
  fs.mkdirSync(path.join(dir, 'other'));
  // The same file name as the model: what an old cache entry's name was made of.
  fs.writeFileSync(path.join(dir, 'other', path.basename(model)), planted);
  fs.writeFileSync(path.join(dir, 'trailing.gguf'), Buffer.concat([bytes, Buffer.alloc(32 << 20)]));
  // The tensor info: name (u64 length, bytes), dimension count (u32 1), then dims[0] (u64).
  const info = Buffer.concat([Buffer.from([18, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('output_norm.weight'), Buffer.from([1, 0, 0, 0])]);
  const dimAt = bytes.indexOf(info) + info.length;
  assert.ok(dimAt > info.length && bytes.readBigUInt64LE(dimAt) === 576n, 'output_norm.weight is [576]');
  const hostile = Buffer.from(bytes);
  hostile.writeBigUInt64LE(1n << 40n, dimAt);
  fs.writeFileSync(path.join(dir, 'hostile.gguf'), hostile);
  made = { dir, sha256: sha256(bytes), plantedSha256: sha256(planted), size: bytes.length };
  return made;
}

/** A WebGPU page serving the model at `/models/`, the variants at `/t/`; undefined when skipped. */
async function variantPage(t) {
  const model = asset(t, 'TPSMETER_MODEL');
  if (!model) return undefined;
  const v = variants(model);
  const setup = await modelPage(t, { '/t/': v.dir });
  return setup && { ...setup, v, file: path.basename(model) };
}

/**
 * What earlier versions named a cache entry by: FNV-1a (32 bits) of the URL. A URL sharing
 * `target`'s takes a meet-in-the-middle search from `prefix` (2^18 suffixes each way; each
 * FNV step can be undone): a fraction of a second.
 */
function fnvCollision(target, prefix) {
  const P = 0x01000193;
  let inv = P;
  for (let i = 0; i < 5; i++) inv = Math.imul(inv, (2 - Math.imul(P, inv)) >>> 0) >>> 0;
  const step = (h, c) => Math.imul(h ^ c, P) >>> 0;
  const hash = (s) => [...s].reduce((h, ch) => step(h, ch.charCodeAt(0)), 0x811c9dc5);
  const abc = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_';
  const forward = new Map();
  const start = hash(prefix);
  for (const a of abc) for (const b of abc) for (const c of abc) forward.set(step(step(step(start, a.charCodeAt(0)), b.charCodeAt(0)), c.charCodeAt(0)), a + b + c);
  const back = (h, ch) => ((Math.imul(h, inv) >>> 0) ^ ch.charCodeAt(0)) >>> 0;
  const goal = hash(target);
  for (const z of abc) {
    for (const y of abc) {
      for (const x of abc) {
        const middle = forward.get(back(back(back(goal, z), y), x));
        if (middle !== undefined) return `${prefix}${middle}${x}${y}${z}`;
      }
    }
  }
  throw new Error('no collision found');
}

/** In the page: loads `url` (`opts` for createEngine), reports what came and what the cache holds. */
function load(page, url, opts = {}) {
  return page.evaluate(
    async ({ url, opts }) => {
      const { createEngine, listCachedModels } = await import('/tpsmeter/dist/engine/index.js');
      const progress = [];
      const out = await createEngine({ model: url, onProgress: (p) => progress.push(p), ...opts }).then(
        async (e) => {
          const r = { name: e.name, sha256: e.sha256, fromCache: e.fromCache, last: progress.at(-1) };
          await e.dispose();
          return r;
        },
        (e) => ({ error: `${e.name}: ${e.message}`, last: progress.at(-1) }),
      );
      return { ...out, list: await listCachedModels() };
    },
    { url, opts },
  );
}

/**
 * In the page: writes a complete cache entry for `url` (absolute) holding the bytes at
 * `from`, with a manifest recording `manifest` (its sha256 and the like): what a page of the
 * same origin, or an earlier version's name collision, could leave behind.
 */
function plant(page, url, from, manifest) {
  return page.evaluate(
    async ({ url, from, manifest }) => {
      const { beginCacheWrite } = await import('/tpsmeter/dist/engine/cache.js');
      const bytes = new Uint8Array(await (await fetch(from)).arrayBuffer());
      const writer = await beginCacheWrite(url, bytes.length);
      await writer.write(bytes);
      return writer.commit({ size: bytes.length, sourceUrl: url, ...manifest });
    },
    { url, from, manifest },
  );
}

test('the model cache serves an entry only for its own URL, whatever an old 32-bit name shared', async (t) => {
  const setup = await variantPage(t);
  if (!setup) return;
  const { fx, page, v, file } = setup;
  const url = `${fx.origin}/models/${file}`;
  // The attack: a URL of the attacker's, made to share the model's old entry name.
  const forged = fnvCollision(url, `${fx.origin}/t/other/${file}?v=`);
  const planted = await load(page, forged);
  assert.equal(planted.name, PLANTED, JSON.stringify(planted));
  const real = await load(page, url);
  assert.equal(real.fromCache, false, 'another URL’s entry was served');
  assert.equal(real.sha256, v.sha256);
  assert.equal(real.name, NAME);
  assert.deepEqual(real.list.map((m) => m.sourceUrl).sort(), [forged, url].sort(), 'one entry for each URL');
  for (const m of real.list) assert.match(m.name, /-[0-9a-f]{64}$/, 'named by the SHA-256 of the URL');

  // A manifest recording another URL (tampered with, or of an earlier version) is never
  // served: the load downloads, and the listing drops what it cannot vouch for.
  const before = fx.requests.length;
  const entry = real.list.find((m) => m.sourceUrl === url);
  await page.evaluate(async ({ name, forged }) => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('tpsmeter-models');
    const file = await dir.getFileHandle(`${name}.json`);
    const manifest = JSON.parse(await (await file.getFile()).text());
    const w = await file.createWritable();
    await w.write(JSON.stringify({ ...manifest, sourceUrl: forged }));
    await w.close();
  }, { name: entry.name, forged });
  const again = await load(page, url);
  assert.equal(again.fromCache, false, 'an entry whose manifest records another URL was served');
  assert.equal(again.sha256, v.sha256);
  assert.ok(fx.requests.slice(before).includes(`GET /models/${file}`));
  assert.equal(again.list.filter((m) => m.sourceUrl === url).length, 1);
  await assertClean(page);
});

test('a pinned SHA-256 refuses substituted bytes, downloaded or cached, and a planted entry is dropped', async (t) => {
  const setup = await variantPage(t);
  if (!setup) return;
  const { fx, page, v, file } = setup;
  const url = `${fx.origin}/models/${file}`;
  const other = `/t/other/${file}`;
  const pin = { sha256: v.sha256 };

  // An entry for the preset's URL holding other bytes, recorded with their own digest: not
  // the pinned file, so the model downloads again and replaces it.
  await plant(page, url, other, { sha256: v.plantedSha256, modelName: 'planted' });
  const replaced = await load(page, url, pin);
  assert.equal(replaced.fromCache, false, JSON.stringify(replaced));
  assert.equal(replaced.sha256, v.sha256);
  assert.deepEqual(replaced.list.map((m) => [m.sourceUrl, m.sha256]), [[url, v.sha256]]);

  // The same bytes under a manifest that claims the pinned digest: the bytes are checked as
  // they load, refused by name, and the entry is deleted.
  await plant(page, url, other, { sha256: v.sha256, modelName: 'planted' });
  const refused = await load(page, url, pin);
  assert.match(refused.error ?? '', /^ChecksumMismatch: the cached copy of .* was deleted/, JSON.stringify(refused));
  assert.deepEqual(refused.list, []);
  const reloaded = await load(page, url, pin);
  assert.equal(reloaded.fromCache, false);
  assert.equal(reloaded.name, NAME);
  // Without a pin the manifest's own digest is the check: the same planted entry fails too.
  await plant(page, url, other, { sha256: v.sha256, modelName: 'planted' });
  const unpinned = await load(page, url);
  assert.match(unpinned.error ?? '', /^ChecksumMismatch: /, JSON.stringify(unpinned));

  // A download of other bytes under the pin: refused, and nothing is kept.
  const wrong = await load(page, other, pin);
  assert.match(wrong.error ?? '', /^ChecksumMismatch: .*SHA-256 is [0-9a-f]{64}, expected [0-9a-f]{64}/, JSON.stringify(wrong));
  assert.deepEqual(wrong.list, []);
  const badPin = await load(page, url, { sha256: 'not-a-digest' });
  assert.match(badPin.error ?? '', /^InvalidRequest: sha256/);
  await assertClean(page);
});

test('bytes after the last tensor are not read: the model loads, and the cache keeps the model alone', async (t) => {
  const setup = await variantPage(t);
  if (!setup) return;
  const { page, v } = setup;
  const first = await load(page, '/t/trailing.gguf');
  assert.equal(first.sha256, v.sha256, JSON.stringify(first));
  assert.equal(first.last.loaded, v.size);
  assert.equal(first.last.total, v.size, 'the progress counts the model, not the download');
  assert.deepEqual(first.list.map((m) => [m.size, m.sha256]), [[v.size, v.sha256]]);
  const second = await load(page, '/t/trailing.gguf');
  assert.equal(second.fromCache, true);
  assert.equal(second.sha256, v.sha256);
  await assertClean(page);
});

test('a tensor the file cannot hold is refused by name from the header, before its bytes are read', async (t) => {
  const setup = await variantPage(t);
  if (!setup) return;
  const { page, v } = setup;
  const out = await load(page, '/t/hostile.gguf');
  // The download's length is known: the header describes far more data than the file has.
  assert.match(out.error ?? '', /^InvalidModel: tensor "output_norm\.weight" occupies bytes \d+\.\.\d+\+4398046511104 of the data section, which has \d+$/, JSON.stringify(out));
  assert.deepEqual(out.list, [], 'nothing was cached');
  await assertClean(page);
});

test('a failure inside the engine’s WebAssembly reaches the page as itself, not as a free() of a borrowed loader', async (t) => {
  const setup = await modelPage(t);
  if (!setup) return;
  const { model, page } = setup;
  // A GPU call that throws while a weight uploads: the exception unwinds through the wasm
  // code inside `EngineLoader.push`, which then stays borrowed, and its `free()` throws
  // "attempted to take ownership of Rust value while it was borrowed".
  await inWorkers(
    page,
    `for (const [name, at] of [['writeTexture', 1], ['writeBuffer', 2]]) {
       const real = GPUQueue.prototype[name];
       GPUQueue.prototype[name] = function (...args) {
         if ((args[at]?.byteLength ?? 0) > 1 << 20) throw new Error('injected GPU failure');
         return real.apply(this, args);
       };
     }`,
  );
  // On WebGPU (SwiftShader is a software adapter, where `auto` would take the CPU backend).
  const out = await load(page, `/models/${path.basename(model)}`, { cache: false, backend: 'webgpu' });
  // wgpu unwraps the failed call: a panic, then a trap, named with the panic's message.
  assert.match(out.error ?? '', /^EngineCrashed: the engine stopped inside WebAssembly \(.*injected GPU failure/s, JSON.stringify(out));
  await assertClean(page);
});

test('cache entries of earlier versions (named by a 32-bit hash) are never listed or served, and are removed', async (t) => {
  const fx = await fixture(t, { emulator: false, webgpu: false });
  if (!fx) return;
  t.after(() => fx.close());
  const page = await fx.page();
  const out = await page.evaluate(async (origin) => {
    const { listCachedModels, cacheEstimate } = await import('/tpsmeter/dist/engine/index.js');
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('tpsmeter-models', { create: true });
    const name = 'SmolLM2-135M-Instruct.Q4_1-8d2c1f0a';
    const put = async (file, text) => {
      const w = await (await dir.getFileHandle(file, { create: true })).createWritable();
      await w.write(text);
      await w.close();
    };
    await put(`${name}.gguf`, 'GGUF');
    await put(`${name}.json`, JSON.stringify({ name, size: 4, sourceUrl: `${origin}/models/SmolLM2-135M-Instruct.Q4_1.gguf`, sha256: '00'.repeat(32), date: new Date().toISOString(), store: 'opfs' }));
    const list = await listCachedModels();
    const left = [];
    for await (const n of dir.keys()) left.push(n);
    return { list, left, estimate: await cacheEstimate() };
  }, fx.origin);
  assert.deepEqual(out.list, []);
  assert.deepEqual(out.left, [], 'the old entry was removed');
  assert.equal(out.estimate.models, 0);
  await assertClean(page);
});
