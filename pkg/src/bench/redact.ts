// Error messages go into reports, consoles and bug trackers: they must never carry the API
// key. The package never puts request headers into a message; this strips what could still
// slip in (a key in a query string, the key's own text echoed by a server).

/** Query parameters that carry credentials (Gemini's `key=`, signed URLs, tokens). */
const SECRET_PARAMS = /([?&](?:key|api[-_]?key|access[-_]?token|token|auth|sig|signature)=)[^&#\s"'<>]*/gi;

/** A function that removes secrets from a message: key-like query values and `apiKey` itself. */
export function redactor(apiKey?: string): (message: string) => string {
  // A key shorter than this would match innocent text; it cannot be a real key anyway.
  const key = apiKey && apiKey.length >= 8 ? apiKey : undefined;
  return (message) => {
    let m = message.replace(SECRET_PARAMS, '$1REDACTED');
    if (key) m = m.split(key).join('REDACTED');
    return m;
  };
}

/** `url` with credential query values replaced (for messages that name the URL). */
export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1REDACTED');
}
