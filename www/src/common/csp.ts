// The page's `connect-src`: the only origins it may talk to. A static host cannot know the
// URL a user will type, and CSP policies only ever intersect (a later policy cannot widen an
// earlier one), so the static policy (the <meta> in each page and `tpsmeter serve`'s
// header) leaves `connect-src` out and this module adds it at boot, before any other code
// runs: the page's own origin, the providers' API origins, loopback servers, the GGUF hosts
// of the demo's presets, and the origins this user approved on this device. Adding an origin
// reloads the page with the new list (explained in the form).

import { presetOrigins } from './presets';

const STORAGE_KEY = 'tpsmeter.allowedOrigins';

/** Local servers on any port (Ollama, llama.cpp, vLLM, LM Studio, the emulator). */
export const LOOPBACK_SOURCES = ['http://localhost:*', 'http://127.0.0.1:*'];

/** Where the demo's model presets are downloaded from. */
export const MODEL_HOST_ORIGINS = ['https://huggingface.co', 'https://cdn-lfs.huggingface.co', 'https://cdn-lfs-us-1.huggingface.co', 'https://cas-bridge.xethub.hf.co'];

/** Origins the user added on this device (validated http(s) origins only). */
export function userOrigins(): string[] {
  try {
    const v = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? '[]');
    return Array.isArray(v) ? v.filter((o): o is string => typeof o === 'string' && originOf(o) === o) : [];
  } catch {
    return [];
  }
}

/** The origin of `url` when it is an http(s) URL, else undefined. */
export function originOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

function isLoopback(u: URL): boolean {
  return u.protocol === 'http:' && (u.hostname === 'localhost' || u.hostname === '127.0.0.1');
}

/** Whether the page's policy lets it fetch `url`. */
export function isAllowed(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url, location.href);
  } catch {
    return false;
  }
  if (u.origin === location.origin || isLoopback(u)) return true;
  return presetOrigins().includes(u.origin) || MODEL_HOST_ORIGINS.includes(u.origin) || userOrigins().includes(u.origin);
}

/** Adds `origin` to this device's list; the page must reload for the policy to include it. */
export function allowOrigin(origin: string): void {
  const list = userOrigins();
  if (!list.includes(origin)) list.push(origin);
  localStorage.setItem(STORAGE_KEY, JSON.stringify(list));
}

export function forgetOrigin(origin: string): void {
  localStorage.setItem(STORAGE_KEY, JSON.stringify(userOrigins().filter((o) => o !== origin)));
}

/** The `connect-src` sources, in order. */
export function connectSources(): string[] {
  return ["'self'", ...LOOPBACK_SOURCES, ...presetOrigins(), ...MODEL_HOST_ORIGINS, ...userOrigins()];
}

/** Installs the policy; must run before anything fetches. */
export function installConnectPolicy(): void {
  const meta = document.createElement('meta');
  meta.httpEquiv = 'Content-Security-Policy';
  meta.content = `connect-src ${connectSources().join(' ')}`;
  document.head.prepend(meta);
}
