// Where this browser can run the engine, asked before anything is downloaded: on WebGPU, or
// on the CPU backend (WebAssembly SIMD) where WebGPU is missing or only a software
// rasteriser. Only a browser without WebAssembly SIMD cannot run it at all.

import { wasmSimdSupported } from 'tpsmeter/engine';
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
  /** The engine runs here, on one backend or the other. */
  ok: boolean;
  /** Why the engine cannot run here at all (when not ok). */
  reason?: string;
  /** WebGPU offers a hardware adapter: `auto` runs there. */
  webgpu: boolean;
  /** Why WebGPU is not used (when not `webgpu`): the CPU backend runs instead. */
  noGpuReason?: string;
  /** A readable adapter name (when WebGPU offered one). */
  adapter?: string;
  /** The adapter offers `shader-f16` (the engine's faster f16 kernels). */
  shaderF16?: boolean;
  /** A CPU rasteriser (SwiftShader, llvmpipe) rather than a GPU. */
  cpu?: boolean;
}

const FLAG = '--enable-unsafe-webgpu';
const BROWSERS = `Chrome or Edge 113+, Safari 26+, or Firefox 141+ on Windows; on Linux, Chromium needs ${FLAG} (and Vulkan drivers)`;

export async function checkSupport(): Promise<Support> {
  const gpu = await checkWebGpu();
  if (gpu.webgpu || wasmSimdSupported()) return { ...gpu, ok: true };
  return {
    ...gpu,
    ok: false,
    reason: `${gpu.noGpuReason ?? ''} The CPU backend needs WebAssembly SIMD, which this browser lacks (every current browser has it).`.trim(),
  };
}

async function checkWebGpu(): Promise<Omit<Support, 'ok'>> {
  const gpu = (navigator as Navigator & { gpu?: GpuLike }).gpu;
  if (!gpu) {
    // Browsers expose WebGPU only to secure pages: a plain-http host is the likelier cause.
    if (!window.isSecureContext) {
      return { webgpu: false, noGpuReason: 'WebGPU is available only to pages served over HTTPS (or from localhost), and this page is not.' };
    }
    return { webgpu: false, noGpuReason: `WebGPU is not available in this browser (it needs ${BROWSERS}).` };
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
      webgpu: false,
      noGpuReason: 'This browser has WebGPU but offered no adapter: the GPU may be blocklisted or WebGPU turned off in its settings.',
    };
  }
  const info = adapter.info ?? {};
  const parts = [info.vendor, info.architecture, info.description].filter((p): p is string => !!p);
  const lower = parts.join(' ').toLowerCase();
  const fallback = info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
  // The same test the engine's Worker makes to pick its CPU kernel shapes.
  const cpu = fallback || lower.includes('swiftshader') || lower.includes('llvmpipe') || lower.includes('lavapipe');
  const name = parts.join(' ') || 'unnamed WebGPU adapter';
  return {
    webgpu: !cpu,
    noGpuReason: cpu ? `WebGPU's only adapter here is a software rasteriser (${name}), not a GPU.` : undefined,
    adapter: name,
    shaderF16: adapter.features?.has('shader-f16') ?? false,
    cpu,
  };
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
  if (!s.webgpu) {
    const [before, ...after] = (s.noGpuReason ?? '').split(FLAG);
    const reason: (Node | string)[] = [before ?? ''];
    for (const part of after) reason.push(el('code', { class: 'nowrap' }, FLAG), part);
    fill(
      target,
      el('p', { class: 'notice' }, ...reason),
      el(
        'p',
        {},
        el('strong', {}, 'The model runs on your CPU instead '),
        '(WebAssembly SIMD): slower than a GPU, the same answers. Choose “GPU (WebGPU)” under “Run on” to try WebGPU anyway.',
      ),
    );
    return;
  }
  const notes: HTMLElement[] = [el('p', {}, 'WebGPU is available. Adapter: ', el('span', { class: 'mono' }, s.adapter ?? ''), '.')];
  if (!s.shaderF16) {
    notes.push(el('p', { class: 'notice' }, 'The adapter lacks the shader-f16 feature, so the engine uses its f32 kernels: slower, same answers.'));
  }
  fill(target, ...notes);
}
