// The local-inference demo page: pick a GGUF model and where it runs (WebGPU, the CPU, or
// automatic), load it into the engine's Worker, chat with it, and read the meter. boot must be the first import: it installs the
// page's connect-src before any module can fetch.
import '../boot';
import '../style.css';
import { wireThemeSwitch } from '../boot';
import { createEngine, type BackendChoice, type EngineInfo, type LoadProgress, type LocalEngine } from 'tpsmeter/engine';
import { pinnedSha256 } from '../common/models';
import { CacheView } from './cache';
import { ChatView } from './chat';
import { byId, el, fill } from '../common/dom';
import { explain, type Explained } from './errors';
import { duration, mb } from '../common/format';
import { LiveMeter } from './meter';
import { ModelPicker, type Source } from './picker';
import { checkSupport, showSupport, type Support } from './support';

wireThemeSwitch();

const modelForm = byId<HTMLFormElement>('model-form');
const loadButton = byId<HTMLButtonElement>('load');
const cancelButton = byId<HTMLButtonElement>('cancel-load');
const backendSelect = byId<HTMLSelectElement>('backend-select');
const loadBlocked = byId('load-blocked');
const progressBox = byId('load-progress');
const bar = byId<HTMLProgressElement>('load-bar');
const loadStatus = byId('load-status');
const loadError = byId('load-error');
const engineInfo = byId('engine-info');
const probeButton = byId<HTMLButtonElement>('probe');
const probeResult = byId('probe-result');

const picker = new ModelPicker();
const cache = new CacheView();
const meter = new LiveMeter();
const chat = new ChatView(meter);

let support: Support | undefined;
let engine: LocalEngine | undefined;
/** The load in progress; `cancelled` also undoes a load that finished as Cancel was pressed. */
let loading: { abort: AbortController; cancelled: boolean } | undefined;
let lastSource: Source | undefined;
let probing = false;

function updateLoadButton(): void {
  loadButton.disabled = !support?.ok || loading !== undefined;
  let why: string | undefined;
  if (!support) why = 'Checking this browser…';
  else if (!support.ok) why = 'Loading is off: this browser cannot run the engine (see “Your browser”).';
  else if (!loading) why = picker.blocked();
  loadBlocked.textContent = why ?? '';
}

function updateProbeButton(): void {
  // The probe measures a WebGPU adapter: nothing to probe for the CPU backend.
  probeButton.disabled = !engine || engine.info?.backend !== 'webgpu' || chat.busy || probing;
}

/** Where the loaded model runs and why, in a sentence. */
function describeBackend(info: EngineInfo): string {
  if (info.backend === 'cpu') {
    const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
    return ` Running on the CPU (WebAssembly ${info.simd}, ${threads}) because ${info.why}${info.threadsWhy ? `; ${info.threadsWhy}` : ''}${info.simdWhy ? `; ${info.simdWhy}` : ''}; context up to ${info.maxContext} tokens.`;
  }
  return ` Running on WebGPU (${info.why}). Adapter: ${info.adapter}; ${info.profile === 'cpu' ? 'CPU' : 'GPU'} kernel shapes, ${info.shaderF16 ? 'f16' : 'f32'} arithmetic; context up to ${info.maxContext} tokens.`;
}

/** What each step before the download is doing, as the status line says it. */
function startText(p: Extract<LoadProgress, { phase: 'start' }>): string {
  switch (p.step) {
    case 'wasm':
      return 'Starting the engine: loading its WebAssembly…';
    case 'device':
      return 'Starting the engine: opening the WebGPU device…';
    case 'threads':
      return `Starting the engine: starting ${p.threads ?? ''} CPU threads…`;
    case 'cache':
      return 'Starting the engine: opening this browser’s copy of the model…';
    case 'connect':
      return 'Starting the engine: requesting the model…';
  }
}

function showProgress(p: LoadProgress): void {
  if (p.phase === 'start') {
    loadStatus.textContent = startText(p);
    return;
  }
  if (p.phase === 'compile') {
    // Kernels compile after the bytes are in: the bar restarts for it.
    const { graphsDone, graphs, pipelines } = p.compile;
    bar.value = graphs > 0 ? graphsDone / graphs : 0;
    loadStatus.textContent = `Compiling GPU kernels: ${pipelines} compiled · graph ${Math.min(graphsDone + 1, graphs)}/${graphs}…`;
    return;
  }
  if (p.percent !== undefined) bar.value = p.percent / 100;
  else bar.removeAttribute('value');
  const parts: string[] = [];
  if (p.percent !== undefined) parts.push(`${p.percent.toFixed(0)} %`);
  parts.push(p.total !== undefined ? `${mb(p.loaded)} of ${mb(p.total)} MB` : `${mb(p.loaded)} MB`);
  if (p.bytesPerSecond > 0) parts.push(`${mb(p.bytesPerSecond)} MB/s`);
  if (p.etaSeconds !== undefined && p.percent !== undefined && p.percent < 100) parts.push(`${duration(Math.round(p.etaSeconds))} left`);
  let text = parts.join(' · ');
  if (p.fromCache) text += ' (from cache)';
  if (p.percent !== undefined && p.percent >= 100) text += ' · preparing the model…';
  loadStatus.textContent = text;
}

/** An engine failure that leaves no usable engine: say why where the user is, offer a reload. */
function showFailure(where: HTMLElement, why: Explained, source: Source | undefined): void {
  const actions: HTMLElement[] = [];
  if (why.reload && source) {
    const b = el('button', { type: 'button' }, 'Reload model');
    b.addEventListener('click', () => void load(source));
    actions.push(b);
  }
  if (why.noCache && source) {
    const b = el('button', { type: 'button' }, 'Load without keeping a copy');
    b.addEventListener('click', () => void load(source, false));
    actions.push(b);
  }
  fill(where, el('div', { class: 'notice bad' }, el('p', {}, why.text), actions.length ? el('div', { class: 'row' }, ...actions) : ''));
}

function dropEngine(): void {
  const old = engine;
  engine = undefined;
  chat.setEngine(undefined);
  updateProbeButton();
  // A lost device or a dead Worker answers dispose with an error: nothing more to free.
  void old?.dispose().catch(() => {});
}

async function load(source: Source, keepCopy = true): Promise<void> {
  if (loading) return;
  const job = { abort: new AbortController(), cancelled: false };
  loading = job;
  lastSource = source;
  fill(loadError);
  fill(engineInfo);
  progressBox.hidden = false;
  bar.removeAttribute('value');
  cancelButton.hidden = false;
  cancelButton.disabled = false;
  updateLoadButton();
  // Load is disabled now; Cancel is what the keyboard user may want next.
  cancelButton.focus();
  const old = engine;
  if (old) {
    engine = undefined;
    chat.setEngine(undefined);
    updateProbeButton();
    loadStatus.textContent = 'Freeing the previous model…';
    // Two models at once could exhaust GPU memory that one fits in.
    await old.dispose().catch(() => {});
  }
  loadStatus.textContent = 'Starting the engine…';
  const started = performance.now();
  let bytes = 0;
  let fromCache = false;
  try {
    const e = await createEngine({
      model: source.kind === 'url' ? source.url : source.file,
      // A preset's URL loads only the bytes it pins, from the network or this browser's copy.
      sha256: source.kind === 'url' ? pinnedSha256(source.url) : undefined,
      signal: job.abort.signal,
      cache: keepCopy,
      backend: backendSelect.value as BackendChoice,
      onProgress: (p) => {
        if (job.cancelled) return;
        bytes = p.loaded;
        fromCache = p.fromCache;
        showProgress(p);
      },
    });
    if (job.cancelled) {
      // Cancelled too late to stop (the last bytes were in): undo the load.
      await e.dispose().catch(() => {});
      throw Object.assign(new Error('the model load was cancelled'), { name: 'AbortError' });
    }
    engine = e;
    bar.value = 1;
    const seconds = (performance.now() - started) / 1000;
    const info = e.info;
    const phases = info?.load;
    const compiled = phases && phases.pipelines > 0 ? `, ${phases.pipelines} GPU kernels compiled in ${((phases.compileMs + phases.primeMs) / 1000).toFixed(1)} s` : '';
    loadStatus.textContent = `Done: ${mb(bytes)} MB ${fromCache ? 'read from this browser’s copy' : 'loaded'} in ${seconds.toFixed(1)} s${compiled}.`;
    fill(
      engineInfo,
      el(
        'p',
        { class: 'notice ok' },
        'Loaded ',
        el('strong', {}, source.label),
        // The file's own general.name, which is often not what the file is known by.
        e.name && e.name !== source.label ? ` (“${e.name}”)` : '',
        e.fromCache ? ' from this browser’s copy' : '',
        '.',
        info ? describeBackend(info) : '',
      ),
    );
    chat.setEngine(e);
    fill(
      probeResult,
      info?.backend === 'cpu'
        ? 'The model runs on the CPU: there is no GPU to probe.'
        : 'Probing measures this GPU’s memory read speed (a few seconds), so later answers can be set against the fastest decode it allows.',
    );
  } catch (err) {
    // Whatever failed after a cancel, the user asked to stop: say that.
    const why: Explained = job.cancelled ? { text: 'Cancelled.', quiet: true } : explain(err);
    progressBox.hidden = true;
    if (why.quiet) fill(engineInfo, el('p', {}, 'Loading cancelled.'));
    else showFailure(loadError, why, source);
  } finally {
    loading = undefined;
    cancelButton.hidden = true;
    updateLoadButton();
    updateProbeButton();
    if (document.activeElement === cancelButton || document.activeElement === document.body || document.activeElement === null) {
      if (engine) byId('message').focus();
      else loadButton.focus();
    }
    void cache.refresh();
  }
}

modelForm.addEventListener('submit', (e) => {
  e.preventDefault();
  if (loading || !support?.ok) return;
  const blocked = picker.blocked();
  const source = picker.source();
  if (blocked || !source) {
    picker.focusMissing();
    return;
  }
  void load(source);
});

cancelButton.addEventListener('click', () => {
  if (!loading) return;
  loading.cancelled = true;
  loading.abort.abort();
  cancelButton.disabled = true;
  loadStatus.textContent = 'Cancelling…';
});

probeButton.addEventListener('click', () => {
  const e = engine;
  if (!e || chat.busy || probing) return;
  probing = true;
  chat.setHeld(true);
  updateProbeButton();
  probeResult.textContent = 'Probing the GPU…';
  e.probe()
    .then((report) => fill(probeResult, ...LiveMeter.describeProbe(report, e)))
    .catch((err: unknown) => {
      // A model loaded meanwhile freed the probed engine: its failure is not news.
      if (engine !== e) {
        probeResult.textContent = '';
        return;
      }
      const why = explain(err);
      if (why.reload) {
        dropEngine();
        showFailure(loadError, why, lastSource);
        probeResult.textContent = 'The probe failed: see “Load a model” above.';
      } else {
        probeResult.textContent = `The probe failed: ${why.text}`;
      }
    })
    .finally(() => {
      probing = false;
      chat.setHeld(false);
      updateProbeButton();
      if (document.activeElement === document.body) probeButton.focus();
    });
});

chat.onBusy = () => updateProbeButton();
chat.onEngineFailed = (why, where) => {
  dropEngine();
  showFailure(where, why, lastSource);
};
picker.onChange = updateLoadButton;
// A kept copy of a preset counts only when it is the pinned file (another is downloaded again).
cache.onList = (models) => picker.setCachedUrls(models.filter((m) => (pinnedSha256(m.sourceUrl) ?? m.sha256) === m.sha256).map((m) => m.sourceUrl));

// Leaving the page frees the GPU memory now rather than when the tab's process ends; a page
// restored from the back/forward cache starts without a model.
window.addEventListener('pagehide', () => {
  if (loading) {
    loading.cancelled = true;
    loading.abort.abort();
  }
  if (engine) dropEngine();
});
window.addEventListener('pageshow', (e) => {
  if (e.persisted && !engine) {
    progressBox.hidden = true;
    fill(engineInfo, el('p', {}, 'The model was unloaded when you left the page: load it again to go on.'));
  }
});

updateLoadButton();
const supported = checkSupport().then((s) => {
  support = s;
  showSupport(byId('support'), s);
  updateLoadButton();
});
// body[data-ready] (as on the benchmark page): the support check, the default model and the
// cache list are in place, for scripts and tests that drive the page.
void Promise.all([supported, picker.ready, cache.refresh()]).then(() => {
  document.body.dataset.ready = 'true';
});
