// tpsmeter: measure LLM streaming tokens/s where people see text.
//
// `bench()` runs a benchmark from the page (the same load driver, parser and metrics as the
// CLI, compiled to wasm); the real-user meter for an app's own streams is the separate,
// lighter entry `tpsmeter/meter`; the generated wasm bindings are `tpsmeter/raw`.

export { bench } from './bench/run.js';
export { setPackageBase } from './package-base.js';
export type { BenchOptions, FindMaxLimits, LocalBenchOptions, Progress, RemoteBenchOptions, RunHooks, RunSettings } from './bench/options.js';
export type { BenchChatRequest, BenchEngine } from './bench/local.js';
export type { DatasetInput } from './bench/dataset.js';
export type { RenderCallback, RenderInfo, RenderTarget } from './paint.js';
export type {
  Api,
  BrowserEnvironment,
  Environment,
  OpaqueTiming,
  StampContext,
  ErrorClass,
  ErrorRecord,
  FailClass,
  FindMaxConfig,
  FindMaxStep,
  FindMaxStop,
  FindMaxVerdict,
  FinishReason,
  LevelReport,
  LoadLevel,
  PaintMetrics,
  PhasePaint,
  PhaseSummary,
  RecordExtras,
  Report,
  RequestMetrics,
  RequestRecord,
  RunConfig,
  StreamRecord,
  Summary,
  Warning,
} from './types.js';
import type { Api, RequestRecord } from './types.js';
import type { BenchOptions, RunSettings } from './bench/options.js';
import { runSettings } from './bench/options.js';
import { checkSettings } from './bench/validate.js';
import { loadWasm } from './raw.js';
export { loadWasm };
export { WasmLoadError } from './wasm-error.js';

/**
 * Checks `bench()` options without running anything, as `bench()` will (every name, value
 * and rule between options: the CLI's rules, with `bench()`'s names): resolves to
 * `undefined` when a run would start, else to the reason it would be refused. `names` maps
 * option keys to the words your users know them by (a form's labels, say): the reason then
 * names options with them. A local run is checked without its engine.
 */
export async function checkBenchOptions(options: BenchOptions | (Omit<RunSettings, 'api'> & { api: Api }), names?: Record<string, string>): Promise<string | undefined> {
  const raw = await loadWasm();
  try {
    checkSettings(raw, runSettings(options as BenchOptions, true), '', names);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message.replace(/^bench\(\): /, '') : String(e);
  }
}

/**
 * `url` without credentials (`user:pass@`, query parameters such as `key=` or `sig=`, the
 * fragment): the redactor the CLI and the reports use, for a URL your page shows or stores.
 */
export async function redactUrl(url: string): Promise<string> {
  return (await loadWasm()).redactUrl(url);
}

/** The wasm core's version (loads the module if needed). */
export async function version(): Promise<string> {
  return (await loadWasm()).version();
}

/** Validates a report against the report JSON Schema; throws naming the first violation. */
export async function validateReport(report: object): Promise<void> {
  (await loadWasm()).validateReport(report);
}

/**
 * Request records (a report's `requests`) as CSV: the columns and quoting of
 * `tpsmeter bench --csv`, a header row, `\n` line ends.
 */
export async function recordsToCsv(records: readonly RequestRecord[]): Promise<string> {
  return (await loadWasm()).recordsToCsv(records);
}

/** The CSV's columns, in order (loads the module if needed). */
export async function csvColumns(): Promise<string[]> {
  return (await loadWasm()).csvColumns();
}

/** A header and rows of cells written as `recordsToCsv` writes its CSV (quoting, line ends). */
export async function csvOfRows(header: readonly string[], rows: readonly (readonly string[])[]): Promise<string> {
  for (const [i, r] of rows.entries()) {
    if (r.length !== header.length) throw new Error(`CSV row ${i + 1} has ${r.length} cells, the header ${header.length}`);
  }
  return (await loadWasm()).csvOfRows([...header], rows.flat());
}
