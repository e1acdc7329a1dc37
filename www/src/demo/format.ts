// Number formats of the page. Metric values use a fixed '.' decimal point and no digit
// grouping, so what a reader sees is also what a test can parseFloat.

export const NONE = '—';

export const MB = 1_000_000;

/** `n` with `digits` decimals, or a dash when there is no value. */
export function fixed(n: number | undefined, digits: number): string {
  return n === undefined || !Number.isFinite(n) ? NONE : n.toFixed(digits);
}

/** Milliseconds: whole above 100 ms, else one decimal. */
export function ms(n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? NONE : n.toFixed(n >= 100 ? 0 : 1);
}

/** Bytes as MB (10^6, as download sizes are quoted). */
export function mb(bytes: number | undefined, digits = 1): string {
  return bytes === undefined ? NONE : (bytes / MB).toFixed(digits);
}

/** A duration in seconds as "42 s" or "3 min 5 s". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m} min` : `${m} min ${s % 60} s`;
}
