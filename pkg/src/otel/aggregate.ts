// Delta aggregation of measurements per (instrument, attribute set), and its OTLP/JSON form
// (`ExportMetricsServiceRequest`, protobuf's JSON mapping: 64-bit integers as decimal
// strings, enums as numbers, lowerCamelCase fields).

import type { Instrument, Measurement } from './instruments.js';
import { MAX_SERIES } from './limits.js';

interface Series {
  instrument: Instrument;
  attributes: Record<string, string>;
  count: number;
  sum: number;
  min: number;
  max: number;
  /** One more than the boundaries: the last is above the last boundary. */
  buckets: number[];
}

/** OTLP's AggregationTemporality: a point covers [startTimeUnixNano, timeUnixNano) alone. */
const DELTA = 1;

export class Window {
  private series = new Map<string, Series>();
  /** Epoch ms at which this window began. */
  startMs: number;
  /** Measurements refused because the window held MAX_SERIES series already. */
  dropped = 0;

  constructor(nowMs: number) {
    this.startMs = nowMs;
  }

  get size(): number {
    return this.series.size;
  }

  add(m: Measurement): void {
    if (!Number.isFinite(m.value)) return;
    const keys = Object.keys(m.attributes).sort();
    const key = `${m.instrument.name}\u0000${keys.map((k) => `${k}\u0001${m.attributes[k]}`).join('\u0000')}`;
    let s = this.series.get(key);
    if (!s) {
      if (this.series.size >= MAX_SERIES) {
        this.dropped++;
        return;
      }
      const attributes = Object.fromEntries(keys.map((k) => [k, m.attributes[k] ?? '']));
      s = { instrument: m.instrument, attributes, count: 0, sum: 0, min: Infinity, max: -Infinity, buckets: new Array((m.instrument.buckets?.length ?? 0) + 1).fill(0) };
      this.series.set(key, s);
    }
    s.count++;
    s.sum += m.value;
    s.min = Math.min(s.min, m.value);
    s.max = Math.max(s.max, m.value);
    const bounds = m.instrument.buckets ?? [];
    // OTLP: bucket i counts values in (bounds[i-1], bounds[i]]; the last one above them all.
    let i = 0;
    while (i < bounds.length && m.value > (bounds[i] ?? Infinity)) i++;
    s.buckets[i] = (s.buckets[i] ?? 0) + 1;
  }

  /**
   * The window's series as OTLP metrics, in groups whose JSON stays under `maxBytes` each
   * (a keepalive request's budget), ending the window at `endMs`.
   */
  toRequests(endMs: number, resource: Record<string, AttributeValue>, maxBytes: number): string[] {
    const start = nanos(this.startMs);
    const end = nanos(endMs);
    // Sizes are summed per point (and per metric's header) rather than by encoding each
    // candidate batch: one pass, however many series.
    const overhead = byteLength(JSON.stringify(request([], resource)));
    const bodies: string[] = [];
    let batch: { s: Series; point: object }[] = [];
    let names = new Set<string>();
    let bytes = overhead;
    for (const s of this.series.values()) {
      const p = { s, point: point(s, start, end) };
      const pointBytes = byteLength(JSON.stringify(p.point)) + 1;
      const header = (): number => (names.has(s.instrument.name) ? 0 : METRIC_HEADER + byteLength(s.instrument.name + s.instrument.description));
      if (batch.length > 0 && bytes + pointBytes + header() > maxBytes) {
        bodies.push(JSON.stringify(request(batch, resource)));
        batch = [];
        names = new Set();
        bytes = overhead;
      }
      bytes += pointBytes + header();
      batch.push(p);
      names.add(s.instrument.name);
    }
    if (batch.length > 0) bodies.push(JSON.stringify(request(batch, resource)));
    return bodies;
  }
}

/** A metric's JSON around its name, description and points (keys, unit, temporality). */
const METRIC_HEADER = 160;

const encoder = new TextEncoder();

/** A string's UTF-8 length: what a request body costs. */
export const byteLength = (s: string): number => encoder.encode(s).length;

/** Epoch milliseconds as OTLP's fixed64 nanoseconds (a decimal string). */
export function nanos(ms: number): string {
  const whole = Math.floor(ms);
  const frac = Math.round((ms - whole) * 1e6);
  return (BigInt(whole) * 1_000_000n + BigInt(frac)).toString();
}

/** A resource attribute's value: the `browser.*` ones are strings, a boolean and a list. */
export type AttributeValue = string | boolean | string[];

const anyValue = (v: AttributeValue): object =>
  typeof v === 'boolean' ? { boolValue: v } : Array.isArray(v) ? { arrayValue: { values: v.map((s) => ({ stringValue: s })) } } : { stringValue: v };

const attributeList = (attrs: Record<string, AttributeValue>): { key: string; value: object }[] =>
  Object.entries(attrs).map(([key, v]) => ({ key, value: anyValue(v) }));

function point(s: Series, start: string, end: string): object {
  const common = { attributes: attributeList(s.attributes), startTimeUnixNano: start, timeUnixNano: end };
  if (s.instrument.kind === 'counter') return { ...common, asInt: String(Math.round(s.sum)) };
  return {
    ...common,
    count: String(s.count),
    sum: s.sum,
    bucketCounts: s.buckets.map(String),
    explicitBounds: [...(s.instrument.buckets ?? [])],
    min: s.min,
    max: s.max,
  };
}

function request(batch: { s: Series; point: object }[], resource: Record<string, AttributeValue>): object {
  const byName = new Map<string, { instrument: Instrument; points: object[] }>();
  for (const { s, point } of batch) {
    const entry = byName.get(s.instrument.name) ?? { instrument: s.instrument, points: [] };
    entry.points.push(point);
    byName.set(s.instrument.name, entry);
  }
  const metrics = [...byName.values()].map(({ instrument: i, points }) => ({
    name: i.name,
    description: i.description,
    unit: i.unit,
    ...(i.kind === 'counter'
      ? { sum: { dataPoints: points, aggregationTemporality: DELTA, isMonotonic: true } }
      : { histogram: { dataPoints: points, aggregationTemporality: DELTA } }),
  }));
  return {
    resourceMetrics: [
      {
        resource: { attributes: attributeList(resource) },
        scopeMetrics: [{ scope: { name: 'tpsmeter', version: SCOPE_VERSION }, metrics }],
      },
    ],
  };
}

/** The instrumentation scope's version: the package's. */
export const SCOPE_VERSION = '0.1.0';
