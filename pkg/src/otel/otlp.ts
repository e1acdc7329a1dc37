// `otlpExporter()`: the OTLP exporter's eager part, a few hundred bytes. The exporter itself
// (aggregation, encoding, sending; ~3 KB gzipped) is imported as soon as one is created, a
// request of its own off the page's critical path: it has loaded long before a stream
// ends, so its `pagehide` listener is there when the page goes away. Reports that arrive
// before it has loaded wait for it (at most MAX_WAITING).

import type { MeterReport } from '../meter/types.js';
import type { OtlpExporter, OtlpOptions, OtlpStats } from './exporter.js';

/** Reports kept while the exporter's module loads; more are counted as dropped. */
const MAX_WAITING = 256;

export interface OtlpHandle {
  /** The meter's `onReport`: `new Meter({ api, onReport: otlp.record })`. */
  record(report: MeterReport): void;
  /** Sends what has been recorded (once the exporter has loaded). */
  flush(): void;
  /** Counters: what was sent, retried, dropped and is queued. */
  stats(): OtlpStats;
  /** A last send; then timers and listeners stop. */
  shutdown(): void;
  /** Resolves once the exporter's module has loaded (its import starts at creation). */
  readonly ready: Promise<void>;
}

/** An OTLP/HTTP JSON metrics exporter for the meter's reports (docs/otel.md). */
export function otlpExporter(options: OtlpOptions): OtlpHandle {
  let exporter: OtlpExporter | undefined;
  let loading: Promise<void> | undefined;
  let shut = false;
  let flushWanted = false;
  let dropped = 0;
  const waiting: MeterReport[] = [];
  const load = (): Promise<void> =>
    (loading ??= import('./exporter.js').then(({ OtlpExporter }) => {
      exporter = new OtlpExporter(options);
      for (const r of waiting.splice(0)) exporter.record(r);
      if (shut) exporter.shutdown();
      else if (flushWanted) exporter.flush();
    }));
  const handle: OtlpHandle = {
    record: (report) => {
      if (exporter) return exporter.record(report);
      if (waiting.length < MAX_WAITING) waiting.push(report);
      else dropped++;
      void load();
    },
    flush: () => {
      if (exporter) return exporter.flush();
      flushWanted = true;
      void load();
    },
    stats: () => {
      const s = exporter?.stats() ?? { sent: 0, retried: 0, droppedBodies: 0, droppedValues: 0, queued: 0, queuedBytes: 0 };
      return { ...s, droppedReports: dropped };
    },
    shutdown: () => {
      shut = true;
      if (exporter) exporter.shutdown();
      else if (waiting.length > 0) void load();
    },
    get ready() {
      return load();
    },
  };
  // Loading at the first report instead lost the reports of a page that went away while the
  // module was still on its way (the pagehide listener is the exporter's).
  void load();
  return handle;
}
