// A find-max run's verdict on the page (`report.find_max`, the CLI's "Find max" line): the
// highest load that met the SLO, the knee and why the search stopped. The curve itself is
// the level table and the load chart, in order of load, each level marked met or missed.

import type { LevelReport, Report } from 'tpsmeter';
import { el } from '../common/dom';
import { levelLabel } from '../common/files';
import { num } from '../common/format';
import { short } from '../common/limits';

type Verdict = NonNullable<Report['find_max']>;

/** Why the search stopped, in words (the report's `stop`). */
const STOPS: Record<string, string> = {
  slo_broken: 'the SLO broke one step above',
  goodput_flat: 'goodput stopped rising',
  max_load: 'the highest load allowed met the SLO',
  max_levels: 'the search ran out of levels',
  errors: 'most requests of a level failed',
  never_met: 'the first load already missed the SLO',
  cancelled: 'the run was stopped',
};

/** The verdict box, or undefined for a run that did not search. */
export function findMaxView(report: Report): HTMLElement | undefined {
  const v = report.find_max;
  if (!v) return undefined;
  const max = v.max_load ? levelLabel(v.max_load) : 'none';
  const box = el(
    'div',
    { class: 'notice', role: 'note', id: 'find-max', 'data-stop': short(v.stop), 'data-max-load': max },
    el('strong', { text: `Highest load within the SLO: ${max}` }),
    v.max_load_goodput_per_s != null ? ` (${num(v.max_load_goodput_per_s)} requests/s met it)` : '',
    ` · stopped: ${STOPS[v.stop] ?? short(v.stop)}.`,
    el('p', { class: 'hint', text: short(v.message, 1000) }),
  );
  if (v.knee) box.append(el('p', { class: 'hint', text: `Knee: ${levelLabel(v.knee)}, the lowest load whose goodput came within the gain threshold of the best.` }));
  return box;
}

/** Whether the search found `level` within the SLO (undefined: not judged, or no search). */
export function passedAt(verdict: Verdict | null | undefined, level: LevelReport['level']): boolean | undefined {
  const label = levelLabel(level);
  return verdict?.steps?.find((s) => levelLabel(s.level) === label)?.passed;
}

/** The levels in order of load: a search runs them out of order (doubling, then bisecting). */
export function byLoad(levels: LevelReport[]): LevelReport[] {
  const load = (l: LevelReport): number => {
    const spec = l.level as { concurrency?: number; rate?: number };
    return spec.concurrency ?? spec.rate ?? 0;
  };
  return [...levels].sort((a, b) => load(a) - load(b));
}
