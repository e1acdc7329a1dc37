// The report's `environment` for a browser run: what a reader needs to judge the numbers
// (timer resolution, cross-origin isolation, HTTP versions, hidden time).

import type { Environment } from '../types.js';
import type { BenchEngine } from './local.js';

/** Samples taken to find the timer's resolution. */
const TIMER_SAMPLES = 1000;

/**
 * The smallest non-zero step between consecutive `performance.now()` readings: ~0.1 ms on a
 * normal page, ~0.005 ms when cross-origin isolated (COOP + COEP).
 */
export function timerResolutionMs(): number {
  let best = Infinity;
  let prev = performance.now();
  for (let i = 0; i < TIMER_SAMPLES; i++) {
    const t = performance.now();
    if (t > prev) best = Math.min(best, t - prev);
    prev = t;
  }
  return best;
}

export interface EnvironmentFacts {
  toolVersion: string;
  hiddenMs: number;
  httpVersions: Iterable<string>;
  /** The local engine measured, when the run is `api: 'local'`. */
  engine?: BenchEngine;
  /** Where the streams were read and stamped (`StreamHost.notes`). */
  stampNotes?: Record<string, string> | undefined;
}

export function browserEnvironment(facts: EnvironmentFacts): Environment {
  const nav = typeof navigator !== 'undefined' ? navigator : undefined;
  const resolution = timerResolutionMs();
  const notes: Record<string, string> = {
    user_agent: nav?.userAgent ?? 'unknown',
    cross_origin_isolated: String(typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated),
    timer_resolution_ms: Number.isFinite(resolution) ? String(resolution) : 'unknown',
    hidden_ms: String(Math.round(facts.hiddenMs * 1000) / 1000),
    clock: 'performance.now()',
    stamp: 'each reader.read() stamped with performance.now() before any other work',
    http_versions: [...new Set(facts.httpVersions)].sort().join(',') || 'unknown',
    ...facts.stampNotes,
  };
  const engine = facts.engine;
  if (engine) {
    notes.stamp = 'each chunk stamped with performance.now() when the engine Worker\'s message reached the page';
    notes.http_versions = 'none (local engine)';
    notes.engine_model = engine.name;
    if (engine.sha256) notes.engine_model_sha256 = engine.sha256;
    if (engine.info?.backend) notes.engine_backend = engine.info.backend;
    if (engine.info?.why) notes.engine_backend_why = engine.info.why;
    if (engine.info?.threads !== undefined) notes.engine_threads = String(engine.info.threads);
    if (engine.info?.adapter) notes.engine_adapter = engine.info.adapter;
    if (engine.info?.profile) notes.engine_kernel_profile = engine.info.profile;
  }
  return {
    os: 'browser',
    arch: 'wasm32',
    cpu_count: nav?.hardwareConcurrency ?? null,
    tool_version: facts.toolVersion,
    notes,
  };
}
