// Where the package's own files are served, for bundlers that emit neither its wasm nor its
// Workers (esbuild): the app copies `dist/` and `wasm/` there and says so once.

let base: URL | undefined;

/**
 * Tells the package that its files (`dist/`, `wasm/`) are served at `url` (e.g.
 * `'/tpsmeter/'`), for a bundler that leaves them behind (esbuild). Call it before
 * `bench()`, a `Meter`'s report or `createEngine()`.
 */
export function setPackageBase(url: string | URL): void {
  const u = new URL(url, globalThis.location?.href);
  if (!u.pathname.endsWith('/')) u.pathname += '/';
  base = u;
}

/** The base `setPackageBase` set, if any. */
export const packageBase = (): URL | undefined => base;
