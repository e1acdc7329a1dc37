// Small DOM helpers. Everything the page shows from the model, a URL or a file name goes
// through textContent (never innerHTML): model output is untrusted text.

/** The element with `id`; a missing one is a bug in demo.html, so it throws at start-up. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`demo.html has no #${id}`);
  return el as T;
}

type Attrs = Record<string, string | boolean | undefined>;

/** `<tag attrs>children</tag>`; strings become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  el.append(...children);
  return el;
}

/** Replaces the children of `el`. */
export function fill(el: Element, ...children: (Node | string)[]): void {
  el.replaceChildren(...children);
}
