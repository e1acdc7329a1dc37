// Why a fetch was rejected. The browser says only "TypeError: Failed to fetch" for a refused
// connection, a DNS failure, a TLS error and a CORS refusal alike. A `no-cors` request to
// the same URL tells the cases apart: it resolves (with an opaque response) when the server
// answered, so the first failure was CORS; it fails too when the server cannot be reached.

import type { FailClass } from '../types.js';
import { redactUrl } from './redact.js';

/** How long the reachability probe may take. */
const PROBE_TIMEOUT_MS = 5000;

export interface Classified {
  errorClass: FailClass;
  message: string;
}

/** Explains a CORS refusal and what the server (or a proxy) must send. */
export function corsMessage(url: string): string {
  const origin = typeof location !== 'undefined' ? location.origin : 'this page';
  return (
    `CORS: the server at ${redactUrl(url)} answered but did not allow this page (${origin}) to read ` +
    'the response. The server must send Access-Control-Allow-Origin (the page origin or *) on the ' +
    'response, and answer the OPTIONS preflight with Access-Control-Allow-Methods: POST and ' +
    'Access-Control-Allow-Headers covering the request headers (authorization, content-type, ' +
    'x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, x-goog-api-key). ' +
    'For Anthropic this package already sends anthropic-dangerous-direct-browser-access: true. ' +
    'Add Timing-Allow-Origin for connection and queueing detail. Otherwise call the API through ' +
    'a same-origin proxy.'
  );
}

/**
 * Classifies a rejected fetch (not one this package aborted) from its `fetchErrorText`
 * (`stream.ts`; kept there so the reader Worker loads nothing of the wasm glue).
 * Runs on the page even when the fetch ran in the reader Worker: the probe must meet the
 * page's own embedder policy, which the report describes. Never rejects.
 */
export async function classifyFetchError(url: string, detail: string): Promise<Classified> {
  // The request could not even be built (an invalid header value, e.g. a key with a line
  // break): nothing went out, so there is nothing to probe.
  if (/Failed to execute|Invalid (?:value|name)|not a valid/i.test(detail)) {
    return { errorClass: 'other', message: `the browser refused to send the request: ${detail}` };
  }
  let reachable = false;
  try {
    const probe = await fetch(url, {
      mode: 'no-cors',
      cache: 'no-store',
      credentials: 'omit',
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    reachable = true;
    probe.body?.cancel().catch(() => {});
  } catch {
    reachable = false;
  }
  if (reachable) return { errorClass: 'cors', message: corsMessage(url) };
  let message =
    `cannot reach ${redactUrl(url)} (${detail}): the connection was refused, the host did not ` +
    'resolve, TLS failed, or the browser blocked the request (mixed content, private network ' +
    'access); the browser does not say which';
  if (typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated) {
    // COEP require-corp blocks the opaque probe response unless the server sends CORP.
    message +=
      '. This page is cross-origin isolated (COEP), so a server that answers but lacks CORS ' +
      'headers looks the same unless it sends Cross-Origin-Resource-Policy: cross-origin; if ' +
      'the server is up, check its CORS headers (Access-Control-Allow-Origin and the OPTIONS preflight)';
  }
  return { errorClass: 'connect', message };
}
