// `tpsmeter/engine`: a local model on WebGPU or the CPU, in a dedicated Worker, behind an
// OpenAI-shaped API. The page's main thread only posts messages; downloading, uploading to
// the GPU (or into CPU memory) and generating all happen in the Worker (./worker.ts).

import { EngineError } from './error.js';
import { packageFile } from '../load.js';
import type { BackendChoice, FromWorker, LoadProgress, SyntheticModel, ToWorker } from './protocol.js';
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, Completion, CompletionChunk, CompletionRequest, EngineInfo, ForcedStep, GenerateResult, LocalTimings, ProbeReport, RawStepCost, StepCost } from './types.js';
import type { CachedModel } from './cache.js';

export type { BackendChoice, CompileProgress, DownloadProgress, LoadProgress, SyntheticModel } from './protocol.js';
export { cacheEstimate, deleteCachedModel, listCachedModels, type CachedModel } from './cache.js';
export { EngineError } from './error.js';
export { wasmSimdSupported } from './simd.js';
export { setPackageBase } from '../package-base.js';
export type * from './types.js';

export interface CreateEngineOptions {
  /**
   * The GGUF file: a URL, or a `File` / `Blob` the user picked; or `{ synthetic:
   * 'SmolLM2-135M:Q4_1' }`, a real model's shapes with random weights built in the Worker,
   * to measure its speed without downloading it (its text is noise; `info.synthetic`).
   */
  model: string | URL | Blob | SyntheticModel;
  /** Download progress (bytes, total, percent, rate, ETA), about every 100 ms. */
  onProgress?: (p: LoadProgress) => void;
  /** Cancels the download; the promise rejects with an `AbortError`. */
  signal?: AbortSignal;
  /**
   * Where the model runs (default `auto`): `webgpu`, `cpu` (WebAssembly SIMD; its wasm is
   * downloaded only then), or `auto`: WebGPU on a hardware adapter, and the CPU where there
   * is no WebGPU, no adapter, only a software rasteriser (SwiftShader, llvmpipe), or where
   * the WebGPU device fails to start. `info.backend` and `info.why` say what ran and why.
   */
  backend?: BackendChoice;
  /**
   * CPU threads (default `navigator.hardwareConcurrency`); `info.threads` says how many run
   * and `info.threadsWhy` why fewer, when fewer do.
   */
  threads?: number;
  /**
   * The CPU backend's relaxed-SIMD build where the browser validates relaxed SIMD (default
   * `true`; it gives the same tokens, faster). `false` loads the plain SIMD build: to compare
   * the two, as the engine benchmark does.
   */
  relaxedSimd?: boolean;
  /** WebGPU kernel shapes: `cpu` (SwiftShader-like adapters) or `gpu`; detected when omitted. */
  profile?: 'cpu' | 'gpu';
  /** KV cache size in tokens (the model's own limit caps it). */
  maxContext?: number;
  /**
   * WebGPU: decode steps kept submitted ahead of the token read back, 1 to 4 (default: the
   * adapter's, `info.inFlight`). Each step reads its input id where the step before sampled
   * it, so the GPU never waits for `mapAsync`; the tokens are the same. 1 reads each id
   * before recording the next step.
   */
  inFlight?: number;
  /**
   * Keep a downloaded URL in this origin's model cache (OPFS, else Cache Storage) and load
   * from there next time (default true). Rejects with `QuotaExceededError` when the
   * origin's free storage is short; `false` downloads without caching.
   */
  cache?: boolean;
  /**
   * The SHA-256 the model must have (64 hex digits), for a model pinned to known bytes: a
   * file with another digest is refused with `ChecksumMismatch`, downloaded or cached. A
   * cached copy recorded with another digest is not used (the model downloads again); one
   * whose bytes turn out not to match is deleted.
   */
  sha256?: string;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onMessage?: (m: FromWorker) => void;
}

function startWorker(): Worker {
  // Where a dev server's pre-bundling moved this module, the Worker is the installed
  // package's file. Otherwise the literal `new Worker(new URL(...), { ... })` below, the
  // pattern bundlers recognise to build and emit the Worker (Vite wants its options literal).
  const here = new URL(import.meta.url);
  const moved = packageFile(here, 'dist/engine/worker.js');
  if (moved !== here) return new Worker(moved, { type: 'module', name: 'tpsmeter-engine' });
  return new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'tpsmeter-engine' });
}

/**
 * Measures this browser's WebGPU adapter in a Worker of its own: streaming-read GB/s (the
 * roofline decode is read against), per-dispatch cost and submit + readback latency. A few
 * seconds. `mib`: MiB read per dispatch (default 64).
 */
export async function probeAdapter(options: { profile?: 'cpu' | 'gpu'; mib?: number } = {}): Promise<ProbeReport> {
  const engine = new LocalEngine(startWorker());
  try {
    return await engine.probe(options);
  } finally {
    engine.terminate();
  }
}

/** Starts the Worker and loads `model` into it. */
export async function createEngine(options: CreateEngineOptions): Promise<LocalEngine> {
  const worker = startWorker();
  const engine = new LocalEngine(worker);
  try {
    await engine.load(options);
  } catch (e) {
    worker.terminate();
    throw e;
  }
  return engine;
}

let completionSeq = 0;

/** A model loaded in a Worker. */
export class LocalEngine {
  /** `general.name` of the model. */
  name = '';
  /** Adapter, kernel profile, limits and per-token figures. */
  info: EngineInfo | undefined;
  /** Lowercase hex SHA-256 of the model file. */
  sha256 = '';
  /** Whether the model came from the cache. */
  fromCache = false;
  /** The cache entry (written by this load, or read), when cached. */
  cached: CachedModel | undefined;
  /** The adapter probe's figures, once `probe()` has run: timings then state decode as a share of the roofline. */
  roofline: ProbeReport | undefined;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private generations = 0;
  /** Settles when the last generation asked for has finished (the line of requests). */
  private turn: Promise<void> = Promise.resolve();
  /** Set once the Worker is gone (disposed, terminated, crashed): every later call fails with it. */
  private dead: Error | undefined;
  /** The first DeviceLost a call failed with: the Worker lives, but its engine cannot run again. */
  private lostWith: Error | undefined;
  /** The CPU pool's thread Workers, made here for the engine's Worker (`spawnThreads`). */
  private threads: Worker[] = [];

  /**
   * Why this engine can no longer run: its Worker stopped (disposed, crashed) or its GPU
   * device was lost. `undefined` while it can; otherwise create a new engine.
   */
  get failure(): Error | undefined {
    return this.dead ?? this.lostWith;
  }

  readonly chat = {
    completions: {
      create: ((req: ChatRequest) => this.create(req, 'chat')) as {
        (req: ChatRequest & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
        (req: ChatRequest & { stream?: false }): Promise<ChatCompletion>;
      },
    },
  };

  readonly completions = {
    create: ((req: CompletionRequest) => this.create(req, 'text')) as {
      (req: CompletionRequest & { stream: true }): Promise<AsyncIterable<CompletionChunk>>;
      (req: CompletionRequest & { stream?: false }): Promise<Completion>;
    },
  };

  constructor(private worker: Worker) {
    worker.onmessage = (e: MessageEvent<FromWorker>) => this.receive(e.data);
    worker.onerror = (e: ErrorEvent) => {
      this.endThreads();
      this.failAll(new EngineError('WorkerError', e.message || 'the engine worker failed'));
    };
  }

  /**
   * Measures the adapter (see `probeAdapter`) in this engine's Worker; later generations'
   * timings then give decode as a share of the roofline. Not while generating.
   */
  async probe(options: { profile?: 'cpu' | 'gpu'; mib?: number } = {}): Promise<ProbeReport> {
    const report = (await this.call({ kind: 'probe', ...options })) as ProbeReport;
    this.roofline = report;
    return report;
  }

  /**
   * Teacher forcing, for checking this engine against another implementation (llama.cpp,
   * the native engine): runs the raw `prompt`, then feeds `tokens` one at a time, and resolves
   * to what the model would have picked at each of those positions, with the gap between its
   * pick's logit and the forced token's. Two correct engines may part where `top2_gap` is
   * tiny; forcing keeps the positions after such a tie comparable. Waits for generations
   * in flight; leaves the KV cache treated as empty.
   */
  async teacherForced(prompt: string, tokens: number[]): Promise<ForcedStep[]> {
    const before = this.turn;
    let release!: () => void;
    this.turn = before.then(() => new Promise<void>((r) => (release = r)));
    await before;
    try {
      return (await this.call({ kind: 'teacherForced', prompt, tokens })) as ForcedStep[];
    } finally {
      release();
    }
  }

  /** @internal Stops the Worker without a dispose round trip. */
  terminate(): void {
    this.endThreads();
    this.worker.terminate();
    this.failAll(new EngineError('InvalidState', 'the engine was disposed'));
  }

  /** Frees the GPU memory and stops the Worker. */
  async dispose(): Promise<void> {
    try {
      await this.call({ kind: 'dispose' });
    } finally {
      this.endThreads();
      this.worker.terminate();
      this.failAll(new EngineError('InvalidState', 'the engine was disposed'));
    }
  }

  /** @internal */
  async load(o: CreateEngineOptions): Promise<void> {
    const model = o.model instanceof URL ? o.model.href : typeof o.model === 'string' ? new URL(o.model, location.href).href : o.model;
    if (typeof model === 'object' && !(model instanceof Blob) && (typeof model.synthetic !== 'string' || (model.seed !== undefined && !(Number.isInteger(model.seed) && model.seed >= 0 && model.seed < 2 ** 32)))) {
      throw new EngineError('InvalidRequest', 'model must be a URL, a Blob, or { synthetic: "NAME[:QUANT]", seed? } with a whole seed below 2^32');
    }
    if (o.sha256 !== undefined && !/^[0-9a-f]{64}$/i.test(o.sha256)) {
      throw new EngineError('InvalidRequest', 'sha256 must be 64 hexadecimal digits');
    }
    if (o.backend !== undefined && !['auto', 'webgpu', 'cpu'].includes(o.backend)) {
      throw new EngineError('InvalidRequest', `backend must be "auto", "webgpu" or "cpu", not ${JSON.stringify(o.backend)}`);
    }
    if (o.threads !== undefined && !(Number.isInteger(o.threads) && o.threads >= 1 && o.threads <= 256)) {
      throw new EngineError('InvalidRequest', 'threads must be a whole number from 1 to 256');
    }
    if (o.inFlight !== undefined && !(Number.isInteger(o.inFlight) && o.inFlight >= 1 && o.inFlight <= 4)) {
      throw new EngineError('InvalidRequest', 'inFlight must be a whole number from 1 to 4');
    }
    if (o.relaxedSimd !== undefined && typeof o.relaxedSimd !== 'boolean') {
      throw new EngineError('InvalidRequest', 'relaxedSimd must be true or false');
    }

    const abort = (): void => void this.post({ id: 0, kind: 'abortLoad' });
    if (o.signal?.aborted) throw new EngineError('AbortError', 'the model load was cancelled');
    o.signal?.addEventListener('abort', abort, { once: true });
    try {
      const loaded = (await this.call(
        {
          kind: 'load',
          model,
          cache: o.cache !== false,
          sha256: o.sha256?.toLowerCase(),
          backend: o.backend,
          threads: o.threads,
          relaxedSimd: o.relaxedSimd,
          profile: o.profile,
          maxContext: o.maxContext,
          inFlight: o.inFlight,
        },
        (m) => {
          if (m.kind === 'progress') o.onProgress?.(m.progress);
        },
      )) as { name: string; info: EngineInfo; sha256: string; fromCache: boolean; cached?: CachedModel };
      this.name = loaded.name;
      this.info = loaded.info;
      this.sha256 = loaded.sha256;
      this.fromCache = loaded.fromCache;
      this.cached = loaded.cached;
    } finally {
      o.signal?.removeEventListener('abort', abort);
    }
  }

  private post(m: ToWorker): void {
    this.worker.postMessage(m);
  }

  private call(m: DistributiveOmit<ToWorker, 'id'>, onMessage?: (m: FromWorker) => void): Promise<unknown> {
    // A stopped Worker never answers: a request queued behind its end must fail, not hang.
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onMessage });
      this.post({ ...m, id } as ToWorker);
    });
  }

  /**
   * Makes the pool's thread Workers the engine's Worker asked for, and hands it a port to
   * each. They start from the page, not inside that Worker: see `spawnThreads` in ./protocol.ts.
   */
  private spawnThreads(m: Extract<FromWorker, { kind: 'spawnThreads' }>): void {
    this.endThreads();
    const ports: MessagePort[] = [];
    try {
      this.makeThreads(m, ports);
    } catch (e) {
      // A page whose policy refuses the Worker (CSP `worker-src`): the engine runs on one thread.
      this.endThreads();
      this.worker.postMessage({ id: 0, kind: 'threadPorts', ports: [], error: e instanceof Error ? e.message : String(e) } satisfies ToWorker);
      return;
    }
    this.worker.postMessage({ id: 0, kind: 'threadPorts', ports } satisfies ToWorker, ports);
  }

  private makeThreads(m: Extract<FromWorker, { kind: 'spawnThreads' }>, ports: MessagePort[]): void {
    for (let i = 0; i < m.count; i++) {
      const thread = new Worker(m.url, { type: m.type, name: `tpsmeter-cpu-thread-${i + 1}` });
      thread.onerror = (e: ErrorEvent) => {
        // The engine then runs on one thread and says why; not an error of the page's.
        e.preventDefault();
        this.post({ id: 0, kind: 'threadFailed', index: i, message: e.message || 'its script did not run' });
      };
      const channel = new MessageChannel();
      thread.postMessage({ kind: 'cpu-thread-port', port: channel.port1 }, [channel.port1]);
      ports.push(channel.port2);
      this.threads.push(thread);
    }
  }

  private endThreads(): void {
    for (const t of this.threads) t.terminate();
    this.threads = [];
  }

  private receive(m: FromWorker): void {
    if (m.kind === 'spawnThreads') return this.spawnThreads(m);
    if (m.kind === 'endThreads') return this.endThreads();
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.kind === 'done') {
      this.pending.delete(m.id);
      p.resolve(m.value);
    } else if (m.kind === 'error') {
      this.pending.delete(m.id);
      const err = new EngineError(m.name, m.message, m.reason);
      // Neither a lost device nor a trapped WebAssembly module runs again.
      if (m.name === 'DeviceLost' || m.name === 'EngineCrashed') this.lostWith ??= err;
      p.reject(err);
    } else {
      p.onMessage?.(m);
    }
  }

  private failAll(e: Error): void {
    this.dead ??= e;
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  private async create(req: ChatRequest | CompletionRequest, kind: 'chat' | 'text'): Promise<ChatCompletion | Completion | AsyncIterable<AnyChunk>> {
    const { stream, signal, ...rest } = req;
    if (signal?.aborted) throw new EngineError('AbortError', 'the request was aborted');
    const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-local-${++completionSeq}`;
    const created = Math.floor(Date.now() / 1000);
    const model = this.name;
    const request = JSON.stringify(rest);
    const queue = new ChunkQueue();
    // One generation at a time (the engine has one KV cache): a request made while another
    // runs waits its turn here, in order, and an abort while waiting only leaves the line.
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const before = this.turn;
    this.turn = before.then(() => mine);
    let running = false;
    let leaveLine: ((e: Error) => void) | undefined;
    const onAbort = (): void => {
      if (running) this.post({ id: 0, kind: 'cancel' });
      else leaveLine?.(new EngineError('AbortError', 'the request was aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    // A consumer that stops iterating (`break`) abandons the stream: stop or dequeue it, so it
    // does not hold the engine up to max_tokens.
    queue.onAbandon = onAbort;
    let first = true;
    const done = new Promise<void>((resolve, reject) => {
      leaveLine = reject;
      void before.then(resolve);
    })
      .then(() => {
        // Aborted between its turn coming and this callback: the listener has fired already.
        if (signal?.aborted) throw new EngineError('AbortError', 'the request was aborted');
        running = true;
        const cold = this.generations++ === 0;
        return this.call({ kind: 'generate', request }, (m) => {
          if (m.kind !== 'token' || m.text === '') return;
          queue.push(chunkOf(id, created, model, kind, m.text, first));
          first = false;
        }).then((value) => ({ value, cold }));
      })
      .then(
        ({ value, cold }) => {
          const result = value as GenerateResult;
          const final = finalChunk(id, created, model, kind, result, timingsOf(result, this.info, cold, this.roofline));
          queue.push(final);
          queue.end();
          return { result, final };
        },
        (e: Error) => {
          queue.fail(e);
          throw e;
        },
      )
      .finally(() => {
        release();
        signal?.removeEventListener('abort', onAbort);
      });
    // A streamed request reports its failure through the iterator.
    if (stream) done.catch(() => {});
    if (stream) return queue;
    const { result, final } = await done;
    return {
      id,
      object: kind === 'chat' ? 'chat.completion' : 'text_completion',
      created,
      model,
      choices: [
        kind === 'chat'
          ? { index: 0, message: { role: 'assistant', content: result.text }, finish_reason: final.choices[0]?.finish_reason ?? null }
          : { index: 0, text: result.text, finish_reason: final.choices[0]?.finish_reason ?? null },
      ],
      usage: final.usage,
      timings: final.timings,
    } as ChatCompletion | Completion;
  }
}

/** A chunk of either endpoint (the Worker's stream is the same for both). */
type AnyChunk = ChatCompletionChunk | CompletionChunk;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function chunkOf(id: string, created: number, model: string, kind: 'chat' | 'text', text: string, first: boolean): AnyChunk {
  return {
    id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model,
    choices: [kind === 'chat' ? { index: 0, delta: first ? { role: 'assistant', content: text } : { content: text }, finish_reason: null } : { index: 0, text, finish_reason: null }],
  } as AnyChunk;
}

function finalChunk(id: string, created: number, model: string, kind: 'chat' | 'text', r: GenerateResult, timings: LocalTimings): AnyChunk {
  const finish = r.finish_reason === 'stop' ? 'stop' : r.finish_reason === 'length' ? 'length' : r.finish_reason;
  return {
    id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model,
    choices: [kind === 'chat' ? { index: 0, delta: {}, finish_reason: finish } : { index: 0, text: '', finish_reason: finish }],
    usage: { prompt_tokens: r.prompt_tokens, completion_tokens: r.completion_tokens, total_tokens: r.prompt_tokens + r.completion_tokens },
    timings,
  } as AnyChunk;
}

/** The Worker's per-step cost in the package's names. */
function stepCost(c: RawStepCost | null | undefined): StepCost | undefined {
  if (!c) return undefined;
  return {
    dispatches: c.dispatches,
    passes: c.passes,
    submits: c.submits,
    pipelineChanges: c.pipeline_changes,
    bindGroupChanges: c.bind_group_changes,
    bytesWritten: c.bytes_written,
    bytesRead: c.bytes_read,
    encodeMs: c.encode_ms ?? undefined,
    steps: c.steps,
    hostWaitMs: c.host_wait_ms ?? undefined,
    inFlight: c.in_flight ?? undefined,
  };
}

/** Prefill and decode rates, TTFT and per-token times, on the Worker's clock. */
function timingsOf(r: GenerateResult, info: EngineInfo | undefined, cold: boolean, probe: ProbeReport | undefined): LocalTimings {
  const t = r.token_times_ms;
  const first = t[0];
  const last = t[t.length - 1];
  const evaluated = r.prompt_tokens - r.reused_tokens;
  const ttft = first === undefined ? undefined : first - r.start_ms;
  const decode = first !== undefined && last !== undefined && t.length > 1 && last > first ? (1000 * (t.length - 1)) / (last - first) : undefined;
  const ceiling = probe && info && info.weightBytesPerToken > 0 ? (probe.read_gb_per_s * 1e9) / info.weightBytesPerToken : undefined;
  return {
    roofline:
      probe && ceiling !== undefined
        ? { read_gb_per_s: probe.read_gb_per_s, ceiling_tokens_per_second: ceiling, share: decode === undefined ? undefined : decode / ceiling }
        : undefined,
    prompt_tokens_evaluated: evaluated,
    ttft_ms: ttft,
    prefill_tokens_per_second: ttft && ttft > 0 ? (1000 * evaluated) / ttft : undefined,
    decode_tokens_per_second: decode,
    token_times_ms: t.map((x) => x - r.start_ms),
    tokens: r.tokens,
    gpu: { submits: r.submits, dispatches: r.dispatches, readback_bytes: r.readback_bytes, pipelines_compiled: r.pipelines_compiled },
    cpu: info?.backend === 'cpu' ? { passes: r.cpu_passes, threads: info.threads, simd: info.simd } : undefined,
    perTokenCost: stepCost(r.per_token_cost),
    prefillCost: stepCost(r.prefill_cost),
    adapter: info?.adapter,
    backend: info?.backend,
    profile: info?.backend === 'webgpu' ? info.profile : undefined,
    cold,
  };
}

/** An async iterator fed by the Worker's messages. */
class ChunkQueue implements AsyncIterable<AnyChunk> {
  private items: AnyChunk[] = [];
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;
  /** Called when the consumer stops iterating before the end. */
  onAbandon: (() => void) | undefined;

  push(c: AnyChunk): void {
    this.items.push(c);
    this.wake?.();
  }
  end(): void {
    this.ended = true;
    this.wake?.();
  }
  fail(e: Error): void {
    this.error = e;
    this.wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncIterator<AnyChunk> {
    try {
      for (;;) {
        const c = this.items.shift();
        if (c) {
          yield c;
          continue;
        }
        if (this.error) throw this.error;
        if (this.ended) return;
        await new Promise<void>((r) => (this.wake = r));
        this.wake = undefined;
      }
    } finally {
      if (!this.ended && !this.error) this.onAbandon?.();
    }
  }
}
