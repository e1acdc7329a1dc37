// Messages between `bench()` on the page and its reader Worker (./reader-worker.ts). Each
// request has an id; the Worker sends its events in order (`start` first, then at most one
// of `end` / `fail` last, unless the page said `ended` before), then exactly one `timing`.
// Times are on the Worker's `performance.now()` clock; the page maps them onto its own.

import type { FailClass } from '../types.js';
import type { RequestTiming } from './timing.js';
import type { StreamSpec } from './stream.js';

export type ToReader =
  | { kind: 'open'; id: number; spec: StreamSpec }
  /** The run was cancelled: the request fails as `cancelled`. */
  | { kind: 'cancel'; id: number }
  /** The page's parser saw the end marker: stop timing out, drain, send no more events. */
  | { kind: 'ended'; id: number }
  /** Clock check: answered with the Worker's `performance.now()`. */
  | { kind: 'ping'; seq: number };

export type ReaderEvent =
  | { id: number; kind: 'start'; t: number }
  | { id: number; kind: 'response'; t: number; status: number; retryAfter: string | null }
  | { id: number; kind: 'bytes'; t: number; chunk: Uint8Array }
  | { id: number; kind: 'errorBody'; t: number; chunk: Uint8Array }
  | { id: number; kind: 'end'; t: number }
  | { id: number; kind: 'fail'; t: number; errorClass: FailClass; message: string }
  | { id: number; kind: 'fetchError'; t: number; detail: string }
  | { id: number; kind: 'timing'; timing: RequestTiming | undefined };

export type FromReader =
  | ReaderEvent
  /** Sent once the Worker runs: its clock's origin, and whether it is cross-origin isolated. */
  | { kind: 'ready'; timeOrigin: number; isolated: boolean; resolutionMs: number }
  | { kind: 'pong'; seq: number; t: number };
