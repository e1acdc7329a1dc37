// The bridge to an app's own OpenTelemetry JS SDK: every report records into the
// instruments of the `Meter` the app passes (`metrics.getMeter(...)` of `@opentelemetry/api`),
// so the app's exporter, resource and views apply. Nothing of OpenTelemetry is imported or
// bundled: the Meter is typed by the few methods used, which every `@opentelemetry/api` 1.x
// Meter has (`advice` needs 1.7+; older SDKs ignore it and use their default buckets).

import type { MeterReport } from '../meter/types.js';
import { measurements, type Instrument, type Naming } from './instruments.js';
import { Partials } from './partials.js';

/** The part of `@opentelemetry/api`'s `Meter` the bridge uses. */
export interface OtelApiMeter {
  createHistogram(
    name: string,
    options?: { unit?: string; description?: string; advice?: { explicitBucketBoundaries?: number[] } },
  ): { record(value: number, attributes?: Record<string, string>): void };
  createCounter(name: string, options?: { unit?: string; description?: string }): { add(value: number, attributes?: Record<string, string>): void };
}

export interface BridgeOptions {
  /** Which convention names to record: `released` (default), `latest` or `both`. */
  naming?: Naming;
}

/**
 * Returns an `onReport` for `Meter` that records each stream into `meter`:
 * `new Meter({ api, onReport: otelBridge(metrics.getMeter('my-app')) })`.
 */
export function otelBridge(meter: OtelApiMeter, options: BridgeOptions = {}): (report: MeterReport) => void {
  const made = new Map<string, (value: number, attributes: Record<string, string>) => void>();
  const instrument = (i: Instrument): ((value: number, attributes: Record<string, string>) => void) => {
    let record = made.get(i.name);
    if (!record) {
      if (i.kind === 'histogram') {
        const h = meter.createHistogram(i.name, {
          unit: i.unit,
          description: i.description,
          advice: { explicitBucketBoundaries: [...(i.buckets ?? [])] },
        });
        record = (v, a) => h.record(v, a);
      } else {
        const c = meter.createCounter(i.name, { unit: i.unit, description: i.description });
        record = (v, a) => c.add(v, a);
      }
      made.set(i.name, record);
    }
    return record;
  };
  const partials = new Partials((report) => {
    for (const m of measurements(report, options.naming)) instrument(m.instrument)(m.value, m.attributes);
  });
  if (typeof addEventListener === 'function') addEventListener('pagehide', () => partials.releaseAll());
  return (report) => partials.take(report);
}
