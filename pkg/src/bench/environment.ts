// The report's `environment` for a browser run: what a reader needs to judge the numbers
// (timer resolution, cross-origin isolation, HTTP versions, hidden time).

import type { BrowserEnvironment, Environment } from '../types.js';
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
  /** Requests whose Resource Timing gave no phases, by why (timing.ts's reasons). */
  opaque?: ReadonlyMap<string, number>;
}

/** The browser's engine, name and version, read from a user agent string. */
export function browserIdentity(ua: string): Pick<BrowserEnvironment, 'engine' | 'browser' | 'version'> {
  const v = (re: RegExp): string | undefined => re.exec(ua)?.[1];
  let m: string | undefined;
  if ((m = v(/Firefox\/([\d.]+)/))) return { engine: 'gecko', browser: 'Firefox', version: m };
  if ((m = v(/Edg\/([\d.]+)/))) return { engine: 'blink', browser: 'Edge', version: m };
  if ((m = v(/HeadlessChrome\/([\d.]+)/))) return { engine: 'blink', browser: 'Chrome (headless)', version: m };
  if ((m = v(/Chromium\/([\d.]+)/))) return { engine: 'blink', browser: 'Chromium', version: m };
  if ((m = v(/Chrome\/([\d.]+)/))) return { engine: 'blink', browser: 'Chrome', version: m };
  if ((m = v(/AppleWebKit\/([\d.]+)/))) {
    // Safari runs on Apple's systems only: elsewhere WebKit is WebKitGTK or WPE (Epiphany,
    // MiniBrowser), whose `Version/` is no release of theirs, so the engine's build is given.
    const apple = /Macintosh|iPhone|iPad|iPod/.test(ua);
    const safari = v(/Version\/([\d.]+)/);
    if (apple && safari) return { engine: 'webkit', browser: 'Safari', version: safari };
    const epiphany = v(/Epiphany\/([\d.]+)/);
    return epiphany ? { engine: 'webkit', browser: 'Epiphany', version: epiphany } : { engine: 'webkit', browser: 'WebKit', version: m };
  }
  return { engine: 'unknown', browser: 'unknown', version: '0' };
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
  const thread = facts.stampNotes?.stamp_thread ?? '';
  const browser: BrowserEnvironment = {
    ...browserIdentity(nav?.userAgent ?? ''),
    timer_resolution_ms: Number.isFinite(resolution) ? resolution : 0,
    cross_origin_isolated: typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated,
    arrivals_stamped_in: engine ? 'engine' : thread.startsWith('main') ? 'main' : 'worker',
    opaque: [...(facts.opaque ?? new Map<string, number>())]
      .filter(([, n]) => n > 0)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([reason, requests]) => ({ reason, requests })),
  };
  return {
    os: 'browser',
    arch: 'wasm32',
    cpu_count: nav?.hardwareConcurrency ?? null,
    tool_version: facts.toolVersion,
    notes,
    browser,
  };
}
