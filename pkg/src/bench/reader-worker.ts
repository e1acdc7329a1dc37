// `bench()`'s reader Worker: fetches, reads and stamps the run's streams off the page's main
// thread, so that the page's rendering, layout and scripts cannot delay a stamp (on the main
// thread a read that resolved during a 4 ms frame was stamped after it). The bytes go to the
// page with their stamps, where the wasm parser, the records and the painting stay. Speaks
// ./reader-protocol.ts; started by ./reader.ts.

import type { FromReader, ToReader } from './reader-protocol.js';
import { timerResolutionMs } from './environment.js';
import { StreamRead, type StreamEvents, type StreamSpec } from './stream.js';
import { TimingMatcher } from './timing.js';

interface Scope {
  postMessage(message: FromReader, transfer?: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToReader>) => void) | null;
}
const scope = self as unknown as Scope;

const matcher = new TimingMatcher();
const reads = new Map<number, StreamRead>();

/** A chunk to post: its own buffer moves (no copy) when the view covers all of it. */
function movable(chunk: Uint8Array): [Uint8Array, Transferable[]] {
  const b = chunk.buffer;
  if (b instanceof ArrayBuffer && chunk.byteOffset === 0 && chunk.byteLength === b.byteLength) return [chunk, [b]];
  const copy = chunk.slice();
  return [copy, [copy.buffer]];
}

function open(id: number, spec: StreamSpec): void {
  const post = (m: FromReader, transfer: Transferable[] = []): void => scope.postMessage(m, transfer);
  const events: StreamEvents = {
    start: (t) => post({ id, kind: 'start', t }),
    response: (t, status, retryAfter) => post({ id, kind: 'response', t, status, retryAfter }),
    bytes: (t, c) => {
      const [chunk, transfer] = movable(c);
      post({ id, kind: 'bytes', t, chunk }, transfer);
    },
    errorBody: (t, c) => {
      const [chunk, transfer] = movable(c);
      post({ id, kind: 'errorBody', t, chunk }, transfer);
    },
    end: (t) => post({ id, kind: 'end', t }),
    fail: (t, errorClass, message) => post({ id, kind: 'fail', t, errorClass, message }),
    fetchError: (t, detail) => post({ id, kind: 'fetchError', t, detail }),
  };
  const read = new StreamRead(spec, events, matcher);
  reads.set(id, read);
  void read.timing.then((timing) => {
    reads.delete(id);
    post({ id, kind: 'timing', timing });
  });
}

scope.onmessage = (e: MessageEvent<ToReader>): void => {
  const m = e.data;
  switch (m.kind) {
    case 'open':
      open(m.id, m.spec);
      break;
    case 'cancel':
      reads.get(m.id)?.cancel();
      break;
    case 'ended':
      reads.get(m.id)?.parserEnded();
      break;
    case 'ping':
      scope.postMessage({ kind: 'pong', seq: m.seq, t: performance.now() });
      break;
  }
};

scope.postMessage({
  kind: 'ready',
  timeOrigin: performance.timeOrigin,
  isolated: typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated,
  resolutionMs: timerResolutionMs(),
});
