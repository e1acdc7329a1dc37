// Number formatting and the reading-speed vocabulary of the site.

/** A number with a precision that suits its size (3 significant digits, no exponent). */
export function num(v: number | null | undefined, unit = ''): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  const s = v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
  return unit ? `${s} ${unit}` : s;
}

export function ms(v: number | null | undefined): string {
  return num(v, 'ms');
}

/** Seconds, from a value in seconds, as "4.2 s" or "2 min 5 s". */
export function duration(s: number): string {
  if (!Number.isFinite(s)) return '–';
  if (s < 90) return `${num(s)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
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

/** Creates an element with text (never HTML) and attributes. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'class') e.className = String(v);
    else if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

/**
 * A table in a box that scrolls sideways on narrow screens. The box is focusable and named,
 * so keyboard users can scroll it too (WCAG 2.1.1).
 */
export function tableWrap(table: HTMLTableElement, label: string): HTMLElement {
  return el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': label }, table);
}
