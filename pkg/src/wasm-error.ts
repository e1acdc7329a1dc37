// The error of a failed wasm load, in a module of its own: the Meter's eager entry exports
// it, and must not pull the loader in with it.

/**
 * Thrown when a `.wasm` file of the package cannot be loaded: the server answered with an
 * error status, or with a web page (a dev server's fallback) where the file should be.
 */
export class WasmLoadError extends Error {
  /** The URL that was fetched. */
  readonly url: string;
  constructor(url: string, message: string) {
    super(message);
    this.name = 'WasmLoadError';
    this.url = url;
  }
}
