// The run form: provider presets, model, key, prompt, load levels. Its state (never the key)
// is kept in localStorage so a reload restores it; query parameters (`?preset=local&model=`
// from the demo page, or any field name) prefill it, and never start a run by themselves: a
// link must not make a browser spend its owner's remembered key.

import type { Api, DatasetInput, RunSettings } from 'tpsmeter';
import { el } from '../common/dom';
import { originOf } from '../common/csp';
import { MODEL_PRESETS } from '../common/models';
import { CUSTOM_PRESET, LOCAL_PRESET, PRESETS, PROMPT_SET, SAME_ORIGIN_PRESET, preset } from '../common/presets';

const SETTINGS_KEY = 'tpsmeter.bench.settings';
const DEFAULTS_KINDS = { set: 1, text: 1, synthetic: 1, workload: 1, dataset: 1 };

/** The named workloads (the core's `Workload`), as the page offers them. */
const WORKLOADS = [
  { id: 'chat', label: 'chat: 128 input / 256 output tokens' },
  { id: 'rag-1k', label: 'rag-1k: 1,000 / 256 (Artificial Analysis\'s 1k input)' },
  { id: 'long-10k', label: 'long-10k: 10,000 / 256 (Artificial Analysis\'s 10k input)' },
  { id: 'llmperf', label: 'llmperf: 550±150 / 150 (LLMPerf\'s defaults)' },
] as const;
/**
 * Remembered keys are stored per API origin (`tpsmeter.key.https://api.openai.com`), never
 * per provider name: a key goes only to the server it was remembered for, so a link that
 * changes the Base URL (or a user who edits it) gets an empty key field, not the old key.
 */
const KEY_PREFIX = 'tpsmeter.key.';

function keyName(url: string): string | undefined {
  const origin = originOf(url);
  return origin ? KEY_PREFIX + origin : undefined;
}

/**
 * Each wire format's label: a `Record` over the package's `Api` (generated from the Rust
 * enum), so a wire format the core adds and this table lacks fails the page's type check.
 */
const WIRE_LABELS: Record<Exclude<Api, 'local'>, string> = {
  'openai-chat': 'OpenAI chat completions',
  'openai-completions': 'OpenAI completions',
  'openai-responses': 'OpenAI responses',
  anthropic: 'Anthropic messages',
  gemini: 'Gemini streamGenerateContent',
  'ollama-chat': 'Ollama /api/chat',
  'ollama-generate': 'Ollama /api/generate',
  'vercel-ui': 'Vercel AI SDK UI message stream',
};

export const WIRE_FORMATS: { api: Api; label: string }[] = Object.entries(WIRE_LABELS).map(([api, label]) => ({ api: api as Api, label }));

/** What the form holds (the key aside). */
export interface FormState {
  preset: string;
  api: Api;
  url: string;
  model: string;
  /** Local engine: the GGUF URL. */
  modelUrl: string;
  promptKind: 'set' | 'text' | 'synthetic' | 'workload' | 'dataset';
  /** The named workload, when `promptKind` is `workload`. */
  workload: string;
  /** The id of a prompt of PROMPT_SET. */
  promptSet: string;
  prompt: string;
  /** Comma-separated input lengths, tokens: one run each. */
  inputLengths: string;
  maxTokens: number;
  concurrency: string;
  requests: number;
  warmup: number;
  slo: string;
  render: boolean;
  /** Each request's prompt starts with a mark of its own (`cacheBust: 'prefix'`). */
  uniquePrompts: boolean;
  /** Tokens every request shares before its mark (0: none). */
  sharedPrefix: number;
  /** Turns per conversation (1: single requests). */
  turns: number;
  /** Standard deviation of synthetic input lengths, tokens (0: every request the same). */
  inputStdev: number;
  /** The model's tokenizer: a tokenizer.json or GGUF URL, or a Hugging Face model id ('' : none). */
  tokenizer: string;
  /** Seconds over which each level opens its streams (0: all at once). */
  rampUpS: number;
  /** A time budget per level, seconds (`maxDurationS`); 0: none. */
  maxDurationS: number;
  /** Search for the highest concurrency that meets the SLO (`findMax`), from the first level. */
  findMax: boolean;
  /** A dataset's URL, used when no file is picked (a picked file is not kept over a reload). */
  datasetUrl: string;
}

export const DEFAULTS: FormState = {
  preset: 'openai',
  api: 'openai-chat',
  url: 'https://api.openai.com',
  model: 'gpt-4o-mini',
  modelUrl: MODEL_PRESETS[0]?.url ?? '',
  promptKind: 'set',
  workload: 'chat',
  promptSet: 'story',
  prompt: 'Write a short story about a lighthouse keeper who finds a message in a bottle.',
  inputLengths: '128,1024',
  maxTokens: 256,
  concurrency: '1',
  requests: 5,
  warmup: 1,
  slo: '',
  render: true,
  uniquePrompts: true,
  sharedPrefix: 0,
  inputStdev: 0,
  tokenizer: '',
  turns: 1,
  rampUpS: 0,
  maxDurationS: 0,
  findMax: false,
  datasetUrl: '',
};

function field(label: string, control: HTMLElement, hint?: string, id?: string): HTMLElement {
  return el('label', { class: 'field', id }, el('span', { text: label }), control, hint ? el('small', { text: hint }) : '');
}

/** Builds the form's controls inside `form` and returns accessors. */
export class RunForm {
  readonly preset = el('select', { name: 'preset', id: 'f-preset' });
  readonly api = el('select', { name: 'api', id: 'f-api' });
  readonly url = el('input', { name: 'url', id: 'f-url', type: 'url', inputmode: 'url', autocomplete: 'url', spellcheck: 'false' });
  readonly model = el('input', { name: 'model', id: 'f-model', autocomplete: 'off', spellcheck: 'false' });
  readonly modelUrl = el('input', { name: 'modelUrl', id: 'f-model-url', type: 'url', list: 'model-urls', spellcheck: 'false' });
  readonly key = el('input', { name: 'key', id: 'f-key', type: 'password', autocomplete: 'off', spellcheck: 'false' });
  readonly remember = el('input', { type: 'checkbox', id: 'f-remember' });
  readonly promptFromSet = el('input', { type: 'radio', name: 'promptKind', value: 'set', id: 'f-prompt-set' });
  readonly promptText = el('input', { type: 'radio', name: 'promptKind', value: 'text', id: 'f-prompt-text' });
  readonly promptSynthetic = el('input', { type: 'radio', name: 'promptKind', value: 'synthetic', id: 'f-prompt-synth' });
  readonly promptWorkload = el('input', { type: 'radio', name: 'promptKind', value: 'workload', id: 'f-prompt-workload' });
  readonly workload = el('select', { name: 'workload', id: 'f-workload' });
  readonly promptDataset = el('input', { type: 'radio', name: 'promptKind', value: 'dataset', id: 'f-prompt-dataset' });
  readonly datasetFile = el('input', { type: 'file', id: 'f-dataset-file', accept: '.json,.jsonl,.ndjson,application/json' });
  readonly datasetUrl = el('input', { name: 'datasetUrl', id: 'f-dataset-url', type: 'url', inputmode: 'url', spellcheck: 'false', placeholder: 'https://…/sharegpt.json' });
  readonly promptSet = el('select', { name: 'promptSet', id: 'f-prompt-set-id' });
  readonly prompt = el('textarea', { name: 'prompt', id: 'f-prompt', rows: 3 });
  readonly inputLengths = el('input', { name: 'inputLengths', id: 'f-input-lengths', inputmode: 'numeric', spellcheck: 'false' });
  readonly maxTokens = el('input', { name: 'maxTokens', id: 'f-max-tokens', type: 'number', min: 1, max: 100000 });
  readonly concurrency = el('input', { name: 'concurrency', id: 'f-concurrency', inputmode: 'numeric', spellcheck: 'false' });
  readonly requests = el('input', { name: 'requests', id: 'f-requests', type: 'number', min: 1, max: 10000 });
  readonly warmup = el('input', { name: 'warmup', id: 'f-warmup', type: 'number', min: 0, max: 100 });
  readonly slo = el('input', { name: 'slo', id: 'f-slo', placeholder: 'ttft=500ms,tpot=50ms', spellcheck: 'false' });
  readonly render = el('input', { type: 'checkbox', id: 'f-render' });
  readonly uniquePrompts = el('input', { type: 'checkbox', id: 'f-unique-prompts' });
  readonly sharedPrefix = el('input', { name: 'sharedPrefix', id: 'f-shared-prefix', type: 'number', min: 0, max: 100000 });
  readonly turns = el('input', { name: 'turns', id: 'f-turns', type: 'number', min: 1, max: 64 });
  readonly inputStdev = el('input', { name: 'inputStdev', id: 'f-input-stdev', type: 'number', min: 0, max: 100000 });
  readonly tokenizer = el('input', { name: 'tokenizer', id: 'f-tokenizer', placeholder: 'HuggingFaceTB/SmolLM2-135M-Instruct or https://…/tokenizer.json', spellcheck: 'false' });
  readonly tokenizerFile = el('input', { type: 'file', id: 'f-tokenizer-file', accept: '.json,.gguf' });
  readonly rampUp = el('input', { name: 'rampUpS', id: 'f-ramp-up', type: 'number', min: 0, max: 600, step: 'any' });
  readonly maxDuration = el('input', { name: 'maxDurationS', id: 'f-max-duration', type: 'number', min: 0, max: 3600, step: 'any' });
  readonly findMax = el('input', { type: 'checkbox', id: 'f-find-max' });
  readonly run = el('button', { type: 'submit', class: 'primary', id: 'run', text: 'Run benchmark' });
  readonly stop = el('button', { type: 'button', id: 'stop', text: 'Stop', disabled: true });
  readonly note = el('p', { class: 'hint', id: 'preset-note' });
  readonly notices = el('div', { id: 'form-notices', 'aria-live': 'polite' });
  /** The model of the `tpsmeter serve` this page came from ('' when none). */
  serverModel = '';
  private readonly keyField: HTMLElement;
  private readonly remoteFields: HTMLElement[];
  private readonly localFields: HTMLElement[];

  constructor(readonly form: HTMLFormElement) {
    for (const p of PRESETS) this.preset.append(el('option', { value: p.id, text: p.label }));
    for (const w of WIRE_FORMATS) this.api.append(el('option', { value: w.api, text: `${w.label} (${w.api})` }));
    const urls = el('datalist', { id: 'model-urls' }, ...MODEL_PRESETS.map((m) => el('option', { value: m.url, text: m.label })));
    this.keyField = el(
      'div',
      { class: 'field' },
      field('API key', this.key, 'Kept in this tab\'s memory only: never in results, exports, links or history.'),
      el('label', { class: 'check' }, this.remember, 'Remember the key on this device (stored in this browser\'s localStorage, apart from results)'),
    );
    const urlField = field('Base URL', this.url, 'The API root, e.g. https://api.openai.com (the endpoint path is added).');
    const modelField = field('Model', this.model);
    const apiField = field('Wire format', this.api);
    this.remoteFields = [apiField, urlField, modelField, this.keyField];
    const modelUrlField = field('GGUF URL', this.modelUrl, 'The model the local engine downloads (cached after the first time).');
    this.localFields = [modelUrlField];
    const promptKind = el(
      'fieldset',
      { class: 'field' },
      el('legend', { text: 'Input' }),
      el('label', { class: 'check' }, this.promptFromSet, 'A prompt from the set'),
      el('label', { class: 'check' }, this.promptText, 'My own prompt'),
      el('label', { class: 'check' }, this.promptSynthetic, 'Synthetic inputs of given lengths'),
      el('label', { class: 'check' }, this.promptWorkload, 'A named workload (input and output sizes of published benchmarks)'),
      el('label', { class: 'check' }, this.promptDataset, 'A dataset (JSON Lines or ShareGPT JSON)'),
    );
    form.append(
      el('div', { class: 'grid' }, field('Provider', this.preset), ...this.remoteFields, ...this.localFields),
      this.note,
      el(
        'div',
        { class: 'grid' },
        promptKind,
        field('Prompt from the set', this.promptSet, undefined, 'prompt-set-field'),
        field('Prompt', this.prompt, undefined, 'prompt-field'),
        field('Workload', this.workload, 'Sets the input size (synthetic; exact with a tokenizer) and the output cap; the report records it.', 'workload-field'),
        field('Input lengths (tokens)', this.inputLengths, 'Comma-separated, e.g. 128,1024,4096: one run each, compared when done (TTFT grows with the prompt).', 'input-lengths-field'),
        field('Input length spread (tokens, optional)', this.inputStdev, 'Standard deviation: each request draws its length around the run\'s (0: all the same).', 'input-stdev-field'),
        field('Tokenizer (optional)', el('span', { class: 'row' }, this.tokenizer, this.tokenizerFile), 'The model\'s tokenizer.json or GGUF (URL, file, or Hugging Face model id): input lengths become exact, and answers without usage are counted. Loads ~1 MB of wasm.', 'tokenizer-field'),
        field('Dataset file', this.datasetFile, 'One entry per line ({"prompt": …} or {"messages": […]}), or ShareGPT\'s JSON: each request draws one, without replacement; read in this tab, never uploaded.', 'dataset-file-field'),
        field('…or the dataset\'s URL', this.datasetUrl, 'Fetched by this page when no file is picked (the server must allow it through CORS).', 'dataset-url-field'),
      ),
      el(
        'div',
        { class: 'grid' },
        field('Max output tokens', this.maxTokens),
        field('Concurrency levels', this.concurrency, 'Comma-separated, e.g. 1,2,4,8: one level each, requests kept in flight.'),
        field('Requests per level', this.requests),
        field('Warm-up requests per level', this.warmup, 'Run first, left out of the figures.'),
        field('Service-level objectives (optional)', this.slo),
        field('Turns per conversation', this.turns, 'Above 1: each user holds a chat, each turn sending the conversation so far with the model\'s real answers; TTFT is charted per turn.'),
        field('Shared prefix (tokens, optional)', this.sharedPrefix, 'Every request shares this many tokens before its own mark: measures the server\'s prefix caching on purpose.'),
        field('Ramp-up (seconds, optional)', this.rampUp, 'Open each level\'s requests spread over this time instead of all at once, so a burst does not overflow the server\'s connection backlog.'),
        field('Max duration per level (seconds, optional)', this.maxDuration, 'A time budget: a level still running after this long starts no more requests (those in flight finish), and the results say it was cut.'),
      ),
      el('label', { class: 'check' }, this.uniquePrompts, 'A unique prompt per request ([run <id> #<n>] before it), so no server answers from its prompt cache; off measures the cached case'),
      el('label', { class: 'check' }, this.render, 'Show the text as it streams and measure when it is painted (perceived TPS)'),
      el(
        'label',
        { class: 'check' },
        this.findMax,
        `Find the knee: from the first concurrency level, double the load until a level misses the SLO (95% of its requests within it) or goodput stops rising, then narrow down; each level runs 4 × its concurrency requests (at least 8), at most ${LIMITS.concurrency} streams`,
      ),
      urls,
      this.notices,
      el('div', { class: 'row' }, this.run, this.stop),
    );
    this.preset.addEventListener('change', () => this.applyPreset(this.preset.value, true));
    for (const p of PROMPT_SET) this.promptSet.append(el('option', { value: p.id, text: p.label }));
    this.promptFromSet.addEventListener('change', () => this.syncPromptKind());
    this.promptText.addEventListener('change', () => this.syncPromptKind());
    this.promptSynthetic.addEventListener('change', () => this.syncPromptKind());
    this.promptWorkload.addEventListener('change', () => this.syncPromptKind());
    for (const w of WORKLOADS) this.workload.append(el('option', { value: w.id, text: w.label }));
    this.promptDataset.addEventListener('change', () => this.syncPromptKind());
    // A key typed for one server never follows the URL to another.
    this.url.addEventListener('input', () => {
      if (originOf(this.url.value.trim()) !== this.keyOrigin) this.restoreKey();
    });
    this.remember.addEventListener('change', () => {
      const name = keyName(this.url.value.trim());
      if (!this.remember.checked && name) localStorage.removeItem(name);
    });
    form.addEventListener('input', () => this.save());
  }

  /** Shows the fields the preset needs; `fill` replaces URL and model with the preset's. */
  applyPreset(id: string, fill: boolean): void {
    const p = preset(id) ?? preset(CUSTOM_PRESET)!;
    this.preset.value = p.id;
    const local = p.id === LOCAL_PRESET;
    for (const f of this.remoteFields) f.hidden = local;
    for (const f of this.localFields) f.hidden = !local;
    if (fill && !local) {
      this.api.value = p.api;
      this.url.value = p.id === SAME_ORIGIN_PRESET ? new URL('./', location.href).href.replace(/\/$/, '') : p.url;
      this.model.value = p.id === SAME_ORIGIN_PRESET ? this.serverModel : p.model;
    }
    this.keyField.hidden = local || (!p.key && p.id !== CUSTOM_PRESET);
    this.note.textContent = p.note ?? '';
    this.restoreKey();
    this.save();
  }

  private syncPromptKind(): void {
    document.getElementById('prompt-set-field')!.hidden = !this.promptFromSet.checked;
    document.getElementById('prompt-field')!.hidden = !this.promptText.checked;
    document.getElementById('input-lengths-field')!.hidden = !this.promptSynthetic.checked;
    document.getElementById('input-stdev-field')!.hidden = !this.promptSynthetic.checked;
    document.getElementById('workload-field')!.hidden = !this.promptWorkload.checked;
    document.getElementById('dataset-file-field')!.hidden = !this.promptDataset.checked;
    document.getElementById('dataset-url-field')!.hidden = !this.promptDataset.checked;
  }

  /** The dataset file picked, if any. */
  pickedDataset(): File | undefined {
    return this.datasetFile.files?.[0];
  }

  state(): FormState {
    return {
      preset: this.preset.value,
      api: this.api.value as Api,
      url: this.url.value.trim(),
      model: this.model.value.trim(),
      modelUrl: this.modelUrl.value.trim(),
      promptKind: this.promptDataset.checked ? 'dataset' : this.promptWorkload.checked ? 'workload' : this.promptSynthetic.checked ? 'synthetic' : this.promptText.checked ? 'text' : 'set',
      workload: this.workload.value,
      promptSet: this.promptSet.value,
      prompt: this.prompt.value,
      inputLengths: this.inputLengths.value.trim(),
      maxTokens: this.maxTokens.valueAsNumber,
      concurrency: this.concurrency.value.trim(),
      requests: this.requests.valueAsNumber,
      warmup: this.warmup.valueAsNumber,
      slo: this.slo.value.trim(),
      render: this.render.checked,
      uniquePrompts: this.uniquePrompts.checked,
      sharedPrefix: Number.isFinite(this.sharedPrefix.valueAsNumber) ? this.sharedPrefix.valueAsNumber : 0,
      inputStdev: Number.isFinite(this.inputStdev.valueAsNumber) ? this.inputStdev.valueAsNumber : 0,
      tokenizer: this.tokenizer.value.trim(),
      turns: Number.isFinite(this.turns.valueAsNumber) ? this.turns.valueAsNumber : 1,
      rampUpS: Number.isFinite(this.rampUp.valueAsNumber) ? this.rampUp.valueAsNumber : 0,
      maxDurationS: Number.isFinite(this.maxDuration.valueAsNumber) ? this.maxDuration.valueAsNumber : 0,
      findMax: this.findMax.checked,
      datasetUrl: this.datasetUrl.value.trim(),
    };
  }

  /**
   * Fills the form: saved state, then the preset and fields named in the query over it.
   * Returns the fields the query set (the page tells the user a link filled them).
   */
  load(query: URLSearchParams): string[] {
    const fromQuery: string[] = [];
    let s: FormState = { ...DEFAULTS };
    try {
      s = { ...s, ...(JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? '{}') as Partial<FormState>) };
    } catch {
      // A corrupt saved state is replaced by the defaults.
    }
    const here = new URL('./', location.href).href.replace(/\/$/, '');
    const p = preset(query.get('preset') ?? '');
    if (p) {
      s.preset = p.id;
      if (p.id !== LOCAL_PRESET) {
        s.api = p.api;
        s.url = p.id === SAME_ORIGIN_PRESET ? here : p.url;
        s.model = p.model;
      }
    }
    for (const [k, v] of query) {
      if (!(k in DEFAULTS || k === 'inputTokens') || k === 'preset') continue;
      // The demo page links here with the GGUF URL as `model`; the CLI's name for one input
      // length is `inputTokens`.
      const name = k === 'model' && s.preset === LOCAL_PRESET ? 'modelUrl' : k === 'inputTokens' ? 'inputLengths' : k;
      fromQuery.push(name);
      const d = DEFAULTS[name as keyof FormState];
      (s as unknown as Record<string, unknown>)[name] = typeof d === 'number' ? Number(v) : typeof d === 'boolean' ? v === 'true' || v === '1' : v;
    }
    // A prompt or input lengths in the query say which kind of input the link means.
    if (!query.has('promptKind')) {
      if (query.has('prompt')) s.promptKind = 'text';
      else if (query.has('inputLengths') || query.has('inputTokens')) s.promptKind = 'synthetic';
      else if (query.has('workload')) s.promptKind = 'workload';
    }
    if (!preset(s.preset)) s.preset = DEFAULTS.preset;
    if (s.preset === SAME_ORIGIN_PRESET && !s.url) s.url = here;
    this.preset.value = s.preset;
    this.api.value = s.api;
    this.url.value = s.url;
    this.model.value = s.model;
    this.modelUrl.value = s.modelUrl;
    ({ set: this.promptFromSet, text: this.promptText, synthetic: this.promptSynthetic, workload: this.promptWorkload, dataset: this.promptDataset })[s.promptKind in DEFAULTS_KINDS ? s.promptKind : 'set'].checked = true;
    this.workload.value = WORKLOADS.some((w) => w.id === s.workload) ? s.workload : DEFAULTS.workload;
    this.promptSet.value = PROMPT_SET.some((p) => p.id === s.promptSet) ? s.promptSet : DEFAULTS.promptSet;
    this.prompt.value = s.prompt;
    this.inputLengths.value = s.inputLengths;
    this.maxTokens.value = String(s.maxTokens);
    this.concurrency.value = s.concurrency;
    this.requests.value = String(s.requests);
    this.warmup.value = String(s.warmup);
    this.slo.value = s.slo;
    this.render.checked = s.render;
    this.uniquePrompts.checked = s.uniquePrompts !== false;
    this.sharedPrefix.value = String(s.sharedPrefix || 0);
    this.inputStdev.value = String(s.inputStdev || 0);
    this.tokenizer.value = s.tokenizer ?? '';
    this.turns.value = String(s.turns || 1);
    this.rampUp.value = String(s.rampUpS || 0);
    this.maxDuration.value = String(s.maxDurationS || 0);
    this.findMax.checked = s.findMax === true;
    this.datasetUrl.value = typeof s.datasetUrl === 'string' ? s.datasetUrl : '';
    this.applyPreset(s.preset, false);
    this.syncPromptKind();
    if (p) fromQuery.unshift('preset');
    return fromQuery;
  }

  save(): void {
    localStorage.setItem(SETTINGS_KEY, JSON.stringify(this.state()));
  }

  /** The origin the key field's key belongs to. */
  private keyOrigin: string | undefined;

  /** Fills the key field with the key remembered for the URL's origin, or empties it. */
  restoreKey(): void {
    const url = this.url.value.trim();
    const name = keyName(url);
    const saved = name ? localStorage.getItem(name) : null;
    this.key.value = saved ?? '';
    this.remember.checked = saved !== null;
    this.keyOrigin = originOf(url);
  }

  /** The key typed (and, if asked, remembered on this device for this URL's origin). */
  apiKey(): string | undefined {
    const k = this.key.value.trim();
    const name = keyName(this.url.value.trim());
    if (this.remember.checked && k && name) localStorage.setItem(name, k);
    return k || undefined;
  }

  setRunning(running: boolean): void {
    this.run.disabled = running;
    this.stop.disabled = !running;
    for (const c of this.form.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('input, select, textarea')) c.disabled = running;
  }
}

/**
 * Problems with the form's state that are the page's own (empty: it can run): what it
 * needs filled in, and its caps on what one click may start. The rules between options are
 * the run spec's, checked on the settings the form makes (`checkBenchOptions` with
 * `FORM_NAMES`): the page says what the CLI and `bench()` say, in its labels. `file`: the
 * dataset file picked.
 */
export function validate(s: FormState, file?: File): string[] {
  const out: string[] = [];
  const local = s.preset === LOCAL_PRESET;
  if (!local) {
    if (!s.url) out.push('Enter the API\'s base URL.');
    if (!s.model && s.preset !== SAME_ORIGIN_PRESET) out.push('Enter a model name.');
  } else if (!s.modelUrl) out.push('Enter the GGUF URL of the model to run.');
  if (!levels(s.concurrency)) out.push(`Concurrency levels must be whole numbers from 1 to ${LIMITS.concurrency}, comma-separated (e.g. 1,2,4).`);
  if (!(s.maxTokens >= 1 && s.maxTokens <= LIMITS.maxTokens)) out.push(`Max output tokens must be 1 to ${LIMITS.maxTokens.toLocaleString('en-US')}.`);
  if (!(s.requests >= 1 && s.requests <= LIMITS.requests)) out.push(`Requests per level must be 1 to ${LIMITS.requests.toLocaleString('en-US')}.`);
  if (!(s.warmup >= 0 && s.warmup <= LIMITS.warmup)) out.push(`Warm-up requests must be 0 to ${LIMITS.warmup}.`);
  if (!(Number.isInteger(s.sharedPrefix) && s.sharedPrefix >= 0 && s.sharedPrefix <= LIMITS.inputTokens)) out.push(`Shared prefix must be 0 to ${LIMITS.inputTokens.toLocaleString('en-US')} tokens.`);
  if (!(Number.isInteger(s.inputStdev) && s.inputStdev >= 0 && s.inputStdev <= LIMITS.inputTokens)) out.push(`Input length spread must be 0 to ${LIMITS.inputTokens.toLocaleString('en-US')} tokens.`);
  if (!(s.rampUpS >= 0 && s.rampUpS <= LIMITS.rampUpS)) out.push(`Ramp-up must be 0 to ${LIMITS.rampUpS} seconds.`);
  if (!(s.maxDurationS >= 0 && s.maxDurationS <= LIMITS.maxDurationS)) out.push(`Max duration must be 0 to ${LIMITS.maxDurationS} seconds.`);
  if (s.promptKind === 'dataset' && !file && !s.datasetUrl) out.push('Pick a dataset file or enter its URL.');
  if (s.promptKind === 'synthetic' && !inputLengths(s.inputLengths)) out.push(`Input lengths must be whole numbers of tokens from 1 to ${LIMITS.inputTokens.toLocaleString('en-US')}, comma-separated (e.g. 128,1024), at most ${LIMITS.inputLengths}.`);
  return out;
}

/** The form's words for the options it sets, for the run spec's messages. */
export const FORM_NAMES: Record<string, string> = {
  api: '“Wire format”',
  url: '“Base URL”',
  model: '“Model”',
  concurrency: '“Concurrency levels”',
  requests: '“Requests per level”',
  warmup: '“Warm-up requests per level”',
  maxTokens: '“Max output tokens”',
  prompt: '“Prompt”',
  inputTokens: '“Input lengths”',
  inputTokensStdev: '“Input length spread”',
  tokenizer: '“Tokenizer”',
  dataset: '“Dataset”',
  workload: '“Workload”',
  slo: '“Service-level objectives”',
  turns: '“Turns per conversation”',
  sharedPrefix: '“Shared prefix”',
  cacheBust: '“A unique prompt per request”',
  rampUpS: '“Ramp-up”',
  maxDurationS: '“Max duration per level”',
  findMax: '“Find the knee”',
};

/**
 * Caps on what one click can start: a link can prefill the form, and a remembered key pays
 * for whatever runs, so the page refuses runs larger than these (the CLI is for more).
 */
export const LIMITS = { maxTokens: 32_768, requests: 1_000, warmup: 100, concurrency: 256, inputTokens: 200_000, inputLengths: 8, rampUpS: 600, maxDurationS: 3600 };

/** The input lengths of a synthetic-input run (one benchmark each). */
export function inputLengths(text: string): number[] | undefined {
  const parts = text.split(',').map((p) => p.trim()).filter(Boolean);
  if (parts.length === 0 || parts.length > LIMITS.inputLengths) return undefined;
  const out = parts.map(Number);
  return out.every((n) => Number.isInteger(n) && n >= 1 && n <= LIMITS.inputTokens) ? out : undefined;
}

export function levels(text: string): number[] | undefined {
  const parts = text.split(',').map((p) => p.trim()).filter(Boolean);
  if (parts.length === 0 || parts.length > 32) return undefined;
  const out = parts.map(Number);
  return out.every((n) => Number.isInteger(n) && n >= 1 && n <= LIMITS.concurrency) ? out : undefined;
}

type Workload = NonNullable<RunSettings['workload']>;

/** What a run's requests send: a prompt, synthetic text of a length, a named workload, or a dataset's entries. */
type Input = { prompt: string } | { inputTokens: number } | { workload: Workload } | { dataset: DatasetInput };

/**
 * The settings (no key) of each `bench()` the form asks for: one, or one per input length
 * of a synthetic-input sweep. `file`: the dataset file picked (else the dataset's URL).
 */
export function settingsOf(s: FormState, file?: File): Omit<RunSettings, 'apiKey'>[] {
  const prompts: Input[] =
    s.promptKind === 'workload'
      ? [{ workload: s.workload as Workload }]
      : s.promptKind === 'synthetic'
        ? (inputLengths(s.inputLengths) ?? []).map((n) => ({ inputTokens: n }))
        : s.promptKind === 'dataset'
          ? [{ dataset: file ?? { url: s.datasetUrl } }]
          : [{ prompt: s.promptKind === 'set' ? (PROMPT_SET.find((p) => p.id === s.promptSet) ?? PROMPT_SET[0]).text : s.prompt }];
  return prompts.map((p) => oneRun(s, p));
}

function oneRun(s: FormState, prompt: Input): Omit<RunSettings, 'apiKey'> {
  // A search starts from the first level and sizes each level itself (4 × its concurrency).
  const search = s.findMax ? { findMax: { maxLoad: LIMITS.concurrency } } : undefined;
  const base = {
    concurrency: search ? levels(s.concurrency)?.slice(0, 1) : levels(s.concurrency),
    ...(search ? search : { requests: s.requests }),
    warmup: s.warmup,
    // A workload brings its own output cap.
    ...('workload' in prompt ? {} : { maxTokens: s.maxTokens }),
    // No request asks for more than the form allows, whatever a dataset's entries say.
    maxTokensLimit: LIMITS.maxTokens,
    ...prompt,
    ...(s.slo ? { slo: s.slo } : {}),
    ...(s.uniquePrompts === false ? { cacheBust: 'off' as const } : {}),
    ...(s.sharedPrefix > 0 ? { sharedPrefix: s.sharedPrefix } : {}),
    ...('inputTokens' in prompt && s.inputStdev > 0 ? { inputTokensStdev: s.inputStdev } : {}),
    ...(s.tokenizer ? { tokenizer: s.tokenizer } : {}),
    ...(s.turns > 1 ? { turns: s.turns } : {}),
    ...(s.rampUpS > 0 ? { rampUpS: s.rampUpS } : {}),
    ...(s.maxDurationS > 0 ? { maxDurationS: s.maxDurationS } : {}),
  };
  if (s.preset === LOCAL_PRESET) return { ...base, api: 'local', url: 'local:engine', model: '' };
  return { ...base, api: s.api, url: s.url, model: s.model || 'default' };
}
