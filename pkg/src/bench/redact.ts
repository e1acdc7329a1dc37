// Error messages go into reports, consoles and bug trackers: they must never carry the API
// key. The package never puts request headers into a message; this strips what could still
// slip in (a key in a query string, the key's own text echoed by a server, or its base64 as
// basic auth would carry it). The records get the core's redactor on top (every window of
// eight characters of the key, in every encoding): this is the first line, for the page's
// own messages.

import { redactUrl as coreRedactUrl } from '../raw.js';

/** Query parameters that carry credentials (Gemini's `key=`, signed URLs, tokens). */
const SECRET_PARAMS = /([?&](?:key|api[-_]?key|access[-_]?token|token|auth|sig|signature)=)[^&#\s"'<>]*/gi;

/** A key shorter than this would match innocent text; it cannot be a real key anyway. */
const MIN_SECRET_CHARS = 8;

/** A function that removes secrets from a message: key-like query values and `apiKey` itself. */
export function redactor(apiKey?: string): (message: string) => string {
  const key = apiKey && apiKey.length >= MIN_SECRET_CHARS ? apiKey : undefined;
  // Longest first: the whole encoding before the runs it contains.
  const forms = key ? [key, ...base64Forms(key)].sort((a, b) => b.length - a.length) : [];
  return (message) => {
    let m = message.replace(SECRET_PARAMS, '$1REDACTED');
    for (const f of forms) m = m.split(f).join('REDACTED');
    return m;
  };
}

/**
 * The base64 runs `secret` decides wherever it sits in an encoded text (`base64(user:key)`
 * holds the key at some offset): its own encoding, and those of it less its first one and
 * two bytes, cut to whole 3-byte groups (the group it starts in mixes in other bytes).
 */
function base64Forms(secret: string): string[] {
  const bytes = new TextEncoder().encode(secret);
  const b64 = (b: Uint8Array): string => btoa(Array.from(b, (c) => String.fromCharCode(c)).join(''));
  const forms = [b64(bytes)];
  for (const skip of [1, 2]) {
    const rest = bytes.subarray(skip);
    forms.push(b64(rest.subarray(0, rest.length - (rest.length % 3))));
  }
  return forms.filter((f) => f.length >= MIN_SECRET_CHARS);
}

/**
 * `url` without credentials, for messages that name it: the core's redactor (the CLI's, the
 * report's), through the bench module, which every caller has loaded (`bench()` loads it
 * first). Were it not, the URL is left out rather than shown.
 */
export function redactUrl(url: string): string {
  try {
    return coreRedactUrl(url);
  } catch {
    return '(the URL)';
  }
}
