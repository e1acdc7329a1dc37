// The engine's dedicated Worker: downloads the model straight into the GGUF push reader and
// on into GPU buffers, then generates. Started by `createEngine` (./index.ts); speaks the
// messages of ./protocol.ts. The page's main thread never waits on the GPU.

import { loadEngineWasm, type EngineModule } from '../raw-engine.js';
import { beginCacheWrite, deleteCachedModel, openCached, type CacheWriter, type CachedModel } from './cache.js';
import { EngineError } from './error.js';
import type { FromWorker, LoadProgress, ModelSource, ToWorker } from './protocol.js';

interface Scope {
  postMessage(message: FromWorker): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
}
const scope = self as unknown as Scope;

type Engine = EngineModule['Engine']['prototype'];
let engine: Engine | undefined;
let loadAbort: AbortController | undefined;

const post = (m: FromWorker): void => scope.postMessage(m);

/** Errors cross to the page by name and message (an `Error` does not survive cloning). */
function fail(id: number, e: unknown): void {
  const err = e instanceof Error ? e : new Error(String(e));
  post({ id, kind: 'error', name: err.name, message: err.message });
}

interface GpuAdapterLike {
  info?: { vendor?: string; architecture?: string; description?: string; isFallbackAdapter?: boolean };
  isFallbackAdapter?: boolean;
}

/** The adapter as the page sees it: its kernel profile and a readable name. */
interface AdapterChoice {
  profile: 'cpu' | 'gpu';
  name: string;
}

/**
 * Kernel shapes for this adapter. wgpu does not pass `GPUAdapterInfo` on, so it is read
 * here: SwiftShader (what Chrome gives users without a usable GPU) and other fallback
 * adapters are CPU rasterisers and get the barrier-free shapes.
 */
async function adapterChoice(): Promise<AdapterChoice> {
  const gpu = (navigator as unknown as { gpu?: { requestAdapter(): Promise<GpuAdapterLike | null> } }).gpu;
  if (!gpu) {
    throw new EngineError('WebGpuUnavailable', 'WebGPU is not available here (navigator.gpu is missing): use a browser with WebGPU enabled');
  }
  const adapter = await gpu.requestAdapter();
  if (!adapter) {
    throw new EngineError('NoAdapter', 'WebGPU is available but no adapter was offered (the GPU may be blocklisted or disabled)');
  }
  const info = adapter.info ?? {};
  const fallback = info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
  const parts = [info.vendor, info.architecture, info.description].filter((p): p is string => !!p);
  const lower = parts.join(' ').toLowerCase();
  const cpu = fallback || lower.includes('swiftshader') || lower.includes('llvmpipe') || lower.includes('lavapipe');
  return { profile: cpu ? 'cpu' : 'gpu', name: parts.join(' ') || 'WebGPU adapter' };
}

/** The bytes of `model` as a stream, with its size when known. */
async function open(model: ModelSource, signal: AbortSignal): Promise<{ stream: ReadableStream<Uint8Array>; total?: number }> {
  if (typeof model !== 'string') return { stream: model.stream(), total: model.size };
  const res = await fetch(model, { signal });
  if (!res.ok || !res.body) {
    throw new EngineError('DownloadError', `the model download failed: HTTP ${res.status} ${res.statusText}`.trim());
  }
  const length = Number(res.headers.get('content-length'));
  // A compressed transfer's length is not the file's.
  const encoded = (res.headers.get('content-encoding') ?? 'identity') !== 'identity';
  return { stream: res.body, total: Number.isFinite(length) && length > 0 && !encoded ? length : undefined };
}

const PROGRESS_EVERY_MS = 100;

async function load(id: number, msg: Extract<ToWorker, { kind: 'load' }>): Promise<unknown> {
  if (engine) throw new EngineError('InvalidState', 'this engine already has a model');
  // The controller exists before the first await: a cancel that arrives while the wasm
  // compiles or the device opens must stop the load, not be dropped (the download would
  // then run to its end).
  loadAbort = new AbortController();
  const signal = loadAbort.signal;
  const cancelled = (): EngineError => new EngineError('AbortError', 'the model load was cancelled');
  let loader: EngineModule['EngineLoader']['prototype'];
  let adapter: AdapterChoice;
  let profile: 'cpu' | 'gpu';
  try {
    const wasm = await loadEngineWasm();
    if (signal.aborted) throw cancelled();
    adapter = await adapterChoice();
    if (signal.aborted) throw cancelled();
    profile = msg.profile ?? adapter.profile;
    loader = await wasm.EngineLoader.create({ profile, maxContext: msg.maxContext });
  } catch (e) {
    loadAbort = undefined;
    throw e;
  }
  // URLs are cached; a File or Blob is already on this machine.
  const sourceUrl = msg.cache && typeof msg.model === 'string' ? msg.model : undefined;
  let writer: CacheWriter | undefined;
  try {
    const hit = sourceUrl ? await openCached(sourceUrl) : undefined;
    const fromCache = hit !== undefined;
    const { stream, total } = hit ? { stream: hit.stream, total: hit.manifest.size } : await open(msg.model, signal);
    if (sourceUrl && !hit) writer = await beginCacheWrite(sourceUrl, total);
    const reader = stream.getReader();
    const started = performance.now();
    let last = 0;
    let loaded = 0;
    const progress = (): LoadProgress => {
      const seconds = (performance.now() - started) / 1000;
      const bytesPerSecond = seconds > 0 ? loaded / seconds : 0;
      const p: LoadProgress = { loaded, bytesPerSecond, fromCache };
      if (total !== undefined) {
        p.total = total;
        p.percent = Math.min(100, (100 * loaded) / total);
        if (bytesPerSecond > 0) p.etaSeconds = Math.max(0, (total - loaded) / bytesPerSecond);
      }
      return p;
    };
    for (;;) {
      if (signal.aborted) {
        await reader.cancel().catch(() => {});
        throw cancelled();
      }
      const r = await reader.read();
      if (r.done) break;
      loader.push(r.value);
      if (writer) await writer.write(r.value);
      loaded += r.value.byteLength;
      const now = performance.now();
      if (now - last >= PROGRESS_EVERY_MS) {
        last = now;
        post({ id, kind: 'progress', progress: progress() });
      }
    }
    post({ id, kind: 'progress', progress: progress() });
    engine = loader.finish();
    const sha256 = loader.sha256 ?? '';
    let cached: CachedModel | undefined;
    if (hit) {
      cached = hit.manifest;
      if (hit.manifest.sha256 !== sha256) {
        // The stored bytes changed under us (storage corruption): drop the entry.
        await deleteCachedModel(hit.manifest.name);
        engine.free();
        engine = undefined;
        throw new EngineError('InvalidModel', `the cached copy of ${hit.manifest.sourceUrl} is corrupt (SHA-256 mismatch) and was deleted: load it again`);
      }
    } else if (writer && sourceUrl) {
      cached = await writer.commit({ size: loaded, sourceUrl, sha256, modelName: engine.name });
      writer = undefined;
    }
    const info = JSON.parse(engine.info()) as { adapter: string };
    // wgpu reports no adapter name on the web; the page's GPUAdapterInfo has one.
    if (!info.adapter) info.adapter = adapter.name;
    return { name: engine.name, info, profile, sha256, fromCache, cached };
  } catch (e) {
    await writer?.abort();
    throw e;
  } finally {
    loader.free();
    loadAbort = undefined;
  }
}

/**
 * The engine call in flight, if any: the wasm object is borrowed until it settles, and
 * freeing it before then throws ("attempted to take ownership of Rust value while it was
 * borrowed"), so `dispose` frees it after.
 */
let busy: Promise<unknown> | undefined;

/** Runs one engine call, recorded as `busy` until it settles. */
function engineCall<T>(run: (e: Engine) => Promise<T>): Promise<T> {
  if (!engine) return Promise.reject(new EngineError('InvalidState', 'no model is loaded'));
  const p = run(engine);
  const settled = p.then(
    () => undefined,
    () => undefined,
  );
  busy = settled;
  void settled.then(() => {
    if (busy === settled) busy = undefined;
  });
  return p;
}

async function generate(id: number, request: string): Promise<unknown> {
  const result = await engineCall((e) => e.generate(request, (text: string, token: number | undefined, t: number) => post({ id, kind: 'token', text, token, t })));
  return JSON.parse(result) as unknown;
}

scope.onmessage = (e: MessageEvent<ToWorker>): void => {
  const msg = e.data;
  const { id } = msg;
  const answer = (p: Promise<unknown>): void => {
    p.then(
      (value) => post({ id, kind: 'done', value }),
      (err: unknown) => fail(id, err),
    );
  };
  switch (msg.kind) {
    case 'load':
      answer(load(id, msg));
      break;
    case 'generate':
      answer(generate(id, msg.request));
      break;
    case 'teacherForced':
      answer(
        engineCall((e) => e.teacherForced(msg.prompt, Uint32Array.from(msg.tokens))).then((json) => JSON.parse(json) as unknown),
      );
      break;
    case 'probe':
      answer(
        (async () => {
          const wasm = await loadEngineWasm();
          const adapter = await adapterChoice();
          const report = JSON.parse(await wasm.probeAdapter({ profile: msg.profile ?? adapter.profile, mib: msg.mib })) as { adapter: string };
          if (!report.adapter) report.adapter = adapter.name;
          return report;
        })(),
      );
      break;
    case 'cancel':
      engine?.cancel();
      answer(Promise.resolve(undefined));
      break;
    case 'abortLoad':
      loadAbort?.abort();
      answer(Promise.resolve(undefined));
      break;
    case 'dispose':
      answer(
        Promise.resolve().then(() => {
          const e = engine;
          engine = undefined;
          if (!e) return;
          // The call in flight stops after its current token and drops the model's buffers.
          e.cancel();
          e.dispose();
          if (busy) void busy.then(() => e.free());
          else e.free();
        }),
      );
      break;
  }
};
