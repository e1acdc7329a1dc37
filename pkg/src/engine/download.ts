// The engine Worker's download side: a model source (a URL or a Blob) opened as a stream of
// bytes with its size when known, and a failed fetch named for what a user can do about it.

import { EngineError, messageOf } from './error.js';

/**
 * Why `fetch(url)` rejected. Browsers reject alike ("Failed to fetch", "network error") for
 * a server that is down and for one that answers without CORS headers; a `no-cors` request
 * tells them apart, since it gets an (opaque) answer from any server that is up.
 */
async function unreachable(url: string, signal: AbortSignal, e: unknown): Promise<EngineError> {
  const target = new URL(url, self.location.href);
  if (navigator.onLine === false) {
    return new EngineError('DownloadError', `the browser is offline: could not fetch the model at ${target.href}`, 'offline');
  }
  const crossOrigin = target.origin !== self.location.origin;
  if (crossOrigin && self.crossOriginIsolated) {
    // Cross-origin isolation (COEP) blocks the no-cors answer of a server that sends no
    // Cross-Origin-Resource-Policy, so the probe below cannot tell the two cases apart.
    return new EngineError(
      'DownloadError',
      `no readable answer from ${target.origin} for the model: either the server is down or unreachable, or it answered ` +
        `without CORS headers for this page (${self.location.origin}); this page is cross-origin isolated, where the two ` +
        `cannot be told apart (${messageOf(e)})`,
      'unreachable-or-cors',
    );
  }
  const answered =
    crossOrigin && (await fetch(target, { mode: 'no-cors', method: 'HEAD', signal, cache: 'no-store' }).then(() => true, () => false));
  if (answered) {
    return new EngineError(
      'DownloadError',
      `${target.origin} answered, but without CORS headers that let this page (${self.location.origin}) read the model: ` +
        'the server must send Access-Control-Allow-Origin, or the model must be served from this origin',
      'cors',
    );
  }
  return new EngineError(
    'DownloadError',
    `could not connect to ${target.origin} for the model (the server is down or unreachable, or the address is wrong): ${messageOf(e)}`,
    'unreachable',
  );
}

/** The bytes of `model` as a stream, with its size when known. */
export async function openModel(model: string | Blob, signal: AbortSignal): Promise<{ stream: ReadableStream<Uint8Array>; total?: number }> {
  if (typeof model !== 'string') return { stream: model.stream(), total: model.size };
  let res: Response;
  try {
    res = await fetch(model, { signal });
  } catch (e) {
    if (signal.aborted) throw e;
    throw await unreachable(model, signal, e);
  }
  if (!res.ok || !res.body) {
    throw new EngineError('DownloadError', `the model download failed: HTTP ${res.status} ${res.statusText}`.trim(), 'http');
  }
  if ((res.headers.get('content-type') ?? '').startsWith('text/html')) {
    await res.body.cancel().catch(() => {});
    throw new EngineError(
      'DownloadError',
      `${res.url || model} answered with a web page (text/html), not a GGUF file: check the model's URL ` +
        '(many servers answer a missing path with a page)',
      'web-page',
    );
  }
  const length = Number(res.headers.get('content-length'));
  // A compressed transfer's length is not the file's.
  const encoded = (res.headers.get('content-encoding') ?? 'identity') !== 'identity';
  return { stream: res.body, total: Number.isFinite(length) && length > 0 && !encoded ? length : undefined };
}
