// The model cache: downloaded GGUF files kept on this origin so a second load needs no
// download. OPFS (the origin private file system) where the browser has it, else Cache
// Storage. Used by the Worker (reading and writing during a load) and by the page
// (`listCachedModels`, `deleteCachedModel`, `cacheEstimate`).
//
// Consistency: an entry is its data and a manifest, and the manifest is written last, after
// the data is complete and the engine accepted the file. Data without a manifest is a write
// in progress (perhaps in another tab) or an interrupted one: never served or listed, and
// overwritten by the next download of the same URL; an interrupted load removes its own.
// So a cancelled download, a cut connection or a bad file never leaves anything that a
// later load would read.
//
// Identity: an entry is named by the file name and the SHA-256 of its whole source URL, and
// is served only for the URL its manifest records (a pinned digest, when the caller has one,
// must match too). Earlier versions named entries by a 32-bit hash of the URL, which a
// forged URL could share in a fraction of a second: their entries are never served, and
// `listCachedModels` removes them.

import { EngineError } from './error.js';

/** One cached model. */
export interface CachedModel {
  /** The entry's name (what `deleteCachedModel` takes): the file name and the SHA-256 of the URL. */
  name: string;
  /** Bytes. */
  size: number;
  /** Where it was downloaded from. */
  sourceUrl: string;
  /** Lowercase hex SHA-256 of the file, checked again on every cached load. */
  sha256: string;
  /** When it was cached (ISO 8601). */
  date: string;
  /** The model's own name (`general.name`). */
  modelName?: string;
  /** Which store holds it. */
  store: 'opfs' | 'cache-storage';
}

const DIR = 'tpsmeter-models';
const CACHE_NAME = 'tpsmeter-models';
/** Cache Storage keys live under this made-up path of the page's origin. */
const CACHE_PREFIX = '/__tpsmeter-models/';

/** Lowercase hex SHA-256 of `text` (UTF-8). */
async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The entry name for a source URL: the file's name, for people, then the SHA-256 of the whole
 * URL, which tells entries apart (no other URL can be made to share it).
 */
export async function entryName(sourceUrl: string): Promise<string> {
  let file = 'model.gguf';
  try {
    file = decodeURIComponent(new URL(sourceUrl).pathname.split('/').pop() || file);
  } catch {
    // Not a URL: the digest alone tells entries apart.
  }
  const safe = file.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100);
  return `${safe.replace(/\.gguf$/i, '')}-${await sha256Hex(sourceUrl)}`;
}

/**
 * Whether `manifest`, stored under `name`, is an entry of this version for `sourceUrl`:
 * named for that very URL, recording it, and a digest to check its bytes against. A name
 * match alone proves nothing about a manifest that was written by an earlier version or
 * tampered with.
 */
async function isEntry(manifest: CachedModel, name: string, sourceUrl: string): Promise<boolean> {
  return (
    manifest.name === name &&
    manifest.sourceUrl === sourceUrl &&
    /^[0-9a-f]{64}$/.test(String(manifest.sha256)) &&
    (await entryName(sourceUrl)) === name
  );
}

type Store = 'opfs' | 'cache-storage' | 'none';

interface StorageManagerLike {
  getDirectory?: () => Promise<FileSystemDirectoryHandle>;
  estimate?: () => Promise<{ usage?: number; quota?: number }>;
}

function storage(): StorageManagerLike | undefined {
  return (navigator as unknown as { storage?: StorageManagerLike }).storage;
}

async function store(): Promise<Store> {
  // Entry names are digests (Web Crypto exists only in secure contexts, as do OPFS and WebGPU).
  if (typeof crypto === 'undefined' || !crypto.subtle) return 'none';
  if (storage()?.getDirectory) {
    try {
      await opfsDir();
      return 'opfs';
    } catch {
      // OPFS refused (some private modes): try Cache Storage.
    }
  }
  return typeof caches !== 'undefined' ? 'cache-storage' : 'none';
}

async function opfsDir(): Promise<FileSystemDirectoryHandle> {
  const root = await storage()!.getDirectory!();
  return root.getDirectoryHandle(DIR, { create: true });
}

async function opfsFile(dir: FileSystemDirectoryHandle, name: string): Promise<File | undefined> {
  try {
    return await (await dir.getFileHandle(name)).getFile();
  } catch {
    return undefined;
  }
}

async function removeQuietly(dir: FileSystemDirectoryHandle, name: string): Promise<void> {
  await dir.removeEntry(name).catch(() => {});
}

/**
 * The request URL an entry is stored under. Cache Storage keys are http(s) URLs but need not
 * be fetchable; the base is the origin rather than `location.href`, which is no valid base in
 * a Worker started from a `blob:` URL (as some bundlers inline Workers).
 */
const cacheKey = (name: string, part: 'data' | 'manifest'): string => new URL(`${CACHE_PREFIX}${name}/${part}`, keyBase()).href;

function keyBase(): string {
  const origin = typeof location !== 'undefined' ? location.origin : 'null';
  return origin.startsWith('http') ? origin : 'https://tpsmeter.invalid';
}

/**
 * Every complete entry. Data without a manifest is skipped, not removed: it may be a download
 * another Worker is writing right now. A complete entry that is not named for the URL its
 * manifest records (one of an earlier version, named by a 32-bit hash, or a tampered one) is
 * never served: it is removed here, so its space comes back.
 */
export async function listCachedModels(): Promise<CachedModel[]> {
  const s = await store();
  const out: CachedModel[] = [];
  if (s === 'opfs') {
    const dir = await opfsDir();
    const names = new Set<string>();
    for await (const name of (dir as unknown as { keys(): AsyncIterable<string> }).keys()) names.add(name);
    for (const name of names) {
      if (!name.endsWith('.gguf')) continue;
      const key = name.slice(0, -'.gguf'.length);
      const manifest = await readOpfsManifest(dir, key);
      if (!manifest) continue;
      if (await isEntry(manifest, key, manifest.sourceUrl)) out.push(manifest);
      else await deleteCachedModel(key);
    }
  } else if (s === 'cache-storage') {
    const cache = await caches.open(CACHE_NAME);
    for (const req of await cache.keys()) {
      const key = cacheKeyName(req.url, 'manifest');
      if (key === undefined) continue;
      const manifest = await readCacheManifest(cache, key);
      if (!manifest || !(await cache.match(cacheKey(key, 'data')))) continue;
      if (await isEntry(manifest, key, manifest.sourceUrl)) out.push(manifest);
      else await deleteCachedModel(key);
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The entry name in a Cache Storage key URL of `part`, or undefined for another key. */
function cacheKeyName(url: string, part: 'data' | 'manifest'): string | undefined {
  const path = new URL(url).pathname;
  if (!path.startsWith(CACHE_PREFIX) || !path.endsWith(`/${part}`)) return undefined;
  return decodeURIComponent(path.slice(CACHE_PREFIX.length, -`/${part}`.length));
}

async function readCacheManifest(cache: Cache, name: string): Promise<CachedModel | undefined> {
  try {
    return (await (await cache.match(cacheKey(name, 'manifest')))?.json()) as CachedModel | undefined;
  } catch {
    return undefined;
  }
}

async function readOpfsManifest(dir: FileSystemDirectoryHandle, key: string): Promise<CachedModel | undefined> {
  const [data, meta] = await Promise.all([opfsFile(dir, `${key}.gguf`), opfsFile(dir, `${key}.json`)]);
  if (!data || !meta) return undefined;
  try {
    const manifest = JSON.parse(await meta.text()) as CachedModel;
    return manifest.size === data.size ? manifest : undefined;
  } catch {
    return undefined;
  }
}

/** Removes entry `name`; resolves to whether there was one. */
export async function deleteCachedModel(name: string): Promise<boolean> {
  const s = await store();
  if (s === 'opfs') {
    const dir = await opfsDir();
    const had = (await opfsFile(dir, `${name}.json`)) !== undefined;
    // Manifest first: a crash in between leaves data without a manifest, which is ignored.
    await removeQuietly(dir, `${name}.json`);
    await removeQuietly(dir, `${name}.gguf`);
    return had;
  }
  if (s === 'cache-storage') {
    const cache = await caches.open(CACHE_NAME);
    const had = await cache.delete(cacheKey(name, 'manifest'));
    await cache.delete(cacheKey(name, 'data'));
    return had;
  }
  return false;
}

/** What this origin stores, and the models' share. */
export async function cacheEstimate(): Promise<{ usage?: number; quota?: number; models: number; store: Store }> {
  const estimate = (await storage()?.estimate?.()) ?? {};
  const models = (await listCachedModels()).reduce((sum, m) => sum + m.size, 0);
  return { usage: estimate.usage, quota: estimate.quota, models, store: await store() };
}

/**
 * A cached copy of `sourceUrl` to load from, when there is a complete one recorded for that
 * very URL and, with `sha256` (a pinned digest, lowercase hex), recorded with that digest. A
 * miss leaves the entry to be overwritten by the download that follows. The bytes are still
 * to be checked against the manifest's digest as they load (the Worker does).
 */
export async function openCached(sourceUrl: string, sha256?: string): Promise<{ stream: ReadableStream<Uint8Array>; manifest: CachedModel } | undefined> {
  const s = await store();
  if (s === 'none') return undefined;
  const name = await entryName(sourceUrl);
  let found: { stream: ReadableStream<Uint8Array>; manifest: CachedModel } | undefined;
  if (s === 'opfs') {
    const dir = await opfsDir();
    const manifest = await readOpfsManifest(dir, name);
    const data = manifest && (await opfsFile(dir, `${name}.gguf`));
    if (manifest && data) found = { stream: data.stream(), manifest };
  } else {
    const cache = await caches.open(CACHE_NAME);
    const manifest = await readCacheManifest(cache, name);
    const data = await cache.match(cacheKey(name, 'data'));
    if (manifest && data?.body) found = { stream: data.body, manifest };
  }
  if (!found) return undefined;
  if (!(await isEntry(found.manifest, name, sourceUrl)) || (sha256 !== undefined && found.manifest.sha256 !== sha256)) {
    await found.stream.cancel().catch(() => {});
    return undefined;
  }
  return found;
}

/** Writes one download into the cache; nothing is visible before `commit`. */
export interface CacheWriter {
  write(chunk: Uint8Array): Promise<void>;
  /** Records the manifest: the entry becomes visible. */
  commit(manifest: Omit<CachedModel, 'name' | 'store' | 'date'>): Promise<CachedModel>;
  /** Drops what was written. */
  abort(): Promise<void>;
}

const MB = 1024 * 1024;

/**
 * Starts caching a download of `total` bytes (when known). Rejects with a
 * `QuotaExceededError` naming the sizes when the origin's free storage is short; resolves
 * to `undefined` when this browser has no store at all.
 */
export async function beginCacheWrite(sourceUrl: string, total: number | undefined): Promise<CacheWriter | undefined> {
  const s = await store();
  if (s === 'none') return undefined;
  const estimate = await storage()?.estimate?.();
  if (total !== undefined && estimate?.quota !== undefined) {
    const free = estimate.quota - (estimate.usage ?? 0);
    if (free < total) {
      throw new EngineError(
        'QuotaExceededError',
        `caching the model needs ${(total / MB).toFixed(1)} MB but this site may store only ${(free / MB).toFixed(1)} MB more: delete cached models (deleteCachedModel) or load with cache: false`,
      );
    }
  }
  const name = await entryName(sourceUrl);
  const finish = (m: Omit<CachedModel, 'name' | 'store' | 'date'>): CachedModel => ({
    ...m,
    name,
    store: s,
    date: new Date().toISOString(),
  });
  if (s === 'opfs') {
    const dir = await opfsDir();
    await removeQuietly(dir, `${name}.json`);
    const writable = await (await dir.getFileHandle(`${name}.gguf`, { create: true })).createWritable();
    return {
      write: (chunk) => writable.write(chunk as Uint8Array<ArrayBuffer>).catch(quota),
      async commit(m) {
        await writable.close().catch(quota);
        const manifest = finish(m);
        const meta = await (await dir.getFileHandle(`${name}.json`, { create: true })).createWritable();
        await meta.write(JSON.stringify(manifest));
        await meta.close();
        return manifest;
      },
      async abort() {
        await writable.abort().catch(() => {});
        await removeQuietly(dir, `${name}.gguf`);
      },
    };
  }
  const cache = await caches.open(CACHE_NAME);
  await cache.delete(cacheKey(name, 'manifest'));
  const pipe = new TransformStream<Uint8Array, Uint8Array>();
  const writer = pipe.writable.getWriter();
  const stored = cache.put(cacheKey(name, 'data'), new Response(pipe.readable, { headers: { 'content-type': 'application/octet-stream' } }));
  stored.catch(() => {});
  // A put that fails (storage full, the store gone) cancels the pipe, and the writer then
  // reports only the cancellation, often with no reason at all: the put's rejection says why.
  const failed = (e: unknown): Promise<never> => stored.then(() => quota(e), (put: unknown) => quota(put ?? e));
  return {
    write: (chunk) => writer.write(chunk).catch(failed),
    async commit(m) {
      await writer.close().catch(failed);
      await stored.catch(quota);
      const manifest = finish(m);
      await cache.put(cacheKey(name, 'manifest'), new Response(JSON.stringify(manifest), { headers: { 'content-type': 'application/json' } }));
      return manifest;
    },
    async abort() {
      await writer.abort().catch(() => {});
      await cache.delete(cacheKey(name, 'data'));
    },
  };
}

/**
 * A storage write that failed becomes a named, explained error: for space, a
 * `QuotaExceededError`; an `Error` as it is; anything else (a rejection without a reason) a
 * `CacheError`, never an error named `Error` with the message "undefined".
 */
function quota(e: unknown): never {
  if (e instanceof DOMException && e.name === 'QuotaExceededError') {
    throw new EngineError('QuotaExceededError', 'the browser refused to store more of the model (storage quota): delete cached models or load with cache: false');
  }
  if (e instanceof Error) throw e;
  const why = e === undefined || e === null ? 'it gave no reason' : String(e);
  throw new EngineError('CacheError', `the browser could not store the model (${why}): load with cache: false to skip the cache`);
}
