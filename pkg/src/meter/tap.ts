// Pass-through wrappers: every chunk reaches the app unchanged (the same object, byte for
// byte) and is stamped the moment the read returns. The source is read eagerly, so a slow
// consumer does not delay the stamps.

import type { StreamLog } from './log.js';

function ended(log: StreamLog, t: number): void {
  log.endMs ??= t;
}

function failed(log: StreamLog, t: number, errorClass: string, message: string): void {
  if (log.endMs !== undefined) return;
  log.endMs = t;
  log.failure = { t, errorClass, message };
}

/** A stream that yields exactly what `source` yields, stamping each read. */
export function tapStream(
  source: ReadableStream<Uint8Array>,
  log: StreamLog,
  onEnd: () => void,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const pump = async (): Promise<void> => {
        for (;;) {
          let r: ReadableStreamReadResult<Uint8Array>;
          try {
            r = await reader.read();
          } catch (e) {
            // An abort (the fetch's signal) is cancelled; other failures are connect (no
            // byte yet) or truncated.
            if ((e as Error)?.name === 'AbortError') failed(log, performance.now(), 'cancelled', 'the app aborted the request');
            else failed(log, performance.now(), 'connect', 'the response body failed');
            onEnd();
            controller.error(e);
            return;
          }
          const t = performance.now();
          if (r.done) {
            ended(log, t);
            onEnd();
            controller.close();
            return;
          }
          log.times.push(t);
          log.chunks.push(r.value);
          controller.enqueue(r.value);
        }
      };
      // Enqueueing into a stream the app cancelled throws: the cancel hook already recorded it.
      pump().catch(() => {});
    },
    cancel(reason) {
      failed(log, performance.now(), 'cancelled', 'the app cancelled the stream');
      onEnd();
      return reader.cancel(reason);
    },
  });
}

/** An async iterable that yields exactly what `source` yields, stamping each item. */
export async function* tapIterable<T extends Uint8Array | string>(
  source: AsyncIterable<T>,
  log: StreamLog,
  onEnd: () => void,
): AsyncGenerator<T, void, undefined> {
  let done = false;
  try {
    for await (const item of source) {
      if (typeof item !== 'string' && !(item instanceof Uint8Array)) {
        throw new TypeError(
          "tpsmeter: wrap() takes a stream of bytes or strings, and this one yields objects (an SDK's parsed chunks?): call meter.chunk(text) with each text delta instead",
        );
      }
      log.times.push(performance.now());
      log.chunks.push(item);
      yield item;
    }
    done = true;
    ended(log, performance.now());
  } catch (e) {
    failed(log, performance.now(), 'connect', 'the stream failed');
    done = true;
    throw e;
  } finally {
    // The consumer stopped early (break / return): the stream was cut short on purpose.
    if (!done) failed(log, performance.now(), 'cancelled', 'the app stopped reading the stream');
    onEnd();
  }
}
