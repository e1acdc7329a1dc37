// The one error type of `tpsmeter/engine`, on the page and in the Worker alike.

/**
 * An error from the engine, its cache or its Worker, with a `name` that says why
 * (`WebGpuUnavailable`, `NoAdapter`, `DownloadError`, `InvalidModel`, `ChecksumMismatch`,
 * `LimitExceeded`, `DeviceLost`, `EngineCrashed`, `QuotaExceededError`, `CacheError`,
 * `AbortError`, `WorkerError`: the Worker failed to start or died outside a request, ...).
 * Errors cross from the Worker by name and message.
 */
export class EngineError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}
