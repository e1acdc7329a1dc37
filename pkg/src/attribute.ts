// Which frame showed which text: the perceived-TPS attribution shared by `bench({render})`
// and the Meter's reports. Pure functions of recorded times (no DOM), run after a stream.

import { paintTime } from './frames.js';

/** One piece of text: when it arrived, when it was in the DOM, how many characters. */
export interface Delta {
  arrival: number;
  ready: number;
  chars: number;
}

/** A frame that showed `chars` new characters (0: text was waiting, nothing new showed). */
export interface Paint {
  t: number;
  chars: number;
}

/**
 * Assigns text to the frames that showed it: each frame paints every character that was in
 * the DOM (`ready`) at its rAF and not painted before; a frame while text had arrived but
 * none new was ready paints 0. Paint times are never before a delta's arrival, because
 * `ready` is clamped to it and a frame counts only from its rAF on.
 */
export function attributePaints(deltas: readonly Delta[], frames: readonly number[]): Paint[] {
  const d = deltas.filter((x) => x.chars > 0);
  // Text is rendered in order: a delta is on screen no later than any later delta is.
  const ready = d.map((x) => Math.max(x.ready, x.arrival));
  for (let i = ready.length - 2; i >= 0; i--) ready[i] = Math.min(ready[i]!, ready[i + 1]!);
  const out: Paint[] = [];
  let painted = 0;
  for (const f of frames) {
    if (painted >= d.length) break;
    let chars = 0;
    while (painted < d.length && ready[painted]! <= f) chars += d[painted++]!.chars;
    if (chars > 0) out.push({ t: paintTime(f), chars });
    else if (d[painted]!.arrival <= f) out.push({ t: paintTime(f), chars: 0 });
  }
  return out;
}

/** Unicode scalar values in `s` (what the Rust side counts as characters). */
export function countChars(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff && i > 0) {
      const p = s.charCodeAt(i - 1);
      if (p >= 0xd800 && p <= 0xdbff) n--;
    }
  }
  return n;
}
