// The exporter's bounds, apart from its code so that the eager entry can name them.

/** The most series (instrument × attribute set) one export window holds; more are dropped and counted. */
export const MAX_SERIES = 512;

/**
 * One request body's most bytes. Browsers give all `keepalive` requests in flight 64 KiB
 * together (the Fetch standard's quota), so a body is kept to 60 KB.
 */
export const MAX_BODY = 60_000;
