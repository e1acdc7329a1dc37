// Messages between the page (`createEngine`) and the engine's Worker. Every request carries
// an id; the Worker answers each with exactly one `done` or `error`, after any number of
// `progress` or `token` messages for that id.

/** Where the model comes from. */
/**
 * A synthetic model instead of a file: a real model's exact shapes and tensor types with
 * seeded random weights, built in the engine's Worker (`NAME[:QUANT]`, e.g.
 * `SmolLM2-135M:Q4_1`; names: SmolLM2-135M, Gemma-3-270M, SmolLM2-360M, Qwen2.5-0.5B,
 * Llama-3.2-1B, Qwen2.5-1.5B; QUANT: Q4_0, Q4_1 (default), Q8_0, F16). Its speed is the real
 * model's and its text is noise; `info.synthetic` is true.
 */
export interface SyntheticModel {
  synthetic: string;
  /** Seed of the weights (default 1). */
  seed?: number;
}

export type ModelSource = string | Blob | SyntheticModel;

/** Which backend runs the model: `auto` picks WebGPU on a hardware adapter, else the CPU. */
export type BackendChoice = 'auto' | 'webgpu' | 'cpu';

export type ToWorker =
  | {
      id: number;
      kind: 'load';
      model: ModelSource;
      cache: boolean;
      sha256?: string;
      backend?: BackendChoice;
      /** CPU threads asked for (default: one per core). */
      threads?: number;
      /** `false`: the plain SIMD build even where relaxed SIMD validates. */
      relaxedSimd?: boolean;
      profile?: 'cpu' | 'gpu';
      maxContext?: number;
      inFlight?: number;
    }
  | { id: number; kind: 'generate'; request: string }
  | { id: number; kind: 'probe'; profile?: 'cpu' | 'gpu'; mib?: number }
  | { id: number; kind: 'teacherForced'; prompt: string; tokens: number[] }
  | { id: number; kind: 'cancel' }
  | { id: number; kind: 'abortLoad' }
  | { id: number; kind: 'dispose' }
  /** The CPU pool's threads asked for by `spawnThreads`: one port to each thread's Worker, in order; none, and why, where the page could not make them. */
  | { id: 0; kind: 'threadPorts'; ports: MessagePort[]; error?: string }
  /** A pool thread's Worker failed to load its script. */
  | { id: 0; kind: 'threadFailed'; index: number; message: string };

/** The download's figures, in every progress event of a load. */
export interface DownloadProgress {
  /** Bytes received so far. */
  loaded: number;
  /** Bytes in the file, when known. */
  total?: number;
  /** 0–100, when the total is known. */
  percent?: number;
  /** Bytes per second since the download started. */
  bytesPerSecond: number;
  /** Seconds left at that rate, when the total is known. */
  etaSeconds?: number;
  /** The bytes come from the model cache, not the network. */
  fromCache: boolean;
}

/** How far the GPU kernels' compilation is: graphs prepared of `graphs`, pipelines compiled so far. */
export interface CompileProgress {
  graphsDone: number;
  graphs: number;
  pipelines: number;
}

/**
 * What the engine does before the model's first bytes arrive, in this order (each is
 * reported as it begins): `wasm`, fetching and compiling the backend's WebAssembly; `device`,
 * opening the WebGPU device; `threads`, starting the CPU backend's thread Workers (`threads`
 * of them); `cache`, looking for this browser's copy of the model; `connect`, asking the
 * network (or the File) for the model, after which `cache` comes again where a new copy is to
 * be kept (the copy's file is opened for writing).
 */
export type StartStep = 'wasm' | 'device' | 'threads' | 'cache' | 'connect';

/**
 * A load's progress. `phase` says what it is doing: `start`, a step before the model's bytes
 * flow (`step`, with the download's figures at zero); `download`, reading the file (from the
 * network or this browser's copy) and uploading it as it arrives; then `compile` (WebGPU),
 * preparing every graph the model runs and compiling its GPU kernels, so the first answer
 * runs at full speed, with the download's figures at their final values.
 */
export type LoadProgress =
  | (DownloadProgress & { phase: 'start'; step: StartStep; threads?: number })
  | (DownloadProgress & { phase: 'download' })
  | (DownloadProgress & { phase: 'compile'; compile: CompileProgress });

export type FromWorker =
  | { id: number; kind: 'progress'; progress: LoadProgress }
  | { id: number; kind: 'token'; text: string; token: number | undefined; t: number }
  | { id: number; kind: 'done'; value: unknown }
  | { id: number; kind: 'error'; name: string; message: string; reason?: string }
  /**
   * The engine's Worker asks the page for the CPU pool's `count` thread Workers (this same
   * script at `url`, run as `type`), each told over a port of its own: Firefox's `new Worker`
   * inside a Worker now and then never returned (see `startCpuThreads`); the page's never
   * blocks. Answered with `threadPorts`.
   */
  | { id: 0; kind: 'spawnThreads'; url: string; type: WorkerType; count: number }
  /** The engine's Worker is done with the pool's thread Workers (a failed start): end them. */
  | { id: 0; kind: 'endThreads' };
