// The live meter: what the reader experiences, timed on the page's clock from the click
// on Send: time to first token, decode rate, and how many tokens land in one painted frame
// (a stream that delivers in bursts paints several at once, and reads as jerky even at a
// good average rate). After the stream, the engine's own figures from its Worker.

import type { LocalEngine, LocalTimings, ProbeReport } from 'tpsmeter/engine';
import { byId, el, fill } from '../common/dom';
import { fixed, msFigure, NONE } from '../common/format';

interface Card {
  value: HTMLElement;
  detail: HTMLElement;
}

export class LiveMeter {
  private root = byId('meter');
  private engineBox = byId('engine-timings');
  private ttft: Card;
  private decode: Card;
  private perFrame: Card;
  private perFrameMax: HTMLElement;
  private tokens: Card;

  private sentAt = 0;
  private firstAt: number | undefined;
  private lastAt = 0;
  private count = 0;
  /** Deltas appended since the last animation frame. */
  private pending = 0;
  private frames = 0;
  private framed = 0;
  private maxPerFrame = 0;
  private raf = 0;
  private running = false;

  constructor() {
    this.ttft = this.card('Time to first token', 'ttft-ms', 'ms', 'From Send to the first text on this page.');
    this.decode = this.card('Decode', 'decode-tps', 'tok/s', 'Tokens after the first ÷ time since the first.');
    this.perFrame = this.card('Tokens per painted frame', 'tokens-per-frame', 'mean', '');
    this.perFrameMax = el('span', { 'data-metric': 'tokens-per-frame-max' }, NONE);
    fill(this.perFrame.detail, 'Max ', this.perFrameMax, ' in one frame.');
    this.tokens = this.card('Tokens', 'tokens', '', 'Text pieces received so far.');
    this.reset();
  }

  private card(label: string, metric: string, unit: string, detail: string): Card {
    const value = el('span', { 'data-metric': metric }, NONE);
    const d = el('p', { class: 'detail' }, detail);
    this.root.append(el('div', { class: 'card' }, el('p', { class: 'label' }, label), el('p', { class: 'value' }, value, unit ? el('span', { class: 'unit' }, ` ${unit}`) : ''), d));
    return { value, detail: d };
  }

  private reset(): void {
    this.firstAt = undefined;
    this.count = 0;
    this.pending = 0;
    this.frames = 0;
    this.framed = 0;
    this.maxPerFrame = 0;
    this.render();
  }

  /** Send was pressed: `t0` is when, on performance.now(). */
  start(t0: number): void {
    this.stopFrames();
    this.reset();
    this.sentAt = t0;
    this.running = true;
    // A busy live region holds its announcements: one reading when the answer is done, not
    // one per frame.
    this.root.setAttribute('aria-busy', 'true');
    const tick = (): void => {
      this.countFrame();
      this.render();
      if (this.running) this.raf = requestAnimationFrame(tick);
    };
    this.raf = requestAnimationFrame(tick);
  }

  /** One text delta was appended to the page, at `t`. */
  token(t: number): void {
    if (this.firstAt === undefined) this.firstAt = t;
    this.lastAt = t;
    this.count++;
    this.pending++;
  }

  /** The stream ended (finished, stopped or failed). */
  end(): void {
    this.running = false;
    this.stopFrames();
    // Deltas appended after the last frame callback are painted by the next frame: one more.
    this.countFrame();
    this.render();
    this.root.setAttribute('aria-busy', 'false');
  }

  /** Counts a frame that paints the deltas appended since the last one, if any. */
  private countFrame(): void {
    if (this.pending === 0) return;
    this.frames++;
    this.framed += this.pending;
    this.maxPerFrame = Math.max(this.maxPerFrame, this.pending);
    this.pending = 0;
  }

  private stopFrames(): void {
    cancelAnimationFrame(this.raf);
    this.raf = 0;
  }

  private render(): void {
    const ttft = this.firstAt === undefined ? undefined : this.firstAt - this.sentAt;
    this.ttft.value.textContent = msFigure(ttft);
    const span = this.firstAt === undefined ? 0 : this.lastAt - this.firstAt;
    this.decode.value.textContent = this.count >= 2 && span > 0 ? fixed((1000 * (this.count - 1)) / span, 1) : NONE;
    this.perFrame.value.textContent = this.frames > 0 ? fixed(this.framed / this.frames, 2) : NONE;
    this.perFrameMax.textContent = this.frames > 0 ? String(this.maxPerFrame) : NONE;
    this.tokens.value.textContent = String(this.count);
  }

  /** The engine's figures from the last chunk. */
  showEngine(t: LocalTimings, completionTokens: number | undefined): void {
    const row = (label: string, value: Node | string, metric?: string, unit?: string): HTMLElement[] => [
      el('dt', {}, label),
      el('dd', {}, metric ? el('span', { 'data-metric': metric }, value) : value, unit ? ` ${unit}` : ''),
    ];
    const items: HTMLElement[] = [
      ...row('Time to first token', msFigure(t.ttft_ms), 'engine-ttft-ms', 'ms'),
      ...row('Prefill', fixed(t.prefill_tokens_per_second, 1), 'prefill-tps', 'tok/s'),
      ...row('Decode', fixed(t.decode_tokens_per_second, 1), 'engine-decode-tps', 'tok/s'),
      ...row('Prompt tokens run', String(t.prompt_tokens_evaluated), 'prompt-tokens', t.cold ? '(first answer)' : '(the rest reused from the last turn)'),
    ];
    if (completionTokens !== undefined) items.push(...row('Tokens generated', String(completionTokens), 'completion-tokens'));
    if (t.cpu) {
      items.push(
        ...row('Backend', `CPU, WebAssembly ${t.cpu.simd}`, 'backend'),
        ...row('Threads', String(t.cpu.threads), 'threads'),
        ...row('Forward passes', String(t.cpu.passes), 'cpu-passes', '(a prompt chunk or a decoded token each)'),
      );
    } else {
      items.push(...row('Backend', 'WebGPU', 'backend'), ...row('Adapter', t.adapter ?? NONE), ...row('Kernel profile', t.profile ?? NONE));
    }
    // What each decoded token cost the Worker: on a real GPU these fixed costs, not memory
    // bandwidth, bound a small model's decode.
    const c = t.perTokenCost;
    if (c) {
      // (metric, value, the words after it)
      const parts: [string, number, string][] = [
        ['dispatches-per-token', c.dispatches, ' dispatches in '],
        ['passes-per-token', c.passes, ' pass, '],
        ['submits-per-token', c.submits, ' submit; '],
        ['pipeline-changes-per-token', c.pipelineChanges, ' pipeline and '],
        ['bind-group-changes-per-token', c.bindGroupChanges, ' bind-group changes; '],
        ['bytes-written-per-token', c.bytesWritten, ' B written, '],
        ['bytes-read-per-token', c.bytesRead, ' B read back'],
      ];
      items.push(
        el('dt', {}, 'Per decoded token'),
        el('dd', {}, ...parts.flatMap(([metric, v, words]) => [el('span', { 'data-metric': metric }, fixed(v, 0)), words])),
        ...row('Encode + submit per token (median)', fixed(c.encodeMs, 2), 'encode-ms', 'ms'),
      );
    }
    const roof = t.roofline;
    if (roof) {
      const share = roof.share === undefined ? undefined : roof.share * 100;
      items.push(
        el('dt', {}, 'Against the GPU’s ceiling'),
        el(
          'dd',
          {},
          'decode at ',
          el('span', { 'data-metric': 'ceiling-share' }, fixed(share, 1)),
          ' % of the probed ceiling (',
          el('span', { 'data-metric': 'ceiling-tps' }, fixed(roof.ceiling_tokens_per_second, 1)),
          ' tok/s)',
        ),
      );
    } else if (!t.cpu) {
      items.push(el('dt', {}, 'Against the GPU’s ceiling'), el('dd', {}, 'Press Probe GPU, then ask again, to see decode as a share of the fastest this GPU allows.'));
    }
    fill(this.engineBox, el('dl', { class: 'figures' }, ...items));
  }

  /** After `engine.probe()`. */
  static describeProbe(report: ProbeReport, engine: LocalEngine): (Node | string)[] {
    const perToken = engine.info?.weightBytesPerToken ?? 0;
    const ceiling = perToken > 0 ? (report.read_gb_per_s * 1e9) / perToken : undefined;
    return [
      'This GPU reads memory at ',
      el('span', { 'data-metric': 'read-gbps' }, fixed(report.read_gb_per_s, 1)),
      ' GB/s, so this model, which reads ',
      `${(perToken / 1e6).toFixed(0)} MB of weights per token, can decode at most `,
      el('span', { 'data-metric': 'probe-ceiling-tps' }, fixed(ceiling, 1)),
      ' tok/s here. The next answers are set against it.',
    ];
  }
}
