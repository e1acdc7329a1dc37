// Number formatting and the reading-speed vocabulary of both pages. Two kinds of figure:
// prose and tables (`num`, `ms`: 3 significant digits, digit grouping, a unit), and the
// demo's live metric spans (`fixed`, `msFigure`, `mb`: a fixed '.' decimal point and no
// grouping, with the unit in the markup beside them, so a test can parseFloat the text).

/** What a figure with no value shows. */
export const NONE = '–';

/** A number with a precision that suits its size (3 significant digits, no exponent). */
export function num(v: number | null | undefined, unit = ''): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return NONE;
  const a = Math.abs(v);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  const s = v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
  return unit ? `${s} ${unit}` : s;
}

export function ms(v: number | null | undefined): string {
  return num(v, 'ms');
}

/** `n` with `digits` decimals and no grouping, or `NONE`. */
export function fixed(n: number | null | undefined, digits: number): string {
  return n === null || n === undefined || !Number.isFinite(n) ? NONE : n.toFixed(digits);
}

/** Milliseconds as a bare figure: whole from 100 ms, else one decimal. */
export function msFigure(n: number | null | undefined): string {
  return fixed(n, n !== null && n !== undefined && n >= 100 ? 0 : 1);
}

export const MB = 1_000_000;

/** Bytes as MB (10^6, as download sizes are quoted), a bare figure. */
export function mb(bytes: number | undefined, digits = 1): string {
  return fixed(bytes === undefined ? undefined : bytes / MB, digits);
}

/** Seconds, from a value in seconds, as "4.2 s", "2 min 5 s" or "3 min". */
export function duration(s: number): string {
  if (!Number.isFinite(s)) return NONE;
  if (s < 90) return `${num(Math.max(0, s))} s`;
  // Rounded before it is split, so 119.6 s reads "2 min", not "1 min 60 s".
  const whole = Math.round(s);
  const m = Math.floor(whole / 60);
  return whole % 60 === 0 ? `${m} min` : `${m} min ${whole % 60} s`;
}

/**
 * How a streaming rate reads (the bands the field uses: below ~10 tok/s text visibly lags a
 * reader, 15–30 is comfortable, 30+ is faster than anyone reads).
 */
export interface Band {
  id: 'slow' | 'ok' | 'comfortable' | 'fluid';
  label: string;
}

export function readingBand(tps: number | null | undefined): Band | undefined {
  if (tps === null || tps === undefined || !Number.isFinite(tps)) return undefined;
  if (tps < 10) return { id: 'slow', label: 'feels slow (< 10 tok/s)' };
  if (tps < 15) return { id: 'ok', label: 'readable (10–15 tok/s)' };
  if (tps < 30) return { id: 'comfortable', label: 'comfortable (15–30 tok/s)' };
  return { id: 'fluid', label: 'fluid (30+ tok/s)' };
}

/** English prose averages about 1.3 tokens per word with today's BPE tokenizers. */
export const TOKENS_PER_WORD = 1.3;

/** Seconds until a `words`-word answer is complete at `tps`, after `ttftMs`. */
export function answerSeconds(words: number, tps: number, ttftMs = 0): number {
  return ttftMs / 1000 + (words * TOKENS_PER_WORD) / tps;
}

export function median(values: number[]): number | undefined {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

export function date(t: number): string {
  return new Date(t).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}
