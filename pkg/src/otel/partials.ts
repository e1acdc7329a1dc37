// Which reports to record. A partial report (the tab went hidden mid-stream) is a cut view
// of a stream whose final report usually follows, and aggregated metrics cannot drop a value
// once recorded: so a partial one is held, replaced by its stream's final report, and
// recorded (as `tpsmeter.report.partial` "true") only when the page is being unloaded
// (`pagehide`) with it still held: then no final report will come.

import type { MeterReport } from '../meter/types.js';

/** The most partial reports held at once; the oldest is recorded when one more arrives. */
export const MAX_HELD = 64;

export class Partials {
  private readonly held = new Map<string, MeterReport>();

  /** `record` gets every report to be recorded, now or at unload. */
  constructor(private readonly record: (report: MeterReport) => void) {}

  take(report: MeterReport): void {
    if (report.partial) {
      this.held.delete(report.stream_id);
      this.held.set(report.stream_id, report);
      if (this.held.size > MAX_HELD) {
        const [oldest] = this.held.keys();
        if (oldest !== undefined) this.release(oldest);
      }
      return;
    }
    this.held.delete(report.stream_id);
    this.record(report);
  }

  /** Records every held partial report (the page is going away). */
  releaseAll(): void {
    for (const id of [...this.held.keys()]) this.release(id);
  }

  private release(id: string): void {
    const report = this.held.get(id);
    this.held.delete(id);
    if (report) this.record(report);
  }
}
