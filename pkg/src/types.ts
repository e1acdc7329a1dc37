// The JSON shapes that cross the wasm boundary, as the package's users see them. The report
// is the same JSON the CLI writes with `--json`: its types are generated from the one JSON
// Schema (crates/tpsmeter-core/report.schema.json, shipped as `tpsmeter/report.schema.json`) by
// `cargo xtask pkg` into `./generated/report.ts` (by hand: `node scripts/report-types.mjs` in
// pkg/); this file names them as the package has always exported them and adds the shapes
// that exist only on the JavaScript side.

import type * as schema from './generated/report.js';
import type * as spec from './generated/spec.js';

export type {
  FindMaxConfig,
  FindMaxStep,
  FindMaxStop,
  FindMaxVerdict,
  FinishReason,
  Goodput,
  LevelReport,
  LoadLevel,
  PaintMetrics,
  PhasePaint,
  PhaseSummary,
  PromptSource,
  RequestMetrics,
  RunConfig,
  ShardInfo,
  Slo,
  Summary,
  TokenCountSource,
  ToolInfo,
} from './generated/report.js';

/** A streaming API wire format (the CLI's `--api` names; `local`: the engine of `tpsmeter/engine`). */
export type Api = schema.Api;

/** The report's error classes (`record.error.class`). */
export type ErrorClass = schema.ErrorClass;

/** The classes JavaScript reports through `Exchange.fail` (the rest come from the parser). */
export type FailClass = Extract<
  ErrorClass,
  'timeout_first_byte' | 'stall' | 'connect' | 'connect_refused' | 'dns' | 'cors' | 'redirect' | 'cancelled' | 'other'
>;

/** Why a request failed (`record.error`). */
export type ErrorRecord = schema.ErrorRecord;

/** One request of a run (times in ms on the run's `performance.now()` clock). */
export type RequestRecord = schema.RequestRecord;

/** What a request's record holds about its stream (a `RequestRecord` less its place in a run). */
export type StreamRecord = Omit<RequestRecord, 'id' | 'level'>;

/** A finding about the run that the numbers alone would hide. */
export type Warning = schema.Warning;

/** A whole run: the CLI's report schema. */
export type Report = schema.Report;

/** Where the run ran (`report.environment`). */
export type Environment = schema.Environment;

/** What the browser a run was measured in could measure (`report.environment.browser`). */
export type BrowserEnvironment = schema.BrowserEnvironment;

/** Where chunk arrivals were stamped (`BrowserEnvironment.arrivals_stamped_in`). */
export type StampContext = schema.StampContext;

/** Requests whose Resource Timing gave no phases, and why (`BrowserEnvironment.opaque`). */
export type OpaqueTiming = schema.OpaqueTiming;

/** What the load driver asks for next (`BenchRun.next`): the core's `Action`, generated. */
export type Action = spec.Action;

/** Browser facts about one request, passed to `BenchRun.complete`: the core's `RecordExtras`, generated. */
export type RecordExtras = spec.RecordExtras;
