// What each engine failure means for the user, by the `EngineError` name (see
// pkg/src/engine/error.ts), and what they can do about it.

export interface Explained {
  /** A sentence or two for the alert. */
  text: string;
  /** The engine is unusable: offer to load the model again. */
  reload?: boolean;
  /** Caching failed for space: offer to load without caching. */
  noCache?: boolean;
  /** The user asked for it (cancel, stop): not an alert. */
  quiet?: boolean;
}

const SUPPORTED = 'Llama-family models (SmolLM2, TinyLlama, Llama 3.2, Qwen2) and Gemma 3, in F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q4_K or Q6_K';

function detail(message: string): string {
  const m = message.trim();
  return m ? ` (${m.replace(/\.$/, '')})` : '';
}

export function explain(e: unknown): Explained {
  const name = e instanceof Error ? e.name : 'Error';
  const message = e instanceof Error ? e.message : String(e);
  switch (name) {
    case 'AbortError':
      return { text: 'Cancelled.', quiet: true };
    case 'WebGpuUnavailable':
      return { text: `WebGPU is not available in this browser${detail(message)}.` };
    case 'NoAdapter':
      return { text: `WebGPU offered no adapter: the GPU may be blocklisted or WebGPU turned off${detail(message)}.` };
    case 'DownloadError':
      return { text: `The download failed${detail(message)}. Check the URL and your connection.` };
    case 'TypeError':
      // fetch() rejects with a bare TypeError for network, CORS and policy failures alike.
      return {
        text: `The download could not start${detail(message)}: the server may not allow this page to read the file (CORS), or the connection failed.`,
      };
    case 'InvalidModel':
      return { text: `That file is not a usable GGUF model: it is malformed, cut short, corrupt, or another format${detail(message)}.` };
    case 'ChecksumMismatch':
      return {
        text: `The file is not the model this choice pins: its SHA-256 differs, so it was not loaded${detail(message)}. A copy kept in this browser that did not match was deleted; loading again downloads the model afresh.`,
        reload: true,
      };
    case 'EngineCrashed':
      return { text: `The engine stopped with an internal error${detail(message)}. Load the model again to continue.`, reload: true };
    case 'UnsupportedModel':
      return { text: `The engine cannot run this model yet${detail(message)}. It runs ${SUPPORTED}.` };
    case 'DeviceLost':
      return { text: `The GPU device was lost (a driver reset, or the browser's GPU process ended)${detail(message)}. Load the model again to continue.`, reload: true };
    case 'OutOfMemory':
      return { text: `The GPU ran out of memory for this model${detail(message)}. Try a smaller model, or close other tabs that use the GPU.`, reload: true };
    case 'LimitExceeded':
      return { text: `The model needs more than this GPU adapter allows${detail(message)}. Try a smaller model.` };
    case 'QuotaExceededError':
      return { text: `There is not enough storage to keep the model in this browser${detail(message)}. Delete kept models below, or load it without keeping a copy.`, noCache: true };
    case 'InvalidRequest':
      return { text: `The engine refused the request${detail(message)}.` };
    case 'InvalidState':
    case 'WorkerError':
      return { text: `The engine stopped${detail(message)}. Load the model again.`, reload: true };
    default:
      return { text: `${name}: ${message}` };
  }
}
