// Instantiating a wasm-bindgen module once, shared by the benchmark glue (`raw`) and the
// meter's smaller parser (`raw-meter`), which must not import each other: each is its own
// lazily loaded chunk.

/**
 * Calls `init` with the `.wasm` at `url` once and resolves to `glue`; a failed load is not
 * cached, so a later call retries. The URL is built by the caller with
 * `new URL(..., import.meta.url)`, which works unbundled in a `<script type="module">` page
 * and in bundlers that understand that pattern (Vite, webpack 5, Rollup with the URL plugin).
 */
export function loadOnce<T>(
  init: (input: { module_or_path: URL }) => Promise<unknown>,
  url: URL,
  glue: T,
): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= init({ module_or_path: url }).then(
      () => glue,
      (e: unknown) => {
        loading = undefined;
        throw e;
      },
    );
    return loading;
  };
}
