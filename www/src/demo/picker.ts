// The model picker: the presets, this server's own model, any URL, or a file from disk. A
// URL on an origin the page's connect-src does not list cannot be fetched; the picker says
// so before the user waits for a failure, and offers to add that origin (the policy is fixed
// at boot, so adding one means a reload; the URL survives it in sessionStorage).

import { allowOrigin, isAllowed, originOf } from '../common/csp';
import { MODEL_PRESETS, sameOriginModel } from '../common/models';
import { byId, el, fill } from '../common/dom';
import { mb } from '../common/format';

const PENDING_KEY = 'tpsmeter.demo.pendingModelUrl';
const SAME_ORIGIN = 'same-origin';
const ANY_URL = 'url';
const FILE = 'file';

/** What "Load model" would load now. */
export type Source =
  | { kind: 'url'; url: string; label: string; bytes?: number }
  | { kind: 'file'; file: File; label: string };

export class ModelPicker {
  private select = byId<HTMLSelectElement>('model-select');
  private urlField = byId('url-field');
  private urlInput = byId<HTMLInputElement>('model-url');
  private fileField = byId('file-field');
  private fileInput = byId<HTMLInputElement>('model-file');
  private hint = byId('model-hint');
  private notice = byId('origin-notice');
  private noticeText = byId('origin-text');
  private allowButton = byId<HTMLButtonElement>('allow-origin');
  private benchLink = byId<HTMLAnchorElement>('bench-link');
  private sameOrigin: { id: string; url: string } | undefined;
  /** Source URLs with a complete copy in the model cache (the hint says "kept here"). */
  private cachedUrls = new Set<string>();
  private touched = false;
  /** Called whenever the choice, or whether it can load, changes. */
  onChange: () => void = () => {};
  /** Settles once the page knows whether its server offers a model (the default choice is final). */
  readonly ready: Promise<void>;

  constructor() {
    for (const p of MODEL_PRESETS) this.select.append(el('option', { value: p.id }, p.label));
    this.select.append(el('option', { value: ANY_URL }, 'Any URL…'), el('option', { value: FILE }, 'A file on this computer'));
    this.select.addEventListener('change', () => {
      this.touched = true;
      this.update();
    });
    this.urlInput.addEventListener('input', () => this.update());
    this.fileInput.addEventListener('change', () => this.update());
    this.allowButton.addEventListener('click', () => this.allowAndReload());
    this.restorePending();
    this.update();
    this.ready = this.findSameOrigin();
  }

  /** The `tpsmeter serve --www` model comes first, and is the default unless the user already chose. */
  private async findSameOrigin(): Promise<void> {
    const m = await sameOriginModel();
    if (!m) return;
    this.sameOrigin = m;
    this.select.prepend(el('option', { value: SAME_ORIGIN }, `This server's model (${m.id})`));
    if (!this.touched) this.select.value = SAME_ORIGIN;
    this.update();
  }

  /** After "Allow … and reload": the URL the user had typed. */
  private restorePending(): void {
    const url = sessionStorage.getItem(PENDING_KEY);
    if (url === null) return;
    sessionStorage.removeItem(PENDING_KEY);
    this.select.value = ANY_URL;
    this.urlInput.value = url;
    this.touched = true;
  }

  private allowAndReload(): void {
    const url = this.typedUrl();
    const origin = url ? originOf(url) : undefined;
    if (!url || !origin) return;
    allowOrigin(origin);
    sessionStorage.setItem(PENDING_KEY, url);
    location.reload();
  }

  /** The URL field resolved against the page (a relative path names a file on this host). */
  private typedUrl(): string | undefined {
    const raw = this.urlInput.value.trim();
    if (!raw) return undefined;
    try {
      return new URL(raw, location.href).href;
    } catch {
      return undefined;
    }
  }

  /** The current choice; undefined when it is incomplete (no URL typed, no file picked). */
  source(): Source | undefined {
    const v = this.select.value;
    if (v === SAME_ORIGIN && this.sameOrigin) return { kind: 'url', url: this.sameOrigin.url, label: this.sameOrigin.id };
    if (v === ANY_URL) {
      const url = this.typedUrl();
      return url && originOf(url) ? { kind: 'url', url, label: fileName(url) } : undefined;
    }
    if (v === FILE) {
      const file = this.fileInput.files?.[0];
      return file ? { kind: 'file', file, label: file.name } : undefined;
    }
    const p = MODEL_PRESETS.find((m) => m.id === v);
    return p ? { kind: 'url', url: p.url, label: p.label, bytes: p.bytes } : undefined;
  }

  /** Why the current choice cannot load (shown beside the Load button), or undefined. */
  blocked(): string | undefined {
    const v = this.select.value;
    if (v === ANY_URL) {
      const url = this.typedUrl();
      if (!url) return 'Enter the URL of a GGUF file.';
      if (!originOf(url)) return 'The URL must start with https:// or http://.';
      if (!isAllowed(url)) return 'This page may not connect to that server yet (see above).';
    }
    if (v === FILE && !this.fileInput.files?.[0]) return 'Choose a GGUF file.';
    return undefined;
  }

  setCachedUrls(urls: Iterable<string>): void {
    this.cachedUrls = new Set(urls);
    this.update();
  }

  /** Puts focus on the field the user has to fill next, if any. */
  focusMissing(): void {
    if (!this.notice.hidden) this.allowButton.focus();
    else if (this.select.value === ANY_URL) this.urlInput.focus();
    else if (this.select.value === FILE) this.fileInput.focus();
  }

  private update(): void {
    const v = this.select.value;
    this.urlField.hidden = v !== ANY_URL;
    this.fileField.hidden = v !== FILE;
    this.updateNotice();
    this.updateHint();
    this.updateBenchLink();
    this.onChange();
  }

  private updateNotice(): void {
    const url = this.select.value === ANY_URL ? this.typedUrl() : undefined;
    const origin = url ? originOf(url) : undefined;
    const show = !!url && !!origin && !isAllowed(url);
    this.notice.hidden = !show;
    this.urlInput.setAttribute('aria-invalid', String(show));
    if (!show || !origin) return;
    fill(
      this.noticeText,
      'This page connects only to servers you approve, and ',
      el('span', { class: 'mono' }, origin),
      ' is not one of them yet. Allowing it adds it to this browser’s list for this site (kept on this device) and reloads the page, which keeps the URL you typed. The server must also allow this page to read the file (CORS).',
    );
    this.allowButton.textContent = `Allow ${origin} and reload`;
  }

  private updateHint(): void {
    const s = this.source();
    if (!s) {
      fill(this.hint, this.select.value === FILE ? 'A file is read straight from your disk.' : '');
      return;
    }
    if (s.kind === 'file') {
      fill(this.hint, `${s.file.name}, ${mb(s.file.size)} MB, read from your disk.`);
      return;
    }
    const kept = this.cachedUrls.has(s.url);
    const size = s.bytes !== undefined ? `${mb(s.bytes, 0)} MB download` : 'Downloaded';
    fill(
      this.hint,
      kept ? 'Kept in this browser: loads without downloading. ' : `${size} the first time, then kept in this browser. `,
      'From ',
      el('span', { class: 'mono url' }, s.url),
    );
  }

  /** The benchmark page takes an http(s) model URL; a file from disk cannot travel in a link. */
  private updateBenchLink(): void {
    const s = this.source();
    const url = s?.kind === 'url' ? s.url : undefined;
    this.benchLink.hidden = !url;
    if (url) this.benchLink.href = `./?${new URLSearchParams({ preset: 'local', model: url }).toString()}`;
  }
}

function fileName(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() || url);
  } catch {
    return url;
  }
}
