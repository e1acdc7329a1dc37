// The engine's dedicated Worker: chooses the backend (WebGPU, or the CPU where WebGPU is
// missing or a software rasteriser), downloads the model straight into the GGUF push reader
// and on into GPU buffers or CPU memory, then generates. Started by `createEngine`
// (./index.ts); speaks the messages of ./protocol.ts. The page's main thread never waits on
// the GPU or the CPU kernels.
//
// Every wasm glue module is imported dynamically, the WebGPU one too: a static import would
// put what the glue modules share (../load.js) into this entry's chunk, and a bundler's glue
// chunks would then import this entry back. WebKit evaluates a module Worker's entry a
// second time when a module it loads imports it (the second copy took the messages, with
// no model: the demo's first Send failed), so the graph must not loop; the entry is also
// idempotent (INSTALLED) for a bundler that makes the loop anyway.

import type { EngineModule } from '../raw-engine.js';
import type { CpuEngineModule } from '../raw-engine-cpu.js';
import { beginCacheWrite, deleteCachedModel, openCached, type CacheWriter, type CachedModel } from './cache.js';
import { openModel } from './download.js';
import { EngineError, messageOf } from './error.js';
import { preferRelaxed } from './relaxed.js';
import { post, scope, type Step } from './scope.js';
import { wasmRelaxedSimdSupported, wasmSimdSupported } from './simd.js';
import { onThreadFailed, onThreadPorts, runThread, startCpuThreads, threadsMissing, type ThreadPort } from './threads.js';
import type { LoadProgress, ModelSource, ToWorker } from './protocol.js';
import type { LoadPhases } from './types.js';

type Engine = EngineModule['Engine']['prototype'] | CpuEngineModule['Engine']['prototype'];
type Loader = EngineModule['EngineLoader']['prototype'] | CpuEngineModule['EngineLoader']['prototype'];
let engine: Engine | undefined;
let loadAbort: AbortController | undefined;

/** The WebGPU build's glue, fetched when it is needed (see the note at the top). */
const loadEngineWasm = async (): Promise<EngineModule> => (await import('../raw-engine.js')).loadEngineWasm();

/** Errors cross to the page by name and message (an `Error` does not survive cloning). */
function fail(id: number, e: unknown): void {
  const err = e instanceof Error ? e : new Error(String(e));
  // A trap (a Rust panic or abort) leaves this Worker's WebAssembly unusable: say so, with
  // the panic's message, which the engine's panic hook left on the global scope.
  if (e instanceof WebAssembly.RuntimeError) {
    const panic = (self as unknown as { __tpsmeterPanic?: string }).__tpsmeterPanic;
    post({ id, kind: 'error', name: 'EngineCrashed', message: `the engine stopped inside WebAssembly (${panic ?? err.message}); create the engine again` });
    return;
  }
  post({ id, kind: 'error', name: err.name, message: err.message, reason: (err as { reason?: string }).reason });
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


/** A loader ready for the model's bytes, on the backend chosen, and why it was chosen. */
interface Started {
  loader: Loader;
  backend: 'webgpu' | 'cpu';
  why: string;
  /** The WebGPU adapter's readable name (wgpu gives none on the web). */
  adapterName?: string;
  /** Why the CPU backend runs on fewer threads than asked, when it does. */
  threadsWhy?: string;
  /** Why the plain-SIMD build runs where the browser has relaxed SIMD, when it does. */
  simdWhy?: string;
}

/**
 * Chooses the backend and readies its loader. `auto` takes WebGPU on a hardware adapter and
 * the CPU where there is no WebGPU, no adapter, only a software rasteriser (SwiftShader,
 * llvmpipe: the CPU backend computes on the same cores without a rasteriser in between), or
 * where the WebGPU device fails to start. An explicit `webgpu` fails instead of falling back.
 */
async function start(msg: Extract<ToWorker, { kind: 'load' }>, step: Step, signal: AbortSignal, cancelled: () => EngineError): Promise<Started> {
  const want = msg.backend ?? 'auto';
  if (want === 'cpu') return startCpu(msg, 'the CPU backend was asked for', step, signal, cancelled);
  let adapter: AdapterChoice;
  try {
    adapter = await adapterChoice();
  } catch (e) {
    if (want === 'webgpu') throw e;
    return startCpu(msg, messageOf(e), step, signal, cancelled);
  }
  if (signal.aborted) throw cancelled();
  if (want === 'auto' && adapter.profile === 'cpu') {
    return startCpu(msg, `the only WebGPU adapter is a software rasteriser (${adapter.name}), not a GPU`, step, signal, cancelled);
  }
  step('wasm');
  const wasm = await loadEngineWasm();
  if (signal.aborted) throw cancelled();
  try {
    step('device');
    const loader = await wasm.EngineLoader.create({ backend: 'webgpu', profile: msg.profile ?? adapter.profile, maxContext: msg.maxContext, inFlight: msg.inFlight });
    const why = want === 'webgpu' ? 'WebGPU was asked for' : `a hardware WebGPU adapter (${adapter.name})`;
    return { loader, backend: 'webgpu', why, adapterName: adapter.name };
  } catch (e) {
    if (want === 'webgpu') throw e;
    return startCpu(msg, `WebGPU failed to start (${messageOf(e)})`, step, signal, cancelled);
  }
}

/** The single-threaded build's glue: the relaxed-SIMD one or the plain one (literal imports, so bundlers emit both). */
const cpuGlue = (relaxed: boolean) => (relaxed ? import('../raw-engine-cpu-relaxed.js') : import('../raw-engine-cpu.js'));

/** The CPU backend's loader: its wasm is fetched only now, never where WebGPU runs. */
async function startCpu(msg: Extract<ToWorker, { kind: 'load' }>, why: string, step: Step, signal: AbortSignal, cancelled: () => EngineError): Promise<Started> {
  if (!wasmSimdSupported()) {
    throw new EngineError('WebAssemblySimdUnavailable', `this browser lacks WebAssembly SIMD, which the CPU backend needs (${why})`);
  }
  // Asked for, or one per core (`navigator.hardwareConcurrency`).
  const cores = navigator.hardwareConcurrency || 1;
  const wanted = msg.threads ?? cores;
  const asked = msg.threads !== undefined ? `${msg.threads} were asked for` : `this machine has ${cores} cores`;
  // The relaxed-SIMD build where this browser validates it (a module using it is refused
  // whole elsewhere): the same results, faster Q4 kernels.
  const relaxed = msg.relaxedSimd !== false && wasmRelaxedSimdSupported();
  let threadsWhy: string | undefined;
  if (wanted > 1) {
    const missing = threadsMissing();
    if (!missing) {
      try {
        const { loader, simdWhy } = await startCpuThreads(wanted, msg.maxContext, relaxed, step, signal, cancelled);
        return { loader, backend: 'cpu', why, simdWhy };
      } catch (e) {
        if (signal.aborted) throw cancelled();
        threadsWhy = `one thread: the thread pool did not start (${messageOf(e)})`;
      }
    } else {
      threadsWhy = `one thread: ${missing} (${asked})`;
    }
  }
  step('wasm');
  const { wasm, simdWhy } = await preferRelaxed(relaxed, async (r) => (await cpuGlue(r)).loadCpuEngineWasm(), signal, cancelled);
  if (signal.aborted) throw cancelled();
  const loader = await wasm.EngineLoader.create({ backend: 'cpu', maxContext: msg.maxContext });
  return { loader, backend: 'cpu', why, threadsWhy, simdWhy };
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
  const none = { loaded: 0, bytesPerSecond: 0, fromCache: false };
  const step: Step = (step, threads) => post({ id, kind: 'progress', progress: { phase: 'start', step, ...none, ...(threads === undefined ? {} : { threads }) } });
  let chosen: Started;
  try {
    chosen = await start(msg, step, signal, cancelled);
  } catch (e) {
    loadAbort = undefined;
    throw e;
  }
  const { loader } = chosen;
  // A synthetic model is built here, in the loader's own module.
  let model: string | Blob;
  try {
    model = typeof msg.model === 'string' || msg.model instanceof Blob ? msg.model : new Blob([loader.synthesize(msg.model.synthetic, msg.model.seed ?? 1) as Uint8Array<ArrayBuffer>]);
  } catch (e) {
    loadAbort = undefined;
    freeLoader(loader);
    throw e;
  }
  // URLs are cached; a File or Blob is already on this machine.
  const sourceUrl = msg.cache && typeof model === 'string' ? model : undefined;
  let writer: CacheWriter | undefined;
  let hit: Awaited<ReturnType<typeof openCached>> = undefined;
  try {
    if (sourceUrl) step('cache');
    hit = sourceUrl ? await openCached(sourceUrl, msg.sha256) : undefined;
    const fromCache = hit !== undefined;
    if (!hit) step('connect');
    const { stream, total } = hit ? { stream: hit.stream, total: hit.manifest.size } : await openModel(model, signal);
    // A cached copy must still hold the bytes its manifest recorded; a pinned model, its pin.
    loader.expect({ size: total, sha256: msg.sha256 ?? hit?.manifest.sha256 });
    if (sourceUrl && !hit) {
      step('cache');
      writer = await beginCacheWrite(sourceUrl, total);
    }
    const reader = stream.getReader();
    const started = performance.now();
    // Milliseconds inside the loader: parsing and uploading tensors as they arrive.
    let uploadMs = 0;
    let last = 0;
    let received = 0;
    const progress = (): LoadProgress & { phase: 'download' } => {
      // Once the header is read, the model's own length: whatever follows it is not read.
      const length = loader.modelLength;
      const loaded = length === undefined ? received : Math.min(received, length);
      const size = length ?? total;
      const seconds = (performance.now() - started) / 1000;
      const bytesPerSecond = seconds > 0 ? loaded / seconds : 0;
      const p: LoadProgress & { phase: 'download' } = { phase: 'download', loaded, bytesPerSecond, fromCache };
      if (size !== undefined) {
        p.total = size;
        p.percent = Math.min(100, (100 * loaded) / size);
        if (bytesPerSecond > 0) p.etaSeconds = Math.max(0, (size - loaded) / bytesPerSecond);
      }
      return p;
    };
    // Chunks read but not yet known to be the model's (its end is known once its header
    // is): the cache gets them once they are, and never what follows the model.
    const held: Uint8Array[] = [];
    let kept = 0;
    const keep = async (modelBytes: number): Promise<void> => {
      while (kept < modelBytes && held.length > 0) {
        const chunk = held.shift()!;
        const n = Math.min(chunk.byteLength, modelBytes - kept);
        await writer?.write(n === chunk.byteLength ? chunk : chunk.subarray(0, n));
        kept += n;
      }
      if (!loader.wantsMore) held.length = 0;
    };
    for (;;) {
      if (signal.aborted) {
        await reader.cancel().catch(() => {});
        throw cancelled();
      }
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (e) {
        if (signal.aborted) throw cancelled();
        if (fromCache) throw e;
        const of = total === undefined ? '' : ` of ${total}`;
        throw new EngineError('DownloadError', `the connection broke after ${received}${of} bytes of the model (${messageOf(e)}): load it again`, 'cut');
      }
      if (r.done) break;
      received += r.value.byteLength;
      if (writer) held.push(r.value);
      const pushed = performance.now();
      const modelBytes = loader.push(r.value);
      uploadMs += performance.now() - pushed;
      await keep(modelBytes);
      const now = performance.now();
      if (now - last >= PROGRESS_EVERY_MS) {
        last = now;
        post({ id, kind: 'progress', progress: progress() });
      }
      if (!loader.wantsMore) {
        // The model is complete: stop the download (or the cache read) here.
        await reader.cancel().catch(() => {});
        break;
      }
    }
    post({ id, kind: 'progress', progress: progress() });
    const finishing = performance.now();
    const finished = loader.finish();
    uploadMs += performance.now() - finishing;
    const downloadMs = performance.now() - started;
    engine = finished;
    // A header that completed only at the end of a small file.
    await keep(loader.modelBytes);
    const sha256 = loader.sha256 ?? '';
    let cached: CachedModel | undefined;
    if (hit) {
      cached = hit.manifest;
    } else if (writer && sourceUrl) {
      cached = await writer.commit({ size: kept, sourceUrl, sha256, modelName: engine.name });
      writer = undefined;
    }
    // Every pipeline the model will run is compiled now, not in the first answer (its TTFT
    // would be the compiler's); the bytes are cached already, so a cancel here loses none.
    const report = JSON.parse(
      await finished.compile((graphsDone: number, graphs: number, pipelines: number) => {
        post({ id, kind: 'progress', progress: { ...progress(), phase: 'compile', compile: { graphsDone, graphs, pipelines } } });
        return !signal.aborted;
      }),
    ) as Omit<LoadPhases, 'downloadMs' | 'uploadMs'>;
    const load: LoadPhases = { downloadMs, uploadMs, ...report };
    const info = JSON.parse(finished.info()) as { adapter: string; why: string; threadsWhy?: string; simdWhy?: string; load?: LoadPhases };
    info.load = load;
    // wgpu reports no adapter name on the web; the page's GPUAdapterInfo has one.
    if (!info.adapter) info.adapter = chosen.adapterName ?? '';
    info.why = chosen.why;
    if (chosen.threadsWhy) info.threadsWhy = chosen.threadsWhy;
    if (chosen.simdWhy) info.simdWhy = chosen.simdWhy;
    return { name: engine.name, info, sha256, fromCache, cached };
  } catch (e) {
    await writer?.abort();
    // A failure after `finish` (the compilation, the cache's commit) leaves no engine behind.
    if (engine) {
      const failed = engine;
      engine = undefined;
      failed.dispose();
    }
    // A cancel wins over what failed beside it: a cut download can surface first as another
    // error (CI once saw a NetworkError, the name Chromium's Cache Storage gives a put whose
    // body failed), and the caller asked to stop, so an AbortError is what it expects.
    if (signal.aborted) throw cancelled();
    if (hit && e instanceof Error && (e.name === 'ChecksumMismatch' || e.name === 'InvalidModel')) {
      // The stored bytes are not those recorded (storage corruption, or a planted entry):
      // never serve them again.
      await deleteCachedModel(hit.manifest.name);
      const what = e.name === 'InvalidModel' ? 'unusable' : `not ${msg.sha256 ? 'the model this URL pins' : 'the model that was stored'}`;
      throw new EngineError(e.name, `the cached copy of ${hit.manifest.sourceUrl} is ${what} (${e.message}), so it was deleted: load it again to download it afresh`);
    }
    throw e;
  } finally {
    loadAbort = undefined;
    freeLoader(loader);
  }
}

/**
 * Frees the loader without hiding the error in flight. A trap inside `push` (a panic, an
 * allocation failure) or a JS exception thrown through the wasm code (a GPU call failing
 * inside an upload) leaves the loader borrowed, and `free()` then throws "attempted to take
 * ownership of Rust value while it was borrowed": thrown from a `finally`, that message
 * would replace the one that explains the failure. The Worker goes with the failed load.
 */
function freeLoader(loader: { free(): void }): void {
  try {
    loader.free();
  } catch {
    // Only after a failure that is being reported already.
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

/** Set once this script has installed its handler in this Worker (see the note at the top). */
const INSTALLED = '__tpsmeterEngineWorker';
const installed = (self as unknown as Record<string, unknown>)[INSTALLED] === true;
(self as unknown as Record<string, unknown>)[INSTALLED] = true;

if (!installed) scope.onmessage = (e: MessageEvent<ToWorker | ThreadPort>): void => {
  if (e.data.kind === 'cpu-thread-port') {
    // One of a CPU pool's threads (see `startCpuThreads`), not an engine.
    scope.onmessage = null;
    runThread(e.data.port);
    return;
  }
  if (e.data.kind === 'threadPorts') {
    onThreadPorts(e.data);
    return;
  }
  if (e.data.kind === 'threadFailed') {
    onThreadFailed(e.data.index, e.data.message);
    return;
  }
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
