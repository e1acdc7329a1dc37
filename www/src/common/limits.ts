// What the page accepts from outside (an imported file, a permalink), and how much of a run
// it draws. Every cap is checked before anything is stored in IndexedDB, so no file can
// leave History holding a run the page cannot list, open or delete; the drawing caps also
// hold for runs stored before these checks existed, or run in this browser at the form's
// largest settings.

/** The caps on an imported report, with the reason for each size. */
export const LIMITS = {
  /**
   * Bytes of an imported file (or of the JSON a permalink inflates to). 64 MiB: a report
   * that size imports and draws in a few seconds; past it parsing, validating and storing
   * take long enough to look like a hang, and a report of 300 requests × 600 chunks is
   * about 6 MB.
   */
  bytes: 64 * 2 ** 20,
  /**
   * Nesting of arrays and objects. A report nests 6 deep (report → requests → record →
   * metrics → paint → lag_ms); 32 leaves room for fields to come, and a file of nested
   * brackets is refused after its 33rd byte instead of reaching the JSON parser.
   */
  depth: 32,
  /**
   * Bytes of any one JSON string (a key or a value, escapes counted as written). The
   * longest strings of a report are URLs and file paths (a few KB at most) and error
   * messages (at most 1000 characters, 6000 bytes escaped); a model name is under 200.
   */
  stringBytes: 16 * 2 ** 10,
  /** Load levels of one report: tpsmeter runs at most 64 (`MAX_LEVELS` of the core). */
  levels: 1024,
  /**
   * Requests of one report or rows of one CSV: the form's largest run is 64 levels ×
   * 10,000 requests.
   */
  requests: 1_000_000,
  /**
   * Per-chunk values of one report, all requests together (`chunk_times_ms`,
   * `itl_chunk_ms`, paint `lag_ms` and `tokens_per_frame`): the distributions are drawn
   * from every one of them, and 10 M keep that under a second.
   */
  chunkValues: 10_000_000,
  /** Columns of an imported CSV: tpsmeter writes 20 (the CLI 28). */
  csvColumns: 64,
} as const;

/** How much of a run a chart or a table shows; what is left out is said on the page. */
export const DRAW = {
  /** Points of one line of the token timelines (every k-th chunk past it). */
  timelinePoints: 2000,
  /** Points of the degradation curve (every k-th level past it). */
  levelPoints: 500,
  /** Rows of the per-level table. */
  levelRows: 200,
  /** Rows of the request table of a CSV import. */
  requestRows: 500,
  /** Rows of the error table. */
  errorRows: 200,
  /** Warnings listed. */
  warnings: 20,
  /** Characters of a title, a model name or a URL in a line of text. */
  textChars: 200,
} as const;

/** A report or file over one of the caps; the message names the cap. */
export class LimitError extends Error {
  override name = 'LimitError';
}

/** Bytes as "64 MB" or "16 KB" (binary units, as file managers show them). */
export function sizeText(bytes: number): string {
  if (bytes < 2 ** 20) return `${Math.round(bytes / 2 ** 10).toLocaleString('en-US')} KB`;
  return `${(bytes / 2 ** 20).toLocaleString('en-US', { maximumFractionDigits: 1 })} MB`;
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** Refuses a file larger than the cap, before any of it is read. */
export function checkSize(what: string, bytes: number): void {
  if (bytes > LIMITS.bytes) throw new LimitError(`${what} is ${sizeText(bytes)}: over the cap of ${sizeText(LIMITS.bytes)} for an imported file`);
}

/**
 * A linear scan of JSON bytes as they arrive (streaming), before any parser sees them:
 * refuses nesting deeper than `LIMITS.depth` and strings longer than `LIMITS.stringBytes`.
 * It knows strings and escapes, nothing else: what it lets through may still be invalid JSON,
 * which the parser then refuses. Works on UTF-8, whose multi-byte sequences never contain
 * the ASCII bytes it looks for.
 */
export class JsonGuard {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private run = 0;
  private at = 0;

  constructor(private readonly what: string) {}

  feed(bytes: Uint8Array): void {
    let { depth, inString, escaped, run } = this;
    const maxDepth = LIMITS.depth;
    const maxString = LIMITS.stringBytes;
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) {
          inString = false;
          continue;
        }
        if (++run > maxString) {
          throw new LimitError(`${this.what} has a string longer than ${sizeText(maxString)} (at byte ${count(this.at + i)}): over the cap for one text (a model name, a URL, a message)`);
        }
      } else if (c === 0x22) {
        inString = true;
        run = 0;
      } else if (c === 0x5b || c === 0x7b) {
        if (++depth > maxDepth) throw new LimitError(`${this.what} nests arrays or objects more than ${maxDepth} deep (at byte ${count(this.at + i)}): over the cap (a report nests 6 deep)`);
      } else if (c === 0x5d || c === 0x7d) depth--;
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    this.run = run;
    this.at += bytes.length;
  }
}

function length(v: unknown): number {
  return Array.isArray(v) ? v.length : 0;
}

/**
 * The counts of a parsed report against the caps (levels, requests, per-chunk values).
 * Cheap, and before the schema check: it reads only the array lengths, whatever the shape.
 */
export function checkCounts(what: string, json: unknown): void {
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new Error(`${what} is not a tpsmeter report`);
  const report = json as { levels?: unknown; requests?: unknown };
  const levels = length(report.levels);
  if (levels > LIMITS.levels) throw new LimitError(`${what} has ${count(levels)} load levels: over the cap of ${count(LIMITS.levels)} (tpsmeter runs at most 64)`);
  const requests = length(report.requests);
  if (requests > LIMITS.requests) throw new LimitError(`${what} has ${count(requests)} requests: over the cap of ${count(LIMITS.requests)}`);
  let values = 0;
  for (let i = 0; i < requests; i++) {
    const r = (report.requests as unknown[])[i] as { chunk_times_ms?: unknown; metrics?: { itl_chunk_ms?: unknown; paint?: { lag_ms?: unknown; tokens_per_frame?: unknown } | null } | null } | null;
    if (!r || typeof r !== 'object') continue;
    values += length(r.chunk_times_ms);
    const m = r.metrics;
    if (m && typeof m === 'object') {
      values += length(m.itl_chunk_ms);
      if (m.paint && typeof m.paint === 'object') values += length(m.paint.lag_ms) + length(m.paint.tokens_per_frame);
    }
  }
  if (values > LIMITS.chunkValues) throw new LimitError(`${what} has ${count(values)} per-chunk values: over the cap of ${count(LIMITS.chunkValues)}`);
}

/** `s` as text of at most `max` characters (an ellipsis marks a cut). */
export function short(s: unknown, max: number = DRAW.textChars): string {
  const t = typeof s === 'string' ? s : s === undefined || s === null ? '' : String(s);
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/**
 * `n` evenly spaced indices of `0..length` (the first and the last included), or undefined
 * when all `length` fit.
 */
export function strideIndices(length: number, n: number): number[] | undefined {
  if (length <= n) return undefined;
  const out: number[] = [];
  for (let k = 0; k < n; k++) out.push(Math.round((k * (length - 1)) / (n - 1)));
  return out;
}
