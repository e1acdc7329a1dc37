// The engine's Worker as its scripts see it: the messages it sends the page, and how a load
// reports its start steps. Shared by the Worker's entry (./worker.ts) and its thread pool
// (./threads.ts).

import type { FromWorker, StartStep, ToWorker } from './protocol.js';
import type { ThreadPort } from './threads.js';

interface Scope {
  postMessage(message: FromWorker): void;
  onmessage: ((e: MessageEvent<ToWorker | ThreadPort>) => void) | null;
}
export const scope = self as unknown as Scope;

export const post = (m: FromWorker): void => scope.postMessage(m);

/** Reports a start step as it begins (see `StartStep`). */
export type Step = (step: StartStep, threads?: number) => void;
