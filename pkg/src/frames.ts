// Frame times for perceived TPS, shared by `bench({render})` and the Meter. No wasm here:
// the Meter imports this eagerly.
//
// rAF callbacks run right before the browser renders a frame: the first rAF after a DOM
// update is the earliest time it can be on screen. With the Long Animation Frames API
// (Chromium 123+), a long frame (> 50 ms) comes with its end time, when its rendering
// finished: a rAF inside it is moved to that end.

type Sink = (rafMs: number) => void;

const sinks = new Set<Sink>();
let looping = false;
const longFrames: [number, number][] = [];
const LONG_FRAMES_KEPT = 256;
let loafObserver: PerformanceObserver | undefined;

function onFrame(): void {
  const t = performance.now();
  if (sinks.size === 0) {
    looping = false;
    return;
  }
  for (const sink of sinks) sink(t);
  requestAnimationFrame(onFrame);
}

function keepLongFrames(list: PerformanceEntryList): void {
  for (const e of list) longFrames.push([e.startTime, e.startTime + e.duration]);
  if (longFrames.length > LONG_FRAMES_KEPT) longFrames.splice(0, longFrames.length - LONG_FRAMES_KEPT);
}

function observeLongFrames(): void {
  if (loafObserver || typeof PerformanceObserver === 'undefined') return;
  if (!PerformanceObserver.supportedEntryTypes?.includes('long-animation-frame')) return;
  loafObserver = new PerformanceObserver((list) => keepLongFrames(list.getEntries()));
  try {
    loafObserver.observe({ type: 'long-animation-frame', buffered: true });
  } catch {
    loafObserver = undefined;
  }
}

/** Whether frames can be observed here (a document with rAF). */
export function canObserveFrames(): boolean {
  return typeof requestAnimationFrame === 'function';
}

/** The paint time of the frame whose rAF ran at `rafMs`: the end of a long frame spanning it. */
export function paintTime(rafMs: number): number {
  if (loafObserver) keepLongFrames(loafObserver.takeRecords());
  for (let i = longFrames.length - 1; i >= 0; i--) {
    const [start, end] = longFrames[i]!;
    if (start <= rafMs && rafMs <= end) return end;
  }
  return rafMs;
}

/** Records the rAF time of every frame between `start()` and `stop()`. */
export class FrameRecorder {
  readonly frames: number[] = [];
  private readonly sink: Sink = (t) => {
    this.frames.push(t);
    this.onFrame?.(t);
  };
  /** Called after each recorded frame. */
  onFrame: ((rafMs: number) => void) | undefined;

  start(): void {
    if (!canObserveFrames() || sinks.has(this.sink)) return;
    observeLongFrames();
    sinks.add(this.sink);
    if (!looping) {
      looping = true;
      requestAnimationFrame(onFrame);
    }
  }

  stop(): void {
    sinks.delete(this.sink);
  }
}

/**
 * Resolves once a frame at or after `readyMs()` (re-read at every frame: text can become
 * ready while waiting; `Infinity` while some is not) has been recorded and the browser has
 * had a task's time to finish that frame (so a long frame's entry is queued), or after
 * `timeoutMs` (hidden tabs run no frames). Never rejects.
 */
export function frameAfter(
  rec: FrameRecorder,
  readyMs: () => number,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve) => {
    const last = rec.frames[rec.frames.length - 1];
    if (last !== undefined && last >= readyMs()) return void setTimeout(resolve, 0);
    if (typeof document !== 'undefined' && document.visibilityState === 'hidden') return resolve();
    const prev = rec.onFrame;
    const done = (): void => {
      clearTimeout(timer);
      rec.onFrame = prev;
      setTimeout(resolve, 0);
    };
    const timer = setTimeout(done, timeoutMs);
    rec.onFrame = (t) => {
      prev?.(t);
      if (t >= readyMs()) done();
    };
  });
}
