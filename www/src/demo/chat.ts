// The conversation: the user's turns and the model's streamed answers. The whole history is
// sent each turn; the engine reuses its KV cache for the part it has already seen.

import type { ChatCompletionChunk, ChatMessage, LocalEngine, LocalTimings } from 'tpsmeter/engine';
import { byId, el, fill } from '../common/dom';
import { explain, type Explained } from './errors';
import type { LiveMeter } from './meter';

interface Sampling {
  max_tokens: number;
  temperature: number;
  top_p: number;
  top_k: number;
  seed: number;
}

/** Reads one number field; undefined when it is empty or outside its min/max. */
function numberField(id: string, integer: boolean): number | undefined | null {
  const input = byId<HTMLInputElement>(id);
  const raw = input.value.trim();
  if (raw === '') return null;
  const n = Number(raw);
  const ok = Number.isFinite(n) && (!integer || Number.isInteger(n)) && n >= Number(input.min) && n <= Number(input.max);
  input.setAttribute('aria-invalid', String(!ok));
  return ok ? n : undefined;
}

export class ChatView {
  private log = byId('messages');
  private empty = byId('messages-empty');
  private form = byId<HTMLFormElement>('chat-form');
  private input = byId<HTMLTextAreaElement>('message');
  private sendButton = byId<HTMLButtonElement>('send');
  private stopButton = byId<HTMLButtonElement>('stop');
  private newButton = byId<HTMLButtonElement>('new-chat');
  private error = byId('chat-error');
  private history: ChatMessage[] = [];
  private abort: AbortController | undefined;
  private engine: LocalEngine | undefined;
  /** Bumped by New chat: an answer still arriving from before it is not added to the new history. */
  private epoch = 0;
  /** Something else has the engine (the GPU probe): sending waits. */
  private held = false;

  /** Generation started or ended (the page disables what must wait). */
  onBusy: (busy: boolean) => void = () => {};
  /** The engine failed in a way that needs a new one (device lost, worker gone). */
  onEngineFailed: (why: Explained, where: HTMLElement) => void = () => {};

  constructor(private meter: LiveMeter) {
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send();
    });
    this.input.addEventListener('keydown', (e) => {
      // Enter sends, Shift+Enter is a new line; an IME composition's Enter is the IME's.
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.send();
      }
    });
    this.stopButton.addEventListener('click', () => this.abort?.abort());
    this.newButton.addEventListener('click', () => this.clear());
  }

  get busy(): boolean {
    return this.abort !== undefined;
  }

  /** The engine to talk to (undefined: none loaded). */
  setEngine(engine: LocalEngine | undefined): void {
    this.engine = engine;
    this.abort?.abort();
    this.updateControls();
    fill(this.empty, engine ? 'Write a message to start.' : 'Load a model, then write a message.');
  }

  setHeld(held: boolean): void {
    this.held = held;
    this.updateControls();
  }

  stop(): void {
    this.abort?.abort();
  }

  clear(): void {
    this.abort?.abort();
    this.epoch++;
    this.history = [];
    fill(this.log, this.empty);
    fill(this.error);
    this.input.focus();
  }

  private updateControls(): void {
    const ready = this.engine !== undefined;
    this.input.disabled = !ready;
    this.sendButton.disabled = !ready || this.busy || this.held;
    this.stopButton.disabled = !this.busy;
  }

  private sampling(): Sampling | undefined {
    const max_tokens = numberField('max-tokens', true);
    const temperature = numberField('temperature', false);
    const top_p = numberField('top-p', false);
    const top_k = numberField('top-k', true);
    const seed = numberField('seed', true);
    const bad: string[] = [];
    if (typeof max_tokens !== 'number') bad.push('Max tokens (1 to 4096)');
    if (typeof temperature !== 'number') bad.push('Temperature (0 to 2)');
    if (typeof top_p !== 'number') bad.push('Top-p (0 to 1)');
    if (typeof top_k !== 'number') bad.push('Top-k (0 to 1000)');
    if (seed === undefined) bad.push('Seed (a whole number, or empty)');
    if (typeof max_tokens !== 'number' || typeof temperature !== 'number' || typeof top_p !== 'number' || typeof top_k !== 'number' || seed === undefined) {
      byId<HTMLDetailsElement>('sampling').open = true;
      fill(this.error, el('p', { class: 'notice bad' }, `Check the sampling settings: ${bad.join(', ')}.`));
      return undefined;
    }
    // The engine's own default seed is fixed (0): an empty field means a fresh one, so the
    // same question can get a different answer, as it does from a hosted API.
    return { max_tokens, temperature, top_p, top_k, seed: seed ?? crypto.getRandomValues(new Uint32Array(1))[0] };
  }

  private bubble(role: 'user' | 'assistant', text: string): { el: HTMLElement; body: Text; note: HTMLElement } {
    this.empty.remove();
    const body = document.createTextNode(text);
    const note = el('p', { class: 'msg-note' });
    const box = el('div', { class: `msg ${role}` }, el('p', { class: 'who' }, role === 'user' ? 'You' : 'Model'), el('p', { class: 'text' }, body), note);
    this.log.append(box);
    return { el: box, body, note };
  }

  /** Keeps the newest text in view, unless the reader scrolled up to read. */
  private follow(wasAtBottom: boolean): void {
    if (wasAtBottom) this.log.scrollTop = this.log.scrollHeight;
  }

  private atBottom(): boolean {
    return this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 24;
  }

  async send(): Promise<void> {
    const engine = this.engine;
    if (!engine || this.busy || this.held) return;
    const text = this.input.value.trim();
    if (!text) {
      this.input.focus();
      return;
    }
    const sampling = this.sampling();
    if (!sampling) return;
    fill(this.error);
    const t0 = performance.now();
    const epoch = this.epoch;
    this.input.value = '';
    this.history.push({ role: 'user', content: text });
    const messages = this.history.slice();
    this.bubble('user', text);
    const answer = this.bubble('assistant', '');
    answer.el.classList.add('streaming');
    this.follow(true);
    const abort = new AbortController();
    this.abort = abort;
    this.updateControls();
    this.onBusy(true);
    // Announce the finished answer once, not token by token.
    this.log.setAttribute('aria-busy', 'true');
    this.meter.start(t0);
    let reply = '';
    let last: ChatCompletionChunk | undefined;
    let failure: unknown;
    try {
      const stream = await engine.chat.completions.create({ messages, stream: true, signal: abort.signal, ...sampling });
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        const delta = choice && 'delta' in choice ? choice.delta.content : undefined;
        if (delta) {
          const bottom = this.atBottom();
          answer.body.appendData(delta);
          reply += delta;
          this.meter.token(performance.now());
          this.follow(bottom);
        }
        last = chunk;
      }
    } catch (e) {
      failure = e;
    }
    this.meter.end();
    answer.el.classList.remove('streaming');
    this.log.setAttribute('aria-busy', 'false');
    this.abort = undefined;
    this.updateControls();
    this.onBusy(false);

    if (epoch !== this.epoch) return;
    const finish = last?.choices[0]?.finish_reason ?? null;
    const stopped = finish === 'cancelled' || (failure instanceof Error && failure.name === 'AbortError');
    if (failure && !stopped) {
      const why = explain(failure);
      fill(answer.note, '(No complete answer: see the message below.)');
      // The failed turn leaves the history, so sending again does not repeat it twice.
      this.history.pop();
      if (why.reload) this.onEngineFailed(why, this.error);
      else fill(this.error, el('p', { class: 'notice bad' }, why.text));
      return;
    }
    this.history.push({ role: 'assistant', content: reply });
    if (stopped) fill(answer.note, 'Stopped.');
    else if (finish === 'length') fill(answer.note, `Cut at the ${sampling.max_tokens}-token limit (Sampling › Max tokens).`);
    else if (finish === 'context_full') fill(answer.note, 'The conversation filled the model’s context: start a new chat to go on.');
    if (!reply && !answer.note.textContent) fill(answer.note, '(The model answered with nothing.)');
    const timings: LocalTimings | undefined = last?.timings;
    if (timings) this.meter.showEngine(timings, last?.usage?.completion_tokens);
    if (document.activeElement === this.stopButton || document.activeElement === document.body) this.input.focus();
  }
}
