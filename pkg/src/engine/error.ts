// The one error type of `tpsmeter/engine`, on the page and in the Worker alike.

/**
 * An error from the engine, its cache or its Worker, with a `name` that says why
 * (`WebGpuUnavailable`, `NoAdapter`, `DownloadError`, `InvalidModel`, `ChecksumMismatch`,
 * `LimitExceeded`, `DeviceLost`, `EngineCrashed`, `QuotaExceededError`, `CacheError`,
 * `AbortError`, `WorkerError`: the Worker failed to start or died outside a request, ...).
 * Errors cross from the Worker by name and message.
 */
export class EngineError extends Error {
  /**
   * For a `DownloadError`, what happened: `http` (an error status), `unreachable` (no
   * connection: the server is down, the address wrong, DNS failed), `cors` (the server
   * answered, without CORS headers that let this page read it), `unreachable-or-cors` (one
   * of the two, on a cross-origin isolated page, where they cannot be told apart),
   * `offline` (the browser is),
   * `cut` (the connection broke mid-download), `web-page` (a page came back where the
   * model should be).
   */
  readonly reason?: string;
  constructor(name: string, message: string, reason?: string) {
    super(message);
    this.name = name;
    if (reason !== undefined) this.reason = reason;
  }
}

/** An exception's message, whatever was thrown. */
export const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
