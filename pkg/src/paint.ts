// Perceived TPS in `bench()`: put each request's text on screen as it arrives and find the
// frame that showed it.
//
// With an element, each request's text goes into a child <span> (one text node, appended
// to), so it is in the DOM the moment it arrives. With a callback, the app renders however
// it likes and calls `info.rendered()` once its DOM holds the text; until then the text is
// waiting, and frames that pass meanwhile count as frames that showed nothing new.
//
// The painter records only times: when each piece of text was in the DOM and when frames
// ran. The request's wasm `Exchange`, which parsed the text, pairs them (`paintFrames`).

import { FrameRecorder, frameAfter, paintTime } from './frames.js';

/** What a render callback learns about each piece of text. */
export interface RenderInfo {
  /** The request's ticket (unique within the run). */
  request: number;
  /** Index of the load level. */
  level: number;
  warmup: boolean;
  /** The first piece of this request's text (clear your view for a new answer). */
  first: boolean;
  /** `performance.now()` when the read that carried this text returned. */
  arrivalMs: number;
  /** Call once this text (and all before it) is in the DOM. */
  rendered(): void;
}

export type RenderCallback = (delta: string, info: RenderInfo) => void;
export type RenderTarget = HTMLElement | RenderCallback;

/** Spans kept in a render element; older answers are removed. */
const MAX_SPANS = 32;
/** How long a finished request waits for its last text to be painted. */
const SETTLE_TIMEOUT_MS = 500;

export interface RequestTag {
  request: number;
  level: number;
  warmup: boolean;
}

/** What a request's frames showed, for `Exchange.paintFrames(ready, raf, shown)`. */
export interface PaintTimes {
  /** When each piece of text was in the DOM, in arrival order (`Infinity`: never). */
  ready: Float64Array;
  /** Each frame's `requestAnimationFrame` time. */
  raf: Float64Array;
  /** When each frame was shown (the end of a long animation frame spanning it). */
  shown: Float64Array;
}

/** The painter of one request. */
export class RequestPainter {
  /** When each piece of text was in the DOM (`Infinity` until the app says so). */
  private readonly ready: number[] = [];
  private readonly frames = new FrameRecorder();
  private text: Text | undefined;
  /** The first error a render callback threw (the run goes on; it becomes a warning). */
  error: unknown;

  constructor(
    private readonly target: RenderTarget,
    private readonly tag: RequestTag,
  ) {}

  /** Shows `text` that arrived at `arrival` (called right after the read was stamped). */
  add(arrival: number, text: string): void {
    if (text === '') return;
    const i = this.ready.length;
    if (i === 0) this.frames.start();
    this.ready.push(Infinity);
    if (typeof this.target === 'function') {
      const info: RenderInfo = {
        ...this.tag,
        first: i === 0,
        arrivalMs: arrival,
        rendered: () => {
          if (this.ready[i] === Infinity) this.ready[i] = performance.now();
        },
      };
      try {
        this.target(text, info);
      } catch (e) {
        this.error ??= e;
        this.ready[i] = performance.now();
      }
    } else {
      if (!this.text) {
        const span = document.createElement('span');
        span.dataset.tpsmeterRequest = String(this.tag.request);
        this.text = document.createTextNode('');
        span.append(this.text);
        while (this.target.childElementCount >= MAX_SPANS) this.target.firstElementChild?.remove();
        this.target.append(span);
      }
      this.text.appendData(text);
      this.ready[i] = performance.now();
    }
  }

  /** Waits for the frame that shows the last text, stops watching frames, returns the times. */
  async settle(): Promise<PaintTimes | undefined> {
    if (this.ready.length === 0) return undefined;
    const lastReady = (): number => {
      let last = 0;
      for (const r of this.ready) last = Math.max(last, r);
      return last;
    };
    await frameAfter(this.frames, lastReady, SETTLE_TIMEOUT_MS);
    this.frames.stop();
    const raf = Float64Array.from(this.frames.frames);
    return { ready: Float64Array.from(this.ready), raf, shown: raf.map(paintTime) };
  }

  /** Stops watching frames without waiting (the request failed before any text). */
  stop(): void {
    this.frames.stop();
  }
}
