// Whether this browser can run the engine, asked before anything is downloaded: a missing
// WebGPU should cost the user a sentence, not 100 MB and a cryptic error.

import { el, fill } from '../common/dom';

// TypeScript's DOM library has no WebGPU types (they live in @webgpu/types); the page reads
// only these few members.
interface AdapterInfoLike {
  vendor?: string;
  architecture?: string;
  description?: string;
  isFallbackAdapter?: boolean;
}
interface AdapterLike {
  info?: AdapterInfoLike;
  features?: { has(name: string): boolean };
  isFallbackAdapter?: boolean;
}
interface GpuLike {
  requestAdapter(options?: { powerPreference?: 'high-performance' | 'low-power' }): Promise<AdapterLike | null>;
}

export interface Support {
  ok: boolean;
  /** Why the engine cannot run here (when not ok). */
  reason?: string;
  /** A readable adapter name (when ok). */
  adapter?: string;
  /** The adapter offers `shader-f16` (the engine's faster f16 kernels). */
  shaderF16?: boolean;
  /** A CPU rasteriser (SwiftShader, llvmpipe) rather than a GPU. */
  cpu?: boolean;
}

const FLAG = '--enable-unsafe-webgpu';
const BROWSERS = `Chrome or Edge 113+, Safari 26+, or Firefox 141+ on Windows; on Linux, Chromium needs ${FLAG} (and Vulkan drivers)`;

export async function checkSupport(): Promise<Support> {
  const gpu = (navigator as Navigator & { gpu?: GpuLike }).gpu;
  if (!gpu) {
    // Browsers expose WebGPU only to secure pages: a plain-http host is the likelier cause.
    if (!window.isSecureContext) {
      return { ok: false, reason: 'WebGPU is available only to pages served over HTTPS (or from localhost), and this page is not.' };
    }
    return { ok: false, reason: `WebGPU is not available in this browser. It needs ${BROWSERS}.` };
  }
  let adapter: AdapterLike | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    adapter = null;
    console.info('requestAdapter failed:', e instanceof Error ? e.message : e);
  }
  if (!adapter) {
    return {
      ok: false,
      reason: `This browser has WebGPU but offered no adapter: the GPU may be blocklisted or WebGPU turned off in its settings. It needs ${BROWSERS}.`,
    };
  }
  const info = adapter.info ?? {};
  const parts = [info.vendor, info.architecture, info.description].filter((p): p is string => !!p);
  const lower = parts.join(' ').toLowerCase();
  const fallback = info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
  // The same test the engine's Worker makes to pick its CPU kernel shapes.
  const cpu = fallback || lower.includes('swiftshader') || lower.includes('llvmpipe') || lower.includes('lavapipe');
  return { ok: true, adapter: parts.join(' ') || 'unnamed WebGPU adapter', shaderF16: adapter.features?.has('shader-f16') ?? false, cpu };
}

/** Writes the result into the support panel. */
export function showSupport(target: HTMLElement, s: Support): void {
  if (!s.ok) {
    // The flag as code, kept on one line (it breaks at its hyphens otherwise).
    const [before, ...after] = (s.reason ?? '').split(FLAG);
    const reason: (Node | string)[] = [before ?? ''];
    for (const part of after) reason.push(el('code', { class: 'nowrap' }, FLAG), part);
    fill(target, el('p', { class: 'notice bad' }, el('strong', {}, 'This browser cannot run the demo. '), ...reason));
    return;
  }
  const notes: HTMLElement[] = [el('p', {}, 'WebGPU is available. Adapter: ', el('span', { class: 'mono' }, s.adapter ?? ''), '.')];
  if (s.cpu) {
    notes.push(
      el('p', { class: 'notice' }, 'This adapter is a CPU rasteriser (a software fallback, not a GPU): the model runs, slowly. Expect single-digit tokens per second.'),
    );
  }
  if (!s.shaderF16) {
    notes.push(el('p', { class: 'notice' }, 'The adapter lacks the shader-f16 feature, so the engine uses its f32 kernels: slower, same answers.'));
  }
  fill(target, ...notes);
}
