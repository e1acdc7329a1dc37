// The CPU backend's thread pool, from the engine's Worker: whether this page can run wasm
// threads, the pool's start (the page makes the thread Workers, this Worker joins each over a
// port), and what a thread's Worker (this same script) runs. Its glue is imported
// dynamically, as ./worker.ts explains.

import { type EngineError, messageOf } from './error.js';
import { preferRelaxed } from './relaxed.js';
import { post, type Step } from './scope.js';

/** Why this page cannot run wasm threads, or undefined where it can. */
export function threadsMissing(): string | undefined {
  if (!self.crossOriginIsolated) {
    return 'the page is not cross-origin isolated (served without the COOP and COEP headers), which WebAssembly threads need';
  }
  // Threads need shared wasm memory sent to other Workers, not the SharedArrayBuffer global
  // (WebKitGTK has none, yet makes shared memory): so the test is to make and clone one.
  let memory: WebAssembly.Memory;
  try {
    memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  } catch (e) {
    return `this browser cannot make shared WebAssembly memory (${messageOf(e)})`;
  }
  try {
    structuredClone(memory);
  } catch (e) {
    return `this browser makes shared WebAssembly memory but cannot send it to another Worker (${messageOf(e)})`;
  }
  return undefined;
}

/** How long a thread's Worker may take to load its script, instantiate the module and wait for its thread. */
const THREAD_START_MS = 60_000;

/**
 * The CPU backend on `threads` Web Workers sharing this Worker's wasm memory. Each is this
 * same script (located as it was, whatever a bundler did to it), made by the page at this
 * Worker's request and told over a port of its own to join the pool. The pool is built only
 * once every thread waits for it: a pass handed to a pool with a missing thread would never
 * finish.
 *
 * The page makes them, not this Worker: in Firefox (153 ESR) `new Worker` called here now and
 * then never returned, whether a sibling thread was still loading its script, blocked in
 * `Atomics.wait`, or not made yet (the load hung before its first byte with the cores idle,
 * about 1 run in 8 of engines.test.mjs, twice in CI; this Worker's log ended at the call and
 * the server never saw that thread's script requested). The page's `new Worker` never blocks.
 */
export async function startCpuThreads(
  threads: number,
  maxContext: number | undefined,
  relaxed: boolean,
  step: Step,
  signal: AbortSignal,
  cancelled: () => EngineError,
){
  // The page makes the Workers while the module loads here.
  const ports = askForThreads(threads);
  const failedToLoad = new Map<number, string>();
  threadFailed = (i, message) => failedToLoad.set(i, message);
  let spawned: Spawned[] = [];
  const endAll = (): void => {
    threadFailed = undefined;
    for (const t of spawned) t.port.close();
    post({ id: 0, kind: 'endThreads' });
  };
  step('wasm');
  const loaded = await preferRelaxed(relaxed, async (r) => (await threadsGlue(r)).loadCpuThreadsWasm(), signal, cancelled).catch((e: unknown) => {
    endAll();
    throw e;
  });
  if (signal.aborted) {
    endAll();
    throw cancelled();
  }
  const { wasm, simdWhy } = loaded;
  const join: ThreadJoin = {
    kind: 'cpu-thread',
    module: wasm.threadModule() as WebAssembly.Module,
    memory: wasm.threadMemory() as WebAssembly.Memory,
    relaxed: loaded.relaxed,
  };
  step('threads', threads);
  spawned = (
    await ports.catch((e: unknown) => {
      endAll();
      throw e;
    })
  ).map((port, i) => joinThread(port, i, join));
  // A script that failed to load while the module loaded here was reported already.
  for (const [i, message] of failedToLoad) spawned[i]?.failed(message);
  threadFailed = (i, message) => spawned[i]?.failed(message);
  const settled = await Promise.allSettled(spawned.map((t) => t.ready));
  threadFailed = undefined;
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    endAll();
    throw failed.reason;
  }
  cpuThreads = spawned.map((t) => t.port);
  wasm.startThreadPool(threads);
  return { loader: await wasm.EngineLoader.create({ backend: 'cpu', maxContext }), simdWhy };
}

/** The ports to the pool's Workers, kept for the life of this Worker (the page ends them with it). */
let cpuThreads: MessagePort[] = [];

/** The page's answer to `spawnThreads`, and where a thread's failure to load goes, while a pool starts. */
let threadPorts: ((answer: { ports: MessagePort[]; error?: string }) => void) | undefined;
let threadFailed: ((index: number, message: string) => unknown) | undefined;

/** The page answered `spawnThreads` (`threadPorts`). */
export function onThreadPorts(answer: { ports: MessagePort[]; error?: string }): void {
  threadPorts?.(answer);
  threadPorts = undefined;
}

/** The page saw a pool thread's script fail to load (`threadFailed`). */
export function onThreadFailed(index: number, message: string): void {
  threadFailed?.(index, message);
}

/** Asks the page for `count` thread Workers; resolves to a port to each. */
function askForThreads(count: number): Promise<MessagePort[]> {
  const ports = new Promise<MessagePort[]>((resolve, reject) => {
    threadPorts = ({ ports, error }) => {
      if (ports.length === count) resolve(ports);
      else reject(new Error(`the page could not start ${count} thread Workers (${error ?? `it started ${ports.length}`})`));
    };
  });
  // Settled below; a failure meanwhile is not unhandled.
  ports.catch(() => {});
  post({ id: 0, kind: 'spawnThreads', url: self.location.href, type: OWN_TYPE, count });
  return ports;
}

/** The threaded build's glue: the relaxed-SIMD one or the plain one (literal imports, so bundlers emit both). */
const threadsGlue = (relaxed: boolean) => (relaxed ? import('../raw-engine-cpu-mt-relaxed.js') : import('../raw-engine-cpu-mt.js'));

/** The first message of a thread's Worker, from the page: the port the engine's Worker joins it by. */
export interface ThreadPort {
  kind: 'cpu-thread-port';
  port: MessagePort;
}

/** What the engine's Worker sends a thread over its port. */
interface ThreadJoin {
  kind: 'cpu-thread';
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  /** Which threaded build `module` is (its glue must match). */
  relaxed: boolean;
}

/**
 * How this Worker's script runs: a module, or a classic script where a bundler made it one
 * (webpack 5 drops `type: 'module'` and loads chunks with `importScripts`). Its threads must
 * run it the same way. `importScripts` throws a TypeError in a module Worker whatever it is
 * given; in a classic one, a URL that cannot parse throws a SyntaxError before anything
 * loads. (`importScripts()` with no URL, the earlier test, does nothing in a module Worker
 * in Firefox: its threads were then started as classic scripts and failed to parse.)
 */
const OWN_TYPE: WorkerType = (() => {
  try {
    (self as unknown as { importScripts(url: string): void }).importScripts('http://[');
  } catch (e) {
    return e instanceof TypeError ? 'module' : 'classic';
  }
  return 'classic';
})();

/** A pool thread's Worker, seen through its port. */
interface Spawned {
  port: MessagePort;
  /** Settles once the thread waits for its rayon thread, or has failed. */
  ready: Promise<void>;
  /** Fails `ready`: the page saw the thread's script fail to load. */
  failed(message: string): void;
}

/** Sends thread `i`'s Worker, behind `port`, the module to run; `ready` settles once it waits for its thread. */
function joinThread(port: MessagePort, i: number, join: ThreadJoin): Spawned {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let settle!: (failure?: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    settle = (failure) => {
      clearTimeout(timer);
      if (failure) reject(failure);
      else resolve();
    };
    timer = setTimeout(() => settle(new Error(`thread ${i + 1} did not start within ${THREAD_START_MS / 1000} s`)), THREAD_START_MS);
    port.onmessage = (e: MessageEvent<{ kind: string; message?: string }>) =>
      settle(e.data.kind === 'cpu-thread-ready' ? undefined : new Error(`thread ${i + 1}: ${e.data.message ?? 'failed'}`));
  });
  port.postMessage(join);
  return { port, ready, failed: (message) => settle(new Error(`thread ${i + 1}'s Worker failed to load (${message})`)) };
}

/** In a thread's Worker: joins the pool when `port` brings the module, and runs its thread; never answers again. */
export function runThread(port: MessagePort): void {
  port.onmessage = (e: MessageEvent<ThreadJoin>) => {
    port.onmessage = null;
    void (async () => {
      const join = e.data;
      try {
        const { runCpuThread } = await threadsGlue(join.relaxed);
        await runCpuThread(join.module, join.memory, () => port.postMessage({ kind: 'cpu-thread-ready' }));
      } catch (err) {
        port.postMessage({ kind: 'cpu-thread-failed', message: messageOf(err) });
      }
    })();
  };
}
