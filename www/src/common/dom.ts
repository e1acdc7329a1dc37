// DOM helpers of both pages. Everything shown from a model, a server, a URL or a file goes
// through textContent (never innerHTML): all of it is untrusted text.

/** The element with `id`; a missing one is a bug in the page's HTML, so it throws at start-up. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e as T;
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

/** Replaces the children of `e`. */
export function fill(e: Element, ...children: (Node | string)[]): void {
  e.replaceChildren(...children);
}
