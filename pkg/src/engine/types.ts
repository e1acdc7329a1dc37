// The OpenAI-shaped types of `tpsmeter/engine`.

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | (string & {});
  content: string;
}

/** Sampling and stopping, as OpenAI names them (llama.cpp's extras included). */
export interface SamplingRequest {
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  seed?: number;
  stop?: string[];
  /** Keep generating past end-of-generation tokens (benchmarks). */
  ignore_eos?: boolean;
  stream?: boolean;
  /** Stops generation within one token. */
  signal?: AbortSignal;
}

export interface ChatRequest extends SamplingRequest {
  messages: ChatMessage[];
}

export interface CompletionRequest extends SamplingRequest {
  prompt: string;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What the last chunk (and a whole completion) carries besides `usage`. */
export interface LocalTimings {
  /** Prompt tokens run (the rest were reused from the previous turn's cache). */
  prompt_tokens_evaluated: number;
  ttft_ms: number | undefined;
  prefill_tokens_per_second: number | undefined;
  decode_tokens_per_second: number | undefined;
  /** When each token came back, ms after the request started (Worker clock). */
  token_times_ms: number[];
  /** The sampled ids, in order (an end-of-generation id included). */
  tokens: number[];
  adapter: string | undefined;
  /** Where the model ran. */
  backend: 'webgpu' | 'cpu' | undefined;
  /** WebGPU kernel shapes (undefined on the CPU backend). */
  profile: 'cpu' | 'gpu' | undefined;
  /**
   * The first generation of this engine. Its kernels were compiled while the model loaded
   * (`info.load`), so it runs at the speed of later ones.
   */
  cold: boolean;
  /**
   * GPU work of this generation, prompt included: queue submits, dispatches, bytes read back,
   * and pipelines compiled (0 once the load compiled them all; 0 on the CPU).
   */
  gpu: { submits: number; dispatches: number; readback_bytes: number; pipelines_compiled: number };
  /** CPU work of this generation (the CPU backend only): forward passes, one per prompt chunk or decoded token. */
  cpu?: { passes: number; threads: number; simd: string };
  /**
   * What the host did per decoded token of this generation (decode steps only), from the
   * engine's counters; undefined when no token was decoded after the first. On a real GPU
   * these, not bandwidth, bound a small model's decode (see docs/performance.md).
   */
  perTokenCost: StepCost | undefined;
  /** The same per prompt chunk (up to 64 tokens each); undefined when the prompt was reused. */
  prefillCost: StepCost | undefined;
  /** Decode against the adapter's roofline, once `engine.probe()` has run. */
  roofline?: {
    /** Probed streaming-read bandwidth, GB/s. */
    read_gb_per_s: number;
    /** Bandwidth ÷ weight bytes read per token: the decode rate no kernel can beat. */
    ceiling_tokens_per_second: number;
    /** decode_tokens_per_second ÷ the ceiling. */
    share: number | undefined;
  };
}

/**
 * Host-side cost of a step, averaged per decoded token (`perTokenCost`) or per prompt chunk
 * (`prefillCost`). The same figures as `tpsmeter run --json`'s `per_token_cost`.
 */
export interface StepCost {
  /** Compute dispatches recorded. */
  dispatches: number;
  /** Compute passes begun. */
  passes: number;
  /** Queue submits. */
  submits: number;
  /** `setPipeline` calls: a dispatch of the pipeline already set in the pass needs none. */
  pipelineChanges: number;
  /** `setBindGroup` calls, likewise. */
  bindGroupChanges: number;
  /** Bytes written through `queue.writeBuffer` (positions, token ids, sampler state). */
  bytesWritten: number;
  /** Bytes read back to the Worker (4 per sampled token id). */
  bytesRead: number;
  /** Median ms from a step's start until its `queue.submit` returned, on the Worker's clock. */
  encodeMs: number | undefined;
  /** Steps the figures come from (decode steps, or prompt chunks). */
  steps: number;
  /**
   * Decode: median ms the Worker was blocked on a token's readback (`mapAsync`), from
   * asking for the id until it arrived. With steps in flight the GPU has the next step
   * queued meanwhile.
   */
  hostWaitMs?: number;
  /** Decode: mean steps submitted and unread when a token's readback began. */
  inFlight?: number;
}

/** What the adapter probe measured (`probeAdapter`, `engine.probe()`). */
export interface ProbeReport {
  adapter: string;
  /** Best streaming-read bandwidth, GB/s (10^9 B/s), of the two patterns. */
  read_gb_per_s: number;
  read_pattern: 'contiguous' | 'strided';
  contiguous_gb_per_s: number;
  strided_gb_per_s: number;
  /** Bytes read per dispatch. */
  read_bytes: number;
  /** Extra cost of one more dispatch in a command buffer, µs. */
  dispatch_us: number;
  /** One submit of one tiny dispatch plus a 4-byte readback, ms. */
  submit_readback_ms: number;
}

export type FinishReason = 'stop' | 'length' | 'cancelled' | 'context_full' | null;

/** A streamed chunk of `chat.completions.create`: the text in `choices[0].delta.content`. */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: number; delta: { role?: 'assistant'; content?: string }; finish_reason: FinishReason }>;
  /** On the last chunk. */
  usage?: Usage;
  /** On the last chunk. */
  timings?: LocalTimings;
}

/** A streamed chunk of `completions.create`: the text in `choices[0].text`. */
export interface CompletionChunk {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; finish_reason: FinishReason }>;
  /** On the last chunk. */
  usage?: Usage;
  /** On the last chunk. */
  timings?: LocalTimings;
}

/** The whole answer of `chat.completions.create` without `stream`. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{ index: number; message: { role: 'assistant'; content: string }; finish_reason: FinishReason }>;
  usage: Usage;
  timings: LocalTimings;
}

/** The whole answer of `completions.create` without `stream`. */
export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; finish_reason: FinishReason }>;
  usage: Usage;
  timings: LocalTimings;
}

/** What every backend reports in `engine.info`. */
interface EngineInfoBase {
  /** Where the model runs. */
  backend: 'webgpu' | 'cpu';
  /** Why this backend runs: what `auto` found, or that it was asked for. */
  why: string;
  /** The WebGPU adapter's name, or the CPU backend's description. */
  adapter: string;
  /** Largest context in tokens (the KV cache). */
  maxContext: number;
  /** Weight bytes one decoded token reads. */
  weightBytesPerToken: number;
  vocabSize: number;
  /** A synthetic model (random weights): its speed is the real model's, its text noise. */
  synthetic: boolean;
  /** Where the load spent its time. */
  load: LoadPhases;
}

/** The phases of a model's load, in milliseconds, and what its compilation made. */
export interface LoadPhases {
  /**
   * Reading the file, from the network or from this browser's copy, with the upload that
   * runs as its bytes arrive.
   */
  downloadMs: number;
  /** Of `downloadMs`: the Worker parsing the file and uploading (or, on the CPU, copying) its tensors. */
  uploadMs: number;
  /** Preparing every graph the model runs and compiling their GPU pipelines (0 on the CPU). */
  compileMs: number;
  /** Running each pipeline once, so drivers that finish compiling at first use do so here. */
  primeMs: number;
  /** Distinct compute pipelines compiled. */
  pipelines: number;
  /** Distinct shader modules compiled (pipelines of one shader and defines share one). */
  shaderModules: number;
  /** Graphs prepared: the decode step, each prompt-chunk size, and batched steps. */
  graphs: number;
}

/** `engine.info` on WebGPU. */
export interface WebGpuEngineInfo extends EngineInfoBase {
  backend: 'webgpu';
  /** wgpu's name for the graphics API under it (`BrowserWebGpu` in a browser). */
  graphicsBackend: string;
  /** Kernel shapes: `cpu` for software rasterisers, `gpu` otherwise. */
  profile: 'cpu' | 'gpu';
  shaderF16: boolean;
  maxStorageBindingBytes: number;
  dispatchesPerToken: number;
  /** Decode steps kept submitted ahead of the id read back (1: each id is read first). */
  inFlight: number;
}

/** `engine.info` on the CPU. */
export interface CpuEngineInfo extends EngineInfoBase {
  backend: 'cpu';
  /** Threads computing each matrix product. */
  threads: number;
  /** Why fewer threads run than were asked for, when fewer do. */
  threadsWhy?: string;
  /** Why the plain-SIMD build runs where the browser has relaxed SIMD, when it does. */
  simdWhy?: string;
  /**
   * The vector instructions of the kernels: `simd128`, or `simd128+relaxed` where the browser
   * has relaxed SIMD (its 8-bit dot in the Q4 kernels; the same results, faster).
   */
  simd: string;
  /** Bytes of weights and KV cache held. */
  residentBytes: number;
}

/** What `engine.info` reports: the backend that runs the model, why, and its figures. */
export type EngineInfo = WebGpuEngineInfo | CpuEngineInfo;

/** The Worker's result of one generation. */
export interface GenerateResult {
  text: string;
  prompt_tokens: number;
  reused_tokens: number;
  completion_tokens: number;
  tokens: number[];
  token_times_ms: number[];
  start_ms: number;
  end_ms: number;
  finish_reason: 'stop' | 'length' | 'cancelled' | 'context_full';
  submits: number;
  dispatches: number;
  readback_bytes: number;
  per_token_cost: RawStepCost | null;
  prefill_cost: RawStepCost | null;
  /** Forward passes on the CPU backend (0 on WebGPU). */
  cpu_passes: number;
  /** GPU pipelines compiled during the generation. */
  pipelines_compiled: number;
}

/** The Worker's form of {@link StepCost} (snake_case, as the engine serialises it). */
export interface RawStepCost {
  dispatches: number;
  passes: number;
  submits: number;
  pipeline_changes: number;
  bind_group_changes: number;
  bytes_written: number;
  bytes_read: number;
  encode_ms: number | null;
  steps: number;
  host_wait_ms?: number | null;
  in_flight?: number | null;
}

/** One position of `engine.teacherForced`. */
export interface ForcedStep {
  /** The token the model would have picked (greedy; lowest id on equal logits). */
  argmax: number;
  /** logit(argmax) − logit(forced token): 0 when the model picks the forced token. */
  gap_to_forced: number;
  /** logit(argmax) − the second-best logit: how near a tie the position is. */
  top2_gap: number;
}
