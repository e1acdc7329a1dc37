// Page functions that act as a user on a form, for the cross-engine tests (./engines.mjs):
// find a control by its label's text (or a CSS selector), set it as typing or choosing
// would, and dispatch the events that input dispatches (input, change). Each is run in the
// page by `act(page, op, args)`; they use nothing from outside themselves.

/** The page side: one function, so one source crosses to the page. */
function pageAction({ op, target, value, files }) {
  const byLabel = (text) => {
    for (const label of document.querySelectorAll('label')) {
      const own = label.textContent.replace(/\s+/g, ' ').trim();
      if (own === text || (typeof text === 'string' && text.endsWith('…') && own.startsWith(text.slice(0, -1)))) {
        const control = label.control ?? label.querySelector('input, select, textarea');
        if (control) return control;
      }
    }
    return null;
  };
  const find = (t) => {
    if (t.css) return document.querySelector(t.css);
    if (t.label) return byLabel(t.label);
    if (t.button) return [...document.querySelectorAll('button')].find((b) => b.textContent.replace(/\s+/g, ' ').trim() === t.button && !b.disabled) ?? null;
    return null;
  };
  const el = find(target);
  if (!el) throw new Error(`no element for ${JSON.stringify(target)}`);
  const fire = (type) => el.dispatchEvent(new Event(type, { bubbles: true }));
  switch (op) {
    case 'fill': {
      // The prototype's setter, as typing sets it (frameworks watch the property).
      const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
      Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, String(value));
      fire('input');
      fire('change');
      return el.value;
    }
    case 'check':
      if (el.checked !== value) el.click();
      return el.checked;
    case 'click':
      el.click();
      return true;
    case 'value':
      return el.value;
    case 'text':
      return el.innerText;
    case 'files': {
      const dt = new DataTransfer();
      for (const f of files) dt.items.add(new File([f.text], f.name, { type: f.type }));
      el.files = dt.files;
      fire('input');
      fire('change');
      return el.files.length;
    }
    default:
      throw new Error(`unknown action ${op}`);
  }
}

/** Runs one action in `page`: op 'fill' | 'check' | 'click' | 'value' | 'text' | 'files'. */
export function act(page, op, target, value, files) {
  return page.evaluate(pageAction, { op, target, value, files });
}

export const fill = (page, target, value) => act(page, 'fill', target, value);
export const check = (page, target, value = true) => act(page, 'check', target, value);
export const click = (page, target) => act(page, 'click', target);
export const text = (page, target) => act(page, 'text', target);
export const valueOf = (page, target) => act(page, 'value', target);
/** Sets a file input to `files`: [{ name, type, text }]. */
export const setFiles = (page, target, files) => act(page, 'files', target, undefined, files);

/**
 * Captures the page's downloads (`a[download]` clicks on blob: URLs, which is how the site
 * exports) so `takeDownload` can read them back: browsers' download events differ, and
 * only Playwright exposes Chromium's.
 */
export function captureDownloads(page) {
  return page.evaluate(() => {
    if (window.__downloads) return;
    window.__downloads = [];
    const blobs = new Map();
    const create = URL.createObjectURL.bind(URL);
    URL.createObjectURL = (obj) => {
      const url = create(obj);
      blobs.set(url, obj);
      return url;
    };
    const click = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function () {
      const blob = this.download && blobs.get(this.href);
      if (!blob) return click.call(this);
      window.__downloads.push(blob.text().then((text) => ({ name: this.download, text })));
    };
  });
}

/** The next captured download: { name, text }, after `trigger` made it. */
export async function takeDownload(page, trigger) {
  const before = await page.evaluate(() => window.__downloads.length);
  await trigger();
  await page.waitFor((n) => window.__downloads.length > n, before, { what: 'a download' });
  return page.evaluate((n) => window.__downloads[n], before);
}
